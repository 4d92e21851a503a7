"""``lmcourse.train``: the transformer learning-rate schedule and what ``fit_lm`` records."""

import math

import pytest
import torch

from lmcourse.models.transformer import TransformerLM
from lmcourse.train import fit_lm, transformer_lr


def test_transformer_lr_is_the_papers_formula():
    d, warm = 512, 4000
    for step in (1, 10, 3999, 4000, 4001, 100_000):
        want = d ** -0.5 * min(step ** -0.5, step * warm ** -1.5)
        assert transformer_lr(step, d, warm) == pytest.approx(want, rel=1e-12)
    # linear rise, peak at the warm-up step, then 1/sqrt(step)
    lrs = [transformer_lr(s, d, warm) for s in range(1, 20_001)]
    assert max(range(len(lrs)), key=lrs.__getitem__) + 1 == warm
    assert lrs[warm - 1] == pytest.approx(1 / math.sqrt(d * warm))
    assert transformer_lr(200, d, warm) == pytest.approx(2 * transformer_lr(100, d, warm))
    assert transformer_lr(16_000, d, warm) == pytest.approx(transformer_lr(4000, d, warm) / 2)
    assert transformer_lr(50, 64, 10, factor=3.0) == pytest.approx(3 * transformer_lr(50, 64, 10))
    with pytest.raises(ValueError, match="count from 1"):
        transformer_lr(0, d, warm)


def _batches(epoch):
    g = torch.Generator().manual_seed(epoch)
    x = torch.randint(0, 5, (4, 9), generator=g)
    return [(x[:, :-1], x[:, 1:])] * 3


def test_fit_lm_follows_the_schedule_and_records_steps_time_and_tokens():
    torch.manual_seed(0)
    model = TransformerLM(5, 8, 2, 1, 16, max_len=8)
    seen = []

    def schedule(step):
        seen.append(step)
        return 1e-3 * step

    hist = fit_lm(model, _batches, epochs=2, lr=123.0, carry_state=False, progress=False,
                  val_batches=_batches(99), lr_schedule=schedule)
    assert seen == [1, 2, 3, 4, 5, 6]
    assert hist.val_steps == [3, 6]
    assert len(hist.val_seconds) == 2 and 0 < hist.val_seconds[0] < hist.val_seconds[1]
    assert hist.val_seconds[1] == hist.train_seconds <= hist.seconds
    assert hist.tokens == 6 * 4 * 8
    assert hist.tokens_per_second == pytest.approx(hist.tokens / hist.train_seconds)
    assert all(math.isfinite(p) for p in hist.val_perplexity)


def test_fit_lm_without_schedule_keeps_the_constant_lr():
    torch.manual_seed(0)
    model = TransformerLM(5, 8, 2, 1, 16, max_len=8)
    before = [p.detach().clone() for p in model.parameters()]
    fit_lm(model, _batches, epochs=1, lr=0.0, carry_state=False, progress=False)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
