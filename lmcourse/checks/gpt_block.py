"""Auto-checks for lab 09: a tiny GPT built by hand and trained on associative recall.

Each check builds the student's module with seeded weights (float64), computes the right
answer itself *from the same weights*, and when the student's differs, compares it with
the answers of the usual mistakes (a model that sees the future, the missing 1/√d, the mask
applied after the softmax, a block without its residual, a model without positions, ...) to
say which one it is. The hints name the idea and the equation to reread; none prints the
code of the answer.

The lab's layout (given in its ``__init__`` methods): ``CausalSelfAttention`` has ``qkv``
(one ``nn.Linear(E, 3E)`` whose output is ``[Q | K | V]``), ``out`` and ``num_heads``, and
keeps its last attention weights in ``weights`` (``B x heads x T x T``); ``Block`` has
``norm1, attn, norm2, mlp``; ``TinyGPT`` has ``tokens, positions, blocks, norm, head`` and
returns the logits alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from lmcourse.checks import attempt, expect, fail, passed, requires, run_student, same
from lmcourse.checks.compare import how_far
from lmcourse.checks.recall_race import GPT_SIZE, reference_note, train_both
from lmcourse.models.recall import IGNORE, RecallRun, query_loss

__all__ = ["GPT_SIZE", "beats_lstm", "block", "causal_self_attention", "recall_loss",
           "reference_note", "tiny_gpt"]

_TOL = 1e-8
#: the check's sizes: E = 24 with 4 heads gives heads of d = 6, so that dividing the scores by
#: 1 (no scale), √d ≈ 2.45 (right), √E ≈ 4.90 (the model's width) and d = 6 all differ and
#: each of those mistakes is named as itself (with E = 16, √E = d = 4 could not be told apart)
_E, _HEADS, _B, _T = 24, 4, 2, 6


def _seeded(module: nn.Module, seed: int) -> nn.Module:
    """``module`` in float64 with every parameter redrawn from N(0, 0.5²) (LayerNorm gains
    around 1), so that two different wirings never agree by accident."""
    g = torch.Generator().manual_seed(seed)
    module = module.double()
    with torch.no_grad():
        for name, p in module.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=torch.float64) * 0.5
            p.copy_(1.0 + noise if ("norm" in name and name.endswith("weight")) else noise)
    return module.eval()


def _needs(name: str, module: Any, attributes: tuple[str, ...], cls: str) -> None:
    missing = [a for a in attributes if not hasattr(module, a)]
    expect(not missing, name, f"{cls} has no attribute {', '.join(missing)}: keep the "
                              "__init__ the lab gives (the checks load weights into it) and "
                              "write only the forward method.")


def _name_the_mistake(name: str, got: torch.Tensor, variant: Callable[[str], torch.Tensor],
                      hints: dict[str, str]) -> None:
    """Fail with the hint of the first usual mistake whose answer, ``variant(mistake)``
    computed from the same weights, equals the student's ``got``; return if none does."""
    with torch.no_grad():
        for mistake, hint in hints.items():
            if same(got, variant(mistake), _TOL):
                fail(name, hint)


def _shape_of(value: Any) -> str:
    return str(tuple(value.shape)) if isinstance(value, torch.Tensor) else type(value).__name__


# ---- exercise 1: causal self-attention ------------------------------------------------

