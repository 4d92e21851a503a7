"""Lab 09 checks: each accepts the right answer and names the usual mistakes, from the
module's behaviour alone (no check reads the student's source)."""

from __future__ import annotations

import math
from itertools import combinations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from lmcourse.checks import CheckFailed
from lmcourse.checks import gpt_block as check
from lmcourse.models.recall import IGNORE


def fails_with(fn, *args, hint: str) -> str:
    with pytest.raises(CheckFailed) as info:
        fn(*args)
    assert hint in str(info.value), str(info.value)
    return str(info.value)


# ---- the lab's solution (labs/solutions/09_gpt_block.py), with switchable mistakes -------

def make_attention(mistake: str | None = None, keep: str = "detached"):
    class CausalSelfAttention(nn.Module):
        def __init__(self, d_model, num_heads):
            super().__init__()
            self.num_heads = num_heads
            self.qkv = nn.Linear(d_model, 3 * d_model)
            self.out = nn.Linear(d_model, d_model)
            self.weights = None

        def forward(self, x):
            B, T, E = x.shape
            H = self.num_heads
            D = E // H
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            if mistake == "split without transpose":  # a plain reshape mixes positions
                q, k, v = (t.reshape(B, H, T, D) for t in (q, k, v))
            else:
                q, k, v = (t.view(B, T, H, D).transpose(1, 2) for t in (q, k, v))
            scores = q @ k.transpose(-2, -1)
            scale = {"no scale": 1.0, "scale by d": D,
                     "scale by model width": math.sqrt(E)}.get(mistake, math.sqrt(D))
            scores = scores / scale
            allowed = torch.ones(T, T, dtype=torch.bool).tril()
            if mistake == "mask polarity":
                allowed = allowed.T
            if mistake not in ("no mask", "mask after softmax"):
                scores = scores.masked_fill(~allowed, float("-inf"))
            weights = scores.softmax(-1)
            if mistake == "mask after softmax":
                weights = weights * allowed
            if keep == "detached":
                self.weights = weights.detach()
            elif keep == "attached":
                self.weights = weights
            heads = weights @ v
            return self.out(heads.transpose(1, 2).reshape(B, T, E))
    return CausalSelfAttention


CausalSelfAttention = make_attention()


def make_block(mistake: str | None = None, attention: type | None = None):
    class Block(nn.Module):
        def __init__(self, d_model, num_heads):
            super().__init__()
            self.norm1 = nn.LayerNorm(d_model)
            self.attn = (attention or CausalSelfAttention)(d_model, num_heads)
            self.norm2 = nn.LayerNorm(d_model)
            self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(),
                                     nn.Linear(4 * d_model, d_model))

        def forward(self, x):
            if mistake == "post-norm":
                x = self.norm1(x + self.attn(x))
                return self.norm2(x + self.mlp(x))
            if mistake == "no residuals":
                return self.mlp(self.norm2(self.attn(self.norm1(x))))
            if mistake == "residual from the normalised input":
                x = self.norm1(x)
                x = x + self.attn(x)
                x = self.norm2(x)
                return x + self.mlp(x)
            x = x + self.attn(self.norm1(x))
            return x + self.mlp(self.norm2(x))
    return Block


Block = make_block()


def make_gpt(mistake: str | None = None, returns: str = "logits", block: type | None = None):
    class TinyGPT(nn.Module):
        def __init__(self, vocab_size, d_model, num_heads, num_layers, max_len):
            super().__init__()
            self.tokens = nn.Embedding(vocab_size, d_model)
            self.positions = nn.Embedding(max_len, d_model)
            self.blocks = nn.ModuleList((block or Block)(d_model, num_heads)
                                        for _ in range(num_layers))
            self.norm = nn.LayerNorm(d_model)
            self.head = nn.Linear(d_model, vocab_size)

        def forward(self, ids):
            h = self.tokens(ids)
            if mistake != "no positions":
                h = h + self.positions(torch.arange(ids.shape[1]))
            for block in self.blocks:
                h = block(h)
            logits = self.head(h if mistake == "no final norm" else self.norm(h))
            return (logits, None) if returns == "tuple" else logits
    return TinyGPT


