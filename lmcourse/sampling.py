"""Writing with a language model: greedy decoding, temperature and top-k sampling.

At each step the model scores every token of the vocabulary, ``z`` (the logits), and we
pick the next token from

    p_i = exp(z_i / T) / sum_j exp(z_j / T)                    (temperature T > 0)

``T < 1`` sharpens the distribution, ``T > 1`` flattens it, ``T -> 0`` puts all the mass
on the argmax: **greedy** decoding (``T = 0`` here). **Top-k** sampling keeps the ``k``
largest probabilities and renormalises them,

    p'_i = p_i / sum_{j in top-k} p_j  if i is among the k largest,  else 0,

so a rare, unlikely token can never be drawn. The chosen token is appended and fed back in.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["generate", "next_token_distribution", "sample_next"]


def next_token_distribution(logits: torch.Tensor, temperature: float = 1.0,
                            top_k: int | None = None) -> torch.Tensor:
    """``softmax(z / T)`` over the last axis (float64), restricted to the ``top_k`` largest
    entries and renormalised when ``top_k`` is given. ``T`` must be positive."""
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0 (use sample_next(..., temperature=0) for "
                         f"greedy decoding), got {temperature!r}")
    probs = torch.softmax(logits.double() / temperature, dim=-1)
    if top_k is not None:
        if not 1 <= top_k <= probs.shape[-1]:
            raise ValueError(f"top_k must lie between 1 and the vocabulary size "
                             f"{probs.shape[-1]}, got {top_k!r}")
        top = probs.topk(top_k, dim=-1)                     # the k largest, and where
        kept = torch.zeros_like(probs).scatter(-1, top.indices, top.values)
        probs = kept / kept.sum(-1, keepdim=True)           # renormalise the top k
    return probs


def sample_next(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None,
                generator: torch.Generator | None = None) -> int:
    """One token id from a 1-d vector of logits: the argmax when ``temperature == 0``
    (greedy), else a draw from :func:`next_token_distribution`."""
    if temperature == 0:
        return int(logits.argmax())
    probs = next_token_distribution(logits, temperature, top_k).cpu()
    return int(torch.multinomial(probs, 1, generator=generator))


@torch.no_grad()
def generate(model: nn.Module, vocab, prefix: str, n: int, temperature: float = 1.0,
             generator: torch.Generator | None = None, sep: str = "",
             top_k: int | None = None) -> str:
    """Continue ``prefix`` by ``n`` tokens, each drawn by :func:`sample_next`.

    The model reads the prefix, then each chosen token is fed back in. A recurrent model
    (``logits, state = model(x, state)``) carries its state, so it reads one new token per
    step; a model without state (a transformer, ``state`` is ``None``) re-reads the last
    ``model.max_len`` tokens every step. ``temperature=0`` is greedy decoding. ``sep`` is
    ``""`` for characters, ``" "`` for words.
    """
    was_training = model.training
    model.eval()
    dev = next(model.parameters()).device
    tokens = list(prefix) if sep == "" else prefix.split(sep)
    ids = vocab.encode(tokens)
    window = getattr(model, "max_len", None)
    logits, state = model(torch.tensor([ids[-window:] if window else ids], device=dev), None)
    out = []
    for _ in range(n):
        nxt = sample_next(logits[0, -1], temperature, top_k, generator)
        out.append(nxt)
        if state is None:  # no state to carry: read the whole (recent) context again
            ids.append(nxt)
            logits, state = model(torch.tensor([ids[-window:] if window else ids], device=dev),
                                  None)
        else:
            logits, state = model(torch.tensor([[nxt]], device=dev), state)
    model.train(was_training)
    continuation = vocab.decode(out, sep=sep)
    return f"{prefix}{sep}{continuation}" if sep else prefix + continuation