def attention_variant(attn: nn.Module, x: torch.Tensor, mistake: str | None = None
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """Causal multi-head self-attention computed from ``attn``'s own weights, right
    (``mistake=None``) or with one of the usual mistakes: ``"no mask"``, ``"no scale"``,
    ``"scale by d"``, ``"scale by model width"``, ``"mask after softmax"``,
    ``"mask polarity"``, ``"mask with zero"``, ``"softmax over queries"``,
    ``"keys as queries"``, ``"heads without transpose"`` (split and merge),
    ``"split without transpose"``, ``"merge without transpose"``, ``"no output projection"``.
    Returns ``(output, weights)``: ``softmax(Q Kᵀ/√d_head + causal) V`` per head, merged,
    through ``out``."""
    B, T, E = x.shape
    H = attn.num_heads
    D = E // H
    q, k, v = F.linear(x, attn.qkv.weight, attn.qkv.bias).chunk(3, dim=-1)
    if mistake in ("heads without transpose", "split without transpose"):
        q, k, v = (t.reshape(B, H, T, D) for t in (q, k, v))
    else:
        q, k, v = (t.reshape(B, T, H, D).transpose(1, 2) for t in (q, k, v))
    scores = k @ q.transpose(-2, -1) if mistake == "keys as queries" else q @ k.transpose(-2, -1)
    scores = scores / {"no scale": 1.0, "scale by d": D,
                       "scale by model width": math.sqrt(E)}.get(mistake, math.sqrt(D))
    allowed = torch.ones(T, T, dtype=torch.bool).tril()
    if mistake == "mask polarity":
        allowed = ~allowed | torch.eye(T, dtype=torch.bool)
    if mistake == "mask with zero":
        scores = scores.masked_fill(~allowed, 0.0)
    elif mistake not in ("no mask", "mask after softmax"):
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = scores.softmax(dim=-2 if mistake == "softmax over queries" else -1)
    if mistake == "mask after softmax":
        weights = weights * allowed
    heads = weights @ v
    if mistake in ("heads without transpose", "merge without transpose"):
        merged = heads.reshape(B, T, E)
    else:
        merged = heads.transpose(1, 2).reshape(B, T, E)
    out = merged if mistake == "no output projection" else F.linear(merged, attn.out.weight,
                                                                    attn.out.bias)
    return out, weights


_ATTENTION_HINTS = {
    "no mask": "your model sees the future: position t attends to the tokens after it, so "
               "at training time it can read the answer it should predict. Query i may only "
               "look at keys j ≤ i: block the others before the softmax, with a score whose "
               "exponential is exactly 0 (exercise 1's equation, the mask term M).",
    "no scale": "the 1/√d scale is missing: divide the scores by √d, where d is the size of "
                "ONE head's vectors (E / heads), before the softmax. Without it the softmax "
                "saturates as d grows (chapter 06, scaled dot-product attention).",
    "scale by d": "you divided the scores by d; divide by √d (the dot product of two "
                  "random d-dimensional vectors has variance d, so its spread is √d).",
    "scale by model width": "you scaled by √E, the model's width; each head compares "
                            "vectors of size d = E / heads, so scale by √(E / heads).",
    "mask after softmax": "the mask was applied after the softmax: the weights a position "
                          "keeps no longer sum to 1. Mask the scores, before the softmax, "
                          "so that the softmax spreads the whole weight over the allowed "
                          "keys.",
    "mask polarity": "the mask is the wrong way round: your positions attend to the future "
                     "and not to the past. The allowed keys of query i are j ≤ i (the lower "
                     "triangle, diagonal included).",
    "mask with zero": "the future's scores were set to 0, but exp(0) = 1 still gives those "
                      "keys weight, so your model still sees the future: use a score whose "
                      "exponential is 0.",
    "softmax over queries": "softmax over the wrong axis: each query's weights over the keys "
                            "must sum to 1, so normalise along the last axis (the keys).",
    "keys as queries": "queries and keys are swapped: score (i, j) is query i against key "
                       "j, Q Kᵀ, not K Qᵀ.",
    "heads without transpose": "the heads were split by reshaping B x T x E straight to "
                               "B x heads x T x d, which mixes positions. Regroup the last "
                               "axis into heads x d first, then swap the T and heads axes "
                               "(and undo both to merge).",
    "split without transpose": "the heads were split by reshaping B x T x E straight to "
                               "B x heads x T x d, which mixes positions (so a later token "
                               "seems to reach an earlier one). Regroup the last axis into "
                               "heads x d first, then swap the T and heads axes.",
    "merge without transpose": "the heads were merged by reshaping B x heads x T x d "
                               "straight to B x T x E, which mixes positions: swap the "
                               "heads and T axes back first, then flatten the last two.",
    "no output projection": "the heads were merged but not passed through the output "
                            "projection W^O (self.out).",
}


def causal_self_attention(cls: type[nn.Module]) -> None:
    """Check a ``CausalSelfAttention(d_model, num_heads)`` module: its output and its kept
    weights equal the reference from the same weights, and changing a later token never
    moves an earlier output."""
    name = "causal self-attention"
    attn = _seeded(attempt(name, cls, _E, _HEADS), seed=0)
    _needs(name, attn, ("qkv", "out", "num_heads"), "CausalSelfAttention")
    g = torch.Generator().manual_seed(1)
    x = torch.randn(_B, _T, _E, generator=g, dtype=torch.float64)
    got = run_student(name, attn, x, shape_hint="x is B x T x E; split E into heads x d.")
    with torch.no_grad():
        want, want_w = attention_variant(attn, x)
    expect(isinstance(got, torch.Tensor), name,
           f"forward should return the output tensor (B x T x E), got {type(got).__name__}")
    expect(got.shape == want.shape, name,
           f"the output should be B x T x E = {tuple(want.shape)}, got {tuple(got.shape)}")
    if not same(got, want, _TOL):
        _name_the_mistake(name, got, lambda m: attention_variant(attn, x, m)[0],
                          _ATTENTION_HINTS)
        changed = x.clone()
        changed[:, -1] = torch.randn(_B, _E, generator=g, dtype=torch.float64)
        moved = run_student(name, attn, changed)[:, :-1] - got[:, :-1]
        expect(float(moved.abs().max()) < 1e-9, name, _ATTENTION_HINTS["no mask"])
        fail(name, f"the output differs from the reference by up to "
                   f"{float((got - want).abs().max()):.3g}, and it is none of the usual "
                   "mistakes. Reread exercise 1's equations step by step: project, split "
                   "into heads, scaled scores, causal mask, softmax, weighted sum of the "
                   "values, merge, output projection.")
    attempt(name, attn, x)  # with autograd on, as in training: are the weights detached?
    kept = getattr(attn, "weights", None)
    expect(isinstance(kept, torch.Tensor) and kept.shape == want_w.shape, name,
           "the output is right; now keep the attention weights: before returning, store "
           f"them in self.weights (B x heads x T x T = {tuple(want_w.shape)}), so that you "
           "can look at the heads after training" + (
               f" (yours: {tuple(kept.shape)})" if isinstance(kept, torch.Tensor) else ""))
    expect(same(kept, want_w, _TOL) and not kept.requires_grad, name,
           "self.weights should be this call's attention weights (after the softmax), "
           "detached from the graph (.detach()) so that keeping them costs no memory.")
    passed(name, f"max difference {float((got - want).abs().max()):.1e} from the reference on "
                 f"{_B} x {_T} x {_E} with {_HEADS} heads; a later token never moves an "
                 "earlier output")


# ---- exercise 2: the pre-norm block ------------------------------------------------------

def block_variant(blk: nn.Module, x: torch.Tensor, mistake: str | None = None
                  ) -> torch.Tensor:
    """The pre-norm block from ``blk``'s own modules, ``h = x + Attn(LN_1 x)``,
    ``y = h + MLP(LN_2 h)``, or one of the usual mistakes."""
    attn, mlp, n1, n2 = blk.attn, blk.mlp, blk.norm1, blk.norm2
    if mistake == "post-norm":
        h = n1(x + attn(x))
        return n2(h + mlp(h))
    if mistake == "no norms":
        h = x + attn(x)
        return h + mlp(h)
    if mistake == "norms swapped":
        h = x + attn(n2(x))
        return h + mlp(n1(h))
    if mistake == "residual from the normalised input":
        h = n1(x)
        h = h + attn(h)
        h2 = n2(h)
        return h2 + mlp(h2)
    if mistake == "parallel branches":
        return x + attn(n1(x)) + mlp(n2(x))
    h = attn(n1(x)) if mistake in ("no attention residual", "no residuals") else x + attn(n1(x))
    return mlp(n2(h)) if mistake in ("no MLP residual", "no residuals") else h + mlp(n2(h))


_BLOCK_HINTS = {
    "no residuals": "no residual connections: each branch's output should be ADDED to the "
                    "stream it read, x ← x + branch(x), so that the block only learns a "
                    "correction and gradients reach early layers through the sums.",
    "no attention residual": "the attention branch has no residual: add its output to x "
                             "instead of replacing x with it.",
    "no MLP residual": "the MLP branch has no residual: add its output to the stream instead "
                       "of returning it alone.",
    "post-norm": "this is post-norm (normalise after adding, the 2017 paper's order); the "
                 "lab's block is pre-norm, like GPT-2: normalise the input of each branch "
                 "and add the branch's output to the un-normalised stream.",
    "no norms": "the LayerNorms are not used: each branch reads LN(x), not x.",
    "norms swapped": "norm1 belongs to the attention branch and norm2 to the MLP branch.",
    "residual from the normalised input": "the stream that carries on is the normalised x: "
                                          "only the branch reads LN(x); what you add the "
                                          "branch's output to is x itself.",
    "parallel branches": "both branches read the block's input (they run in parallel); in "
                         "this block the MLP reads the stream after the attention branch "
                         "was added to it.",
}


def block(cls: type[nn.Module]) -> None:
    """Check a ``Block(d_model, num_heads)`` against the pre-norm residual block built
    from its own (already checked) attention, MLP and norms."""
    name = "pre-norm block"
    blk = _seeded(attempt(name, cls, _E, _HEADS), seed=2)
    _needs(name, blk, ("norm1", "attn", "norm2", "mlp"), "Block")
    requires(name, 1, causal_self_attention, type(blk.attn))
    x = torch.randn(_B, _T, _E, generator=torch.Generator().manual_seed(3),
                    dtype=torch.float64)
    got = run_student(name, blk, x)
    with torch.no_grad():
        want = block_variant(blk, x)
    expect(isinstance(got, torch.Tensor) and got.shape == want.shape, name,
           f"forward should return a tensor of x's shape {tuple(x.shape)}, got "
           f"{_shape_of(got)}")
    if not same(got, want, _TOL):
        _name_the_mistake(name, got, lambda m: block_variant(blk, x, m), _BLOCK_HINTS)
        fail(name, f"the output differs from the pre-norm block by up to "
                   f"{float((got - want).abs().max()):.3g}: reread exercise 2's two lines "
                   "(each branch reads the normalised stream; its output is added to the "
                   "stream).")
    passed(name, f"max difference {float((got - want).abs().max()):.1e} from "
                 "x + Attn(LN₁ x), then + MLP(LN₂ ·)")


# ---- exercise 3: the whole model ---------------------------------------------------------

_VOCAB, _MAX_LEN, _LAYERS = 12, 16, 2


def gpt_variant(model: nn.Module, ids: torch.Tensor, mistake: str | None = None
                ) -> torch.Tensor:
    """``head(LN(blocks(E[ids] + P[0..T-1])))`` from ``model``'s own modules, or a usual
    mistake: ``"no positions"``, ``"positions of the ids"``, ``"no final norm"``,
    ``"only the last block"``."""
    T = ids.shape[1]
    h = model.tokens(ids)
    if mistake == "positions of the ids":
        h = h + model.positions(ids)
    elif mistake != "no positions":
        h = h + model.positions(torch.arange(T))
    blocks = list(model.blocks)[-1:] if mistake == "only the last block" else model.blocks
    for blk in blocks:
        h = blk(h)
    return model.head(h if mistake == "no final norm" else model.norm(h))


_GPT_HINTS = {
    "no positions": "no position embeddings: without them attention cannot tell which value "
                    "followed which key (it sees a set, not a sequence). Add P[t] for "
                    "t = 0 .. T-1 to the token embeddings.",
    "positions of the ids": "the position table was indexed by the token ids; index it by "
                            "the positions 0 .. T-1 (one row per place in the sequence).",
    "no final norm": "the final LayerNorm is missing: pre-norm blocks leave the stream "
                     "un-normalised, so normalise it once before the head.",
    "only the last block": "only one block ran: apply every block in self.blocks, in order, "
                           "each to the previous one's output.",
}


def tiny_gpt(cls: type[nn.Module]) -> None:
    """Check ``TinyGPT(vocab_size, d_model, num_heads, num_layers, max_len)``: its logits
    equal the reference from its own modules, and a later token never moves an earlier
    position's logits."""
    name = "tiny GPT"
    model = _seeded(attempt(name, cls, _VOCAB, _E, _HEADS, _LAYERS, _MAX_LEN), seed=4)
    _needs(name, model, ("tokens", "positions", "blocks", "norm", "head"), "TinyGPT")
    for kind in dict.fromkeys(type(b) for b in model.blocks):
        requires(name, 2, block, kind)
    ids = torch.randint(0, _VOCAB, (_B, 9), generator=torch.Generator().manual_seed(5))
    got = run_student(name, model, ids)
    with torch.no_grad():
        want = gpt_variant(model, ids)
    if isinstance(got, tuple | list):
        fail(name, "return the logits tensor alone (B x T x vocab), not a tuple.")
    expect(isinstance(got, torch.Tensor) and got.shape == want.shape, name,
           f"the logits should be B x T x vocab = {tuple(want.shape)}, got {_shape_of(got)}")
    if not same(got, want, _TOL):
        _name_the_mistake(name, got, lambda m: gpt_variant(model, ids, m), _GPT_HINTS)
        fail(name, f"the logits differ from head(LN(blocks(E[x] + P))) by up to "
                   f"{float((got - want).abs().max()):.3g}: reread exercise 3's equation.")
    changed = ids.clone()
    changed[:, -1] = (changed[:, -1] + 1) % _VOCAB
    moved = run_student(name, model, changed)[:, :-1] - got[:, :-1]
    expect(float(moved.abs().max()) < 1e-9, name, _ATTENTION_HINTS["no mask"])
    passed(name, f"logits {tuple(got.shape)} equal the reference (max difference "
                 f"{float((got - want).abs().max()):.1e}); changing the last token moves no "
                 "earlier logit")


# ---- exercise 4: the loss at the queries -------------------------------------------------

def recall_loss(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Check ``recall_loss(logits, targets)``: the mean cross-entropy over the positions
    whose target is not ``IGNORE``, differentiable."""
    name = "recall loss"
    g = torch.Generator().manual_seed(6)
    B, T, V = 3, 10, 7
    logits = torch.randn(B, T, V, generator=g, dtype=torch.float64, requires_grad=True)
    targets = torch.full((B, T), IGNORE)
    targets[:, 6:] = torch.randint(0, V, (B, 4), generator=g)
    want = query_loss(logits.detach(), targets)
    try:
        got = fn(logits, targets)
    except (IndexError, RuntimeError) as err:
        if "out of bounds" in str(err) or "-100" in str(err):
            fail(name, f"the targets hold IGNORE = {IGNORE} at every position that is not a "
                       "query, and cross-entropy cannot read that as a class: tell it to "
                       "skip those positions (see cross_entropy's ignore_index).")
        got = attempt(name, fn, logits, targets)
    except Exception:  # noqa: BLE001 - attempt() turns the crash into the usual hint
        got = attempt(name, fn, logits, targets)
    expect(isinstance(got, torch.Tensor) and got.dim() == 0, name,
           "return the loss as a 0-dimensional tensor (one number you can call .backward() "
           f"on), got {type(got).__name__}" + (
               f" of shape {tuple(got.shape)}" if isinstance(got, torch.Tensor) else ""))
    expect(got.requires_grad, name,
           "the loss is cut off from the graph (no gradient reaches the logits): compute it "
           "with torch operations on the logits, without .item(), .detach() or numpy.")
    if not same(got.detach(), want, 1e-9):
        flat, tflat = logits.detach().reshape(-1, V), targets.reshape(-1)
        shifted = F.cross_entropy(logits.detach()[:, :-1].reshape(-1, V),
                                  targets[:, 1:].reshape(-1), ignore_index=IGNORE)
        as_zero = F.cross_entropy(flat, tflat.clamp(min=0))
        total = F.cross_entropy(flat, tflat, ignore_index=IGNORE, reduction="sum")
        for wrong, hint in (
                (shifted, "you shifted the logits and targets by one, as for next-token "
                          "prediction; here the target at a query position is already the "
                          "answer that position must output, so compare logits and targets "
                          "at the same positions."),
                (as_zero, "the positions that are not queries count as the class 0: skip "
                          "them (ignore_index), so that only the queries are scored."),
                (total, "you summed the per-query losses; average them (the mean over the "
                        "queries keeps the loss's scale independent of the batch).")):
            if same(got.detach(), wrong, 1e-9):
                fail(name, hint)
        fail(name, f"your loss is {float(got.detach()):.4f}, which "
                   f"{how_far(float(got.detach()), float(want))} against the mean "
                   "cross-entropy at the query positions: flatten logits to (B·T) x vocab and "
                   "targets to B·T, and skip the IGNORE positions.")
    passed(name, f"{float(got.detach()):.4f} = the reference {float(want):.4f}, over the "
                 f"{int((targets != IGNORE).sum())} query positions only")


# ---- last: it beats the LSTM ------------------------------------------------------------

def beats_lstm(gpt_cls: type[nn.Module], loss_fn: Callable[[torch.Tensor, torch.Tensor],
               torch.Tensor], pairs: int, steps: int, *, target: float = 0.9,
               reference: dict[str, Sequence[float]] | None = None,
               device: torch.device | str = "cpu",
               progress: bool = True) -> dict[str, RecallRun]:
    """Train the student's GPT (``gpt_cls``, with ``loss_fn``) and an LSTM of the same size
    on the same recall batches for the same steps, each at its own learning rate; pass when
    the GPT answers at least ``target`` of the held-out queries and more than the LSTM.
    ``reference`` (model → its accuracy on each seed of the course's reference run) is
    printed beside, with how far the GPT lies outside the reference transformer's spread.
    Returns both runs (``"gpt"``, ``"lstm"``)."""
    name = "your GPT against the LSTM"
    requires(name, 3, tiny_gpt, gpt_cls)
    requires(name, 4, recall_loss, loss_fn)
    runs = train_both(gpt_cls, loss_fn, pairs, steps, device=device, progress=progress)
    gpt, lstm = runs["gpt"], runs["lstm"]
    ratio = gpt.parameters / lstm.parameters
    expect(0.9 <= ratio <= 1.1, name,
           f"the two models should have about the same size: yours has {gpt.parameters:,} "
           f"parameters, the LSTM {lstm.parameters:,}. Keep the __init__ methods the lab "
           "gives.")
    seen = (f"held-out query accuracy, yours {gpt.accuracy:.3f}, the LSTM's "
            f"{lstm.accuracy:.3f} after {int(gpt.curve[-1][0])} steps with {pairs} pairs")
    if reference:
        seen += reference_note(gpt.accuracy, reference)
    expect(gpt.accuracy >= target, name,
           f"{seen}. A working GPT reaches {target} within the lab's budget. Your modules "
           "compute the right function on the checks' weights (exercises 1-4 pass), so look "
           "at what changes training but not that function: dropout left on, a changed "
           "__init__ (keep the ones the lab gives), a parameter created outside the module "
           "so the optimizer never sees it. The curve shows which: flat at the level of a "
           "guess means it never learned the lookup; still climbing means it learned slowly.")
    expect(gpt.accuracy > lstm.accuracy, name,
           f"{seen}: the LSTM did as well as your GPT, so your GPT did not use what "
           "attention gives it here, a lookup of any earlier position. Compare its curve "
           "with the LSTM's, and look at where its heads attend (the lab's last figure).")
    passed(name, seen)
    return runs