TinyGPT = make_gpt()


def recall_loss(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                           ignore_index=IGNORE)


# ---- exercise 1 -------------------------------------------------------------------------

def test_causal_self_attention_passes_the_solution(capsys):
    check.causal_self_attention(CausalSelfAttention)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize("mistake, hint", [
    ("no mask", "sees the future"),
    ("no scale", "1/√d scale is missing"),
    ("scale by d", "divide by √d"),
    ("scale by model width", "you scaled by √E, the model's width"),
    ("mask after softmax", "after the softmax"),
    ("mask polarity", "wrong way round"),
    ("split without transpose", "split by reshaping B x T x E straight to"),
])
def test_causal_self_attention_names_the_mistake(mistake, hint):
    message = fails_with(check.causal_self_attention, make_attention(mistake), hint=hint)
    assert "masked_fill" not in message and "softmax(" not in message  # no code given away


def test_a_scores_scaled_by_the_model_width_are_named_as_such():
    """Issue: with E = 16 and 4 heads, d = 4 = √E, so dividing by √E was reported as "you
    divided the scores by d". The check's sizes keep the two apart."""
    message = fails_with(check.causal_self_attention, make_attention("scale by model width"),
                         hint="√E, the model's width")
    assert "you divided the scores by d" not in message
    assert check._E / check._HEADS != math.sqrt(check._E)


def _all_differ(outputs: dict[str | None, torch.Tensor]) -> list[tuple]:
    """The pairs of named variants (None: the right answer) whose outputs coincide."""
    return [(a, b) for a, b in combinations(outputs, 2)
            if check.same(outputs[a], outputs[b], check._TOL)]


def test_no_two_named_attention_mistakes_give_the_same_output_at_the_checks_sizes():
    attn = check._seeded(CausalSelfAttention(check._E, check._HEADS), seed=0)
    x = torch.randn(check._B, check._T, check._E, generator=torch.Generator().manual_seed(1),
                    dtype=torch.float64)
    with torch.no_grad():
        outputs = {m: check.attention_variant(attn, x, m)[0]
                   for m in [None, *check._ATTENTION_HINTS]}
    assert _all_differ(outputs) == []


