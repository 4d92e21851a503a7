"""The n-gram rival of a masked LM (lmcourse.models.fill_in_ngram): it reads both sides,
as far as its order reaches, and its order is chosen on development masks."""

from __future__ import annotations

import random

import pytest
import torch

from lmcourse.models.fill_in_ngram import FillIn, tune_fill_in

PAD, SEP, MASK = 0, 1, 2
SPECIALS = (PAD, SEP, MASK)
P_WORDS, S_WORDS, X_WORDS, Q, R = (3, 4, 5), (6, 7, 8), (9, 10, 11), 12, 13
VOCAB = 14


def _sentences(n: int, seed: int) -> list[list[int]]:
    """``p q X r s``: the hidden X is fixed by s, two places to its right (X = s); p, two
    places to its left, is random, and q and r, right beside it, say nothing. Only a model
    that reads two tokens on the right can fill it in."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        p, s = rng.randrange(3), rng.randrange(3)
        out.append([P_WORDS[p], Q, X_WORDS[s], R, S_WORDS[s]])
    return out


def _masked(sentences: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Each sentence as a row ``... [SEP]`` with its X masked, plus a padded tail."""
    rows = torch.tensor([[*s, SEP, PAD] for s in sentences])
    labels = torch.full_like(rows, -100)
    labels[:, 2] = rows[:, 2]
    inputs = rows.clone()
    inputs[:, 2] = MASK
    return inputs, labels


def _model(order: int) -> FillIn:
    return FillIn(order, 0.75, VOCAB, SPECIALS, SEP, PAD).fit(_sentences(600, 0))


def test_order_3_reads_two_tokens_each_side_and_order_2_only_one():
    test = _masked(_sentences(90, 1))
    assert _model(3).accuracy(*test) == 1.0
    assert _model(2).accuracy(*test) < 0.6  # q and r alone: a guess among three


def test_a_masked_neighbour_is_not_read():
    inputs, labels = _masked(_sentences(90, 1))
    inputs[:, 4] = MASK  # hide s too: X is no longer decidable
    labels[:, 4] = inputs.new_tensor([S_WORDS[0]] * len(inputs))
    only_x = labels.clone()
    only_x[:, 4] = -100
    assert _model(3).accuracy(inputs, only_x) < 0.6


def test_specials_are_never_guessed():
    model = _model(3)
    inputs, _ = _masked(_sentences(5, 2))
    for row in inputs.tolist():
        assert model.guess(row, 2, [j == 2 for j in range(len(row))]) in X_WORDS


def test_the_order_is_chosen_on_development_masks():
    model, tried = tune_fill_in(_sentences(600, 0), _masked(_sentences(60, 3)),
                                vocab_size=VOCAB, special_ids=SPECIALS, sep_id=SEP,
                                pad_id=PAD, orders=(2, 3), discounts=(0.75,), max_order=3)
    assert [(o, d) for o, d, _ in tried] == [(2, 0.75), (3, 0.75)]
    assert model.order == 3 and tried[1][2] == 1.0 > tried[0][2]


def test_the_grid_grows_while_its_best_order_is_its_largest():
    """Order 2 cannot see X's clue, order 3 can: from a grid of order 2 alone the search
    grows to 3 (a new best), then to 4 (no better), and stops one past its best."""
    model, tried = tune_fill_in(_sentences(600, 0), _masked(_sentences(60, 3)),
                                vocab_size=VOCAB, special_ids=SPECIALS, sep_id=SEP,
                                pad_id=PAD, orders=(2,), discounts=(0.75,), max_order=6)
    assert [o for o, _, _ in tried] == [2, 3, 4]
    assert model.order == 3


def test_an_unfitted_model_says_so():
    with pytest.raises(AttributeError):
        FillIn(3, 0.75, VOCAB, SPECIALS, SEP, PAD).guess([3, 12, 2, 13, 6], 2,
                                                        [False, False, True, False, False])


def test_the_fill_in_baselines_name_says_which_settings_were_chosen():
    from lmcourse.course.reference.bench_arms import fill_in_label
    from lmcourse.models.fill_in_ngram import DISCOUNTS

    for index, discount in enumerate(DISCOUNTS):
        label = fill_in_label({"fill_in_ngram_order": 4, "fill_in_ngram_discount": index})
        setting = "modified Kneser-Ney" if discount == "modified" else f"D = {discount:g}"
        assert label == f"tuned fill-in n-gram (order 4, {setting})"


def test_settings_scored_in_processes_do_not_hang_after_the_parent_used_its_threads():
    """Forked workers once waited for ever in their first parallel torch op when the parent
    had run multi-threaded torch before (a tiny BERT's baselines hung `make reference`); the
    same search, in a fresh interpreter, must finish and agree with one process."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(f"""
        import torch
        from tests.test_fill_in_ngram import _masked, _sentences
        from lmcourse.models.fill_in_ngram import tune_fill_in
        torch.set_num_threads(2)
        a = torch.randn(1500, 1500)
        (a @ a).sum()  # the parent's thread pool has run
        ids, labels = _masked(_sentences(60, 3))
        ids, labels = ids.repeat(400, 1), labels.repeat(400, 1)  # past one thread's grain
        labels[60:] = -100  # the first copy is scored
        args = dict(vocab_size={VOCAB}, special_ids={SPECIALS}, sep_id={SEP}, pad_id={PAD},
                    orders=(2, 3), discounts=(0.75,))
        one = tune_fill_in(_sentences(600, 0), (ids, labels), **args)[1]
        two = tune_fill_in(_sentences(600, 0), (ids, labels), workers=2, **args)[1]
        assert one == two, (one, two)
    """)
    done = subprocess.run([sys.executable, "-c", script], timeout=120, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr[-2000:]
