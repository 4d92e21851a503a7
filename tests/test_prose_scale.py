"""Our BERT at a GPU's size (``prose_scale``): weights stored in int8, tied tensors stored
once, the development-loss and clock stops, and the fill-in n-gram tuned in parallel."""

from __future__ import annotations

import random
import time

import pytest
import torch

from lmcourse.course.reference import prose_scale
from lmcourse.course.reference.result import INT8_SCALE, pack_weights, unpack_weights
from lmcourse.models.bert import BertConfig
from lmcourse.models.fill_in_ngram import tune_fill_in
from lmcourse.models.pretraining import BertForPreTraining


def test_int8_storage_halves_the_file_and_keeps_each_row_within_half_a_step():
    torch.manual_seed(0)
    state = {"w": torch.randn(64, 128) * torch.linspace(0.01, 3, 64)[:, None],
             "b": torch.randn(128)}
    packed = pack_weights(state, "int8")
    assert packed["w"].dtype == torch.int8 and packed["b"].dtype == torch.float16
    back = unpack_weights(packed)
    assert set(back) == {"w", "b"}
    step = state["w"].abs().amax(1) / 127  # each row's own step
    assert ((back["w"] - state["w"]).abs().amax(1) <= step / 2 + 1e-6).all()
    # a row of small weights is not rounded to zero by a large row elsewhere
    assert back["w"][0].abs().sum() > 0
    assert unpack_weights(pack_weights(state))["w"].dtype == torch.float32
    with pytest.raises(ValueError, match="'float16' or 'int8'"):
        pack_weights(state, "int4")
    assert f"w{INT8_SCALE}" in packed


def test_tied_embeddings_are_stored_once_and_restored():
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=32, max_position_embeddings=16)
    torch.manual_seed(0)
    model = BertForPreTraining(config)
    state = prose_scale._state(model)
    assert len(state) == len(model.state_dict()) - 1
    torch.manual_seed(1)
    other = BertForPreTraining(config)
    prose_scale._load_state(other, state)
    ids = torch.tensor([[1, 5, 6, 7, 2]])
    assert torch.equal(model.eval()(ids)[0], other.eval()(ids)[0])


def test_the_lease_clock_stops_a_run_and_the_record_says_where(monkeypatch):
    monkeypatch.setenv(prose_scale.DEADLINE, str(time.time() - 1))
    small = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                 intermediate_size=64, steps=50, eval_every=25, batch=4)
    run = prose_scale.train_scaled("prose-scale-mlm", {**prose_scale.RECIPES[
        "prose-scale-mlm"], **small}, seed=0, device=torch.device("cpu"), progress=False)
    assert run.metrics["stopped_by"] == "the lease's clock at step 1"
    assert run.metrics["steps_trained"] == len(run.train_loss) == 1


def test_the_fill_in_ngram_tuned_in_two_processes_is_the_same():
    rng = random.Random(0)
    sentences = [[rng.randrange(4, 30) for _ in range(rng.randrange(3, 12))]
                 for _ in range(300)]
    ids, labels = torch.randint(4, 30, (40, 12)), torch.full((40, 12), -100)
    for row in range(40):
        i = rng.randrange(12)
        labels[row, i], ids[row, i] = ids[row, i], 3
    kw = dict(vocab_size=30, special_ids=[0, 1, 2, 3], sep_id=1, pad_id=0, orders=(2, 3))
    one, tried_one = tune_fill_in(sentences, (ids, labels), **kw)
    two, tried_two = tune_fill_in(sentences, (ids, labels), workers=2, **kw)
    assert tried_one == tried_two and (one.order, one.discount) == (two.order, two.discount)