def test_no_two_named_block_or_model_mistakes_give_the_same_output():
    blk = check._seeded(Block(check._E, check._HEADS), seed=2)
    x = torch.randn(check._B, check._T, check._E, generator=torch.Generator().manual_seed(3),
                    dtype=torch.float64)
    model = check._seeded(TinyGPT(check._VOCAB, check._E, check._HEADS, check._LAYERS,
                                  check._MAX_LEN), seed=4)
    ids = torch.randint(0, check._VOCAB, (check._B, 9), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        blocks = {m: check.block_variant(blk, x, m) for m in [None, *check._BLOCK_HINTS]}
        models = {m: check.gpt_variant(model, ids, m) for m in [None, *check._GPT_HINTS]}
    assert _all_differ(blocks) == []
    assert _all_differ(models) == []


def test_causal_self_attention_wants_the_weights_kept_and_detached():
    fails_with(check.causal_self_attention, make_attention(keep="none"),
               hint="store them in self.weights")
    fails_with(check.causal_self_attention, make_attention(keep="attached"),
               hint="detached")


def test_a_future_leak_the_variants_do_not_know_is_still_caught():
    class Leaky(CausalSelfAttention):
        def forward(self, x):
            out = super().forward(x)
            return out + x[:, -1:].mean() * 0.1  # every position reads the last token

    fails_with(check.causal_self_attention, Leaky, hint="sees the future")


def test_an_unwritten_forward_names_it():
    class Stub(CausalSelfAttention):
        def forward(self, x):
            raise NotImplementedError("replace this line with your code")

    fails_with(check.causal_self_attention, Stub, hint="not implemented yet")


# ---- exercise 2 -------------------------------------------------------------------------

def test_block_passes_the_solution(capsys):
    check.block(Block)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize("mistake, hint", [
    ("post-norm", "post-norm"),
    ("no residuals", "no residual connections"),
    ("residual from the normalised input", "normalised x"),
])
def test_block_names_the_mistake(mistake, hint):
    fails_with(check.block, make_block(mistake), hint=hint)


def test_block_and_model_send_a_broken_layer_back_to_its_exercise():
    """The block check runs the block's own attention, so a wrong attention is exercise 1's
    fault, not the block's; a wrong block is exercise 2's for the model."""
    broken = make_attention("no scale")
    message = fails_with(check.block, make_block(attention=broken), hint="pass exercise 1 first")
    assert "1/√d scale is missing" in message
    fails_with(check.tiny_gpt, make_gpt(block=make_block("post-norm")),
               hint="pass exercise 2 first")
    fails_with(check.tiny_gpt, make_gpt(block=make_block(attention=broken)),
               hint="pass exercise 1 first")


# ---- exercise 3 -------------------------------------------------------------------------

def test_tiny_gpt_passes_the_solution(capsys):
    check.tiny_gpt(TinyGPT)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize("mistake, returns, hint", [
    ("no positions", "logits", "no position embeddings"),
    ("no final norm", "logits", "final LayerNorm"),
    (None, "tuple", "not a tuple"),
])
def test_tiny_gpt_names_the_mistake(mistake, returns, hint):
    fails_with(check.tiny_gpt, make_gpt(mistake, returns), hint=hint)


def test_the_lab_gpt_has_the_size_of_the_course_recall_transformer():
    """The lab's GPT and the course's TransformerLM of chapter 7c have the same parameter
    count, so the comparison with the LSTM is the chapter's."""
    from lmcourse.models.recall import recall_model

    ours = TinyGPT(128, max_len=96, **check.GPT_SIZE)
    course = recall_model("transformer", 64, 128, 96, 2)
    assert sum(p.numel() for p in ours.parameters()) == sum(
        p.numel() for p in course.parameters())


# ---- exercise 4 -------------------------------------------------------------------------

def test_recall_loss_passes_the_solution(capsys):
    check.recall_loss(recall_loss)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda lo, t: -lo.log_softmax(-1).gather(-1, t[..., None]).mean(), "ignore_index"),
    (lambda lo, t: F.cross_entropy(lo[:, :-1].reshape(-1, lo.shape[-1]), t[:, 1:].reshape(-1),
                                   ignore_index=IGNORE), "shifted"),
    (lambda lo, t: F.cross_entropy(lo.reshape(-1, lo.shape[-1]), t.reshape(-1).clamp(min=0)),
     "class 0"),
    (lambda lo, t: F.cross_entropy(lo.reshape(-1, lo.shape[-1]), t.reshape(-1),
                                   ignore_index=IGNORE, reduction="sum"), "summed"),
    (lambda lo, t: torch.tensor(recall_loss(lo, t).item()), "cut off from the graph"),
])
def test_recall_loss_names_the_mistake(wrong, hint):
    fails_with(check.recall_loss, wrong, hint=hint)


# ---- exercise 5 -------------------------------------------------------------------------

@pytest.mark.slow
def test_the_solution_beats_the_lstm_and_a_positionless_gpt_does_not(capsys):
    runs = check.beats_lstm(TinyGPT, recall_loss, pairs=4, steps=400, progress=False)
    assert runs["gpt"].accuracy >= 0.9 > runs["lstm"].accuracy
    assert "passed" in capsys.readouterr().out
    message = fails_with(check.beats_lstm, make_gpt("no positions"), recall_loss, 4, 100,
                         hint="pass exercise 3 first")
    assert "no position embeddings" in message


def test_a_figure_outside_the_reference_spread_says_how_far():
    reference = {"transformer": [1.0, 0.998, 0.999], "lstm": [0.16, 0.15, 0.17]}
    note = check.reference_note(0.93, reference)
    assert "below the reference interval" in note and "3 seeds" in note
    assert "0.06" in note  # 0.93 lies about 0.066 below the interval's low end
    assert "below" not in check.reference_note(0.999, reference)
    assert "below" not in check.reference_note(0.5, {"lstm": [0.16]})  # no seeds to span
