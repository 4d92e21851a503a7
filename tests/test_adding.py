"""The adding problem of chapter 03 (``lmcourse.models.adding``)."""

import pytest
import torch

from lmcourse.models.adding import (
    TRIVIAL_MSE,
    SequenceRegressor,
    adding_batch,
    train_adding,
)


@pytest.mark.parametrize("length", [2, 7, 30])
def test_two_markers_one_in_each_half_and_the_target_is_their_sum(length):
    x, y = adding_batch(500, length, torch.Generator().manual_seed(0))
    assert x.shape == (500, length, 2) and y.shape == (500,)
    values, markers = x[..., 0], x[..., 1]
    assert ((values >= 0) & (values <= 1)).all()
    assert (markers.sum(1) == 2).all()
    half = length // 2
    assert (markers[:, :half].sum(1) == 1).all() and (markers[:, half:].sum(1) == 1).all()
    torch.testing.assert_close(y, (values * markers).sum(1))


def test_trivial_baseline_is_the_variance_of_the_target():
    _, y = adding_batch(200_000, 10, torch.Generator().manual_seed(1))
    assert abs(float(y.mean()) - 1.0) < 0.01
    assert abs(float(((y - 1) ** 2).mean()) - TRIVIAL_MSE) < 0.005


def test_bad_arguments_say_what_to_do():
    with pytest.raises(ValueError, match="length >= 2"):
        adding_batch(4, 1)
    with pytest.raises(ValueError, match="cell must be one of"):
        SequenceRegressor("transformer")
    with pytest.raises(ValueError, match="only applies to an LSTM"):
        SequenceRegressor("gru", forget_bias=1.0)


def test_forget_bias_moves_only_the_forget_block():
    torch.manual_seed(0)
    plain = SequenceRegressor("lstm", 8)
    torch.manual_seed(0)
    biased = SequenceRegressor("lstm", 8, forget_bias=1.0)
    diff = biased.rnn.bias_ih_l0 - plain.rnn.bias_ih_l0
    torch.testing.assert_close(diff[8:16], torch.ones(8))
    assert (diff[:8] == 0).all() and (diff[16:] == 0).all()
    torch.testing.assert_close(biased.rnn.bias_hh_l0, plain.rnn.bias_hh_l0)


def test_a_gru_learns_a_short_lag_and_an_untrained_model_does_not():
    torch.set_num_threads(1)
    trained = train_adding("gru", 4, 150, seed=0)
    untrained = train_adding("gru", 4, 0, seed=0)
    assert trained.mse < TRIVIAL_MSE / 10 < untrained.mse
    assert abs(trained.trivial_mse - TRIVIAL_MSE) < 0.02
    assert trained.examples_per_second > 0
