"""Auto-checks for word2vec with negative sampling.

Each check runs the student's function on a small case whose answer it computes itself
(plain loops for the pairs, PyTorch's ``logsigmoid`` and autograd for the loss and the
step) and, when the answer differs, tries the typical mistakes to name the one made.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lmcourse.checks import attempt, expect, fail, passed, requires, requires_earlier
from lmcourse.checks.compare import how_far
from lmcourse.checks.word2vec_sampling import (  # noqa: F401  (the sampling exercises)
    discard_probability,
    noise_distribution,
)

__all__ = ["discard_probability", "learns_clusters", "months_close", "noise_distribution",
           "ns_loss", "skipgram_pairs", "train_step"]


# ---- exercise 1: (center, context) pairs ----------------------------------------------------

def _reference_pairs(ids: Sequence[int], window: int, offsets: Sequence[int] | None = None,
                     wrap: bool = False) -> Counter:
    """Pairs (ids[t], ids[t+o]) by plain loops; ``offsets`` defaults to 1 <= |o| <= window."""
    n = len(ids)
    if offsets is None:
        offsets = [o for o in range(-window, window + 1) if o != 0]
    pairs = Counter()
    for t in range(n):
        for o in offsets:
            j = t + o
            if wrap:
                j %= n
            elif not 0 <= j < n:
                continue
            pairs[(ids[t], ids[j])] += 1
    return pairs


def _as_pairs(name: str, got: Any) -> Counter:
    expect(isinstance(got, (tuple, list)) and len(got) == 2, name,
           "return two tensors, (centers, contexts), of the same length")
    centers, contexts = (torch.as_tensor(np.asarray(x)).reshape(-1) for x in got)
    expect(len(centers) == len(contexts), name,
           f"centers has {len(centers)} entries but contexts {len(contexts)}: pair number i is "
           "(centers[i], contexts[i]), so both must have one entry per pair")
    return Counter(zip(centers.tolist(), contexts.tolist(), strict=True))


def _diagnose_pairs(name: str, got: Counter, ids: list[int], window: int) -> None:
    want = _reference_pairs(ids, window)
    if got == want:
        return
    n_got, n_want = sum(got.values()), sum(want.values())
    left = [-o for o in range(1, window + 1)]
    right = list(range(1, window + 1))
    if got == _reference_pairs(ids, window, left + [0] + right):
        fail(name, "the center word is paired with itself (offset 0): a word is not its own "
                   "context; use offsets 1..window on each side.")
    if got in (_reference_pairs(ids, window, right), _reference_pairs(ids, window, left)):
        fail(name, "only one side of the window is used: each center needs the words up to "
                   "`window` positions to its LEFT and to its RIGHT (both directions).")
    if got == _reference_pairs(ids, window - 1):
        fail(name, f"with window={window} you produced the pairs of window={window - 1}: "
                   "offsets go from 1 to window, window INCLUDED (Python's range stops "
                   "before its end).")
    if got == _reference_pairs(ids, window + 1):
        fail(name, f"with window={window} you produced the pairs of window={window + 1}: "
                   "the farthest context is `window` positions away, not window + 1.")
    if got == _reference_pairs(ids, window, wrap=True):
        fail(name, "some pairs wrap around the ends of the sentence (the first word is paired "
                   "with the last ones): torch.roll / negative indices do that. Near the ends "
                   "a center simply has fewer contexts.")
    if set(got) == set(want) and n_got < n_want:
        fail(name, "a pair that occurs several times must appear as many times (it is a "
                   "training example each time): don't remove duplicates.")
    missing = sorted((want - got).elements())[:4]
    extra = sorted((got - want).elements())[:4]
    fail(name, f"for ids {ids} and window={window} you returned {n_got} pairs, too "
               f"{'many' if n_got > n_want else 'few'}; missing e.g. {missing}, unexpected e.g. "
               f"{extra}.")


def skipgram_pairs(student: Callable[..., Any]) -> None:
    """Exercise 1: every (center, context) pair with ``1 <= |offset| <= window``."""
    name = "skipgram_pairs"
    cases = [([11, 12, 13, 14, 15, 16, 17], 1), ([11, 12, 13, 14, 15, 16, 17], 2),
             ([3, 1, 4, 1, 5, 9, 2, 6, 5, 3], 3), ([8, 8, 8], 2), ([4, 2], 5)]
    total = 0
    for ids, window in cases:
        got = attempt(name, student, torch.tensor(ids), window)
        pairs = _as_pairs(name, got)
        _diagnose_pairs(name, pairs, ids, window)
        total += sum(pairs.values())
    passed(name, f"{len(cases)} sentences, {total} pairs, all equal to a plain double loop "
                 "(including repeated words and windows longer than the sentence)")


# ---- exercise 2: the negative-sampling loss ------------------------------------------------

def _loss_variants(v: torch.Tensor, u_pos: torch.Tensor, u_neg: torch.Tensor
                   ) -> dict[str, torch.Tensor]:
    pos = (u_pos * v).sum(-1)
    neg = (u_neg * v.unsqueeze(1)).sum(-1)
    ls = F.logsigmoid
    return {
        "right": -(ls(pos) + ls(-neg).sum(-1)).mean(),
        "neg sign": -(ls(pos) + ls(neg).sum(-1)).mean(),
        "pos sign": -(ls(-pos) + ls(-neg).sum(-1)).mean(),
        "sigmoid": -(torch.sigmoid(pos) + torch.sigmoid(-neg).sum(-1)).mean(),
        "sigmoid minus": (torch.sigmoid(pos) + torch.sigmoid(-neg).sum(-1)).mean(),
        "batch sum": -(ls(pos) + ls(-neg).sum(-1)).sum(),
        "neg mean": -(ls(pos) + ls(-neg).mean(-1)).mean(),
        "all mean": -torch.cat([ls(pos).unsqueeze(-1), ls(-neg)], dim=-1).mean(),
        "no negatives": -ls(pos).mean(),
        "maximised": (ls(pos) + ls(-neg).sum(-1)).mean(),
    }


_LOSS_HINTS = {
    "neg sign": "the noise words' term has the wrong sign: it is log sigma(-u_k . v), with a "
                "MINUS inside the sigmoid (sigma(-s) = 1 - sigma(s) is the probability of "
                "'not a real pair').",
    "pos sign": "the true context's term is -log sigma(u_o . v), with a PLUS score inside the "
                "sigmoid; the minus sign inside belongs to the noise words only.",
    "sigmoid": "you used sigma(...) where the loss has log sigma(...): take the logarithm "
               "(F.logsigmoid(x) computes log sigma(x) safely).",
    "sigmoid minus": "you used sigma(...) where the loss has -log sigma(...): take the "
                     "logarithm (F.logsigmoid) and keep the minus sign in front.",
    "batch sum": "you summed over the batch: return the MEAN over the B pairs (the sum over "
                 "the K negatives stays a sum), so the loss does not grow with the batch size.",
    "neg mean": "you averaged over the K negatives: the loss SUMS the K noise terms "
                "(sum_k log sigma(-u_k . v)); only the batch is averaged.",
    "all mean": "you averaged over all 1 + K terms: SUM the K noise terms with the true "
                "pair's term for each example, then take the mean over the batch.",
    "no negatives": "the noise words' term is missing: add -sum_k log sigma(-u_k . v) (without "
                    "it, every score can just grow and the loss goes to 0).",
    "maximised": "the sign of the whole loss is flipped: it is MINUS the log-likelihood, "
                 "-log sigma(u_o . v) - sum_k log sigma(-u_k . v), a positive number to "
                 "minimise.",
}


def ns_loss(student: Callable[..., Any]) -> None:
    """Exercise 2: mean over the batch of -log s(u_o.v) - sum_k log s(-u_k.v)."""
    name = "ns_loss"
    g = torch.Generator().manual_seed(0)
    B, K, d = 5, 3, 4
    v = torch.randn(B, d, generator=g, dtype=torch.float64)
    u_pos = torch.randn(B, d, generator=g, dtype=torch.float64)
    u_neg = torch.randn(B, K, d, generator=g, dtype=torch.float64)
    variants = _loss_variants(v, u_pos, u_neg)
    want = variants["right"].item()
    leaves = [t.clone().requires_grad_() for t in (v, u_pos, u_neg)]
    got = attempt(name, student, *leaves)
    expect(isinstance(got, torch.Tensor), name,
           f"return a torch tensor (so that backward() works), got {type(got).__name__}")
    expect(got.numel() == 1, name,
           f"return one number for the whole batch (the mean over the pairs), got a tensor of "
           f"shape {tuple(got.shape)}")
    value = got.item()
    if not abs(value - want) <= 1e-9 * max(1.0, abs(want)):
        for key, hint in _LOSS_HINTS.items():
            if abs(value - variants[key].item()) <= 1e-9 * max(1.0, abs(want)):
                fail(name, hint)
        fail(name, f"your loss {value:.6f} {how_far(value, want)} for B={B} pairs with K={K} "
                   "noise words each, and it is none of the usual mistakes: compute one "
                   "pair's term by hand and compare.")
    expect(got.requires_grad, name,
           "the loss does not depend on the inputs for autograd: compute it with torch "
           "operations on v, u_pos, u_neg (no .item(), .numpy() or .detach() inside).")
    got.backward()
    ref_leaves = [t.clone().requires_grad_() for t in (v, u_pos, u_neg)]
    _loss_variants(*ref_leaves)["right"].backward()
    worst = max((a.grad - b.grad).abs().max().item() for a, b in zip(leaves, ref_leaves,
                                                                       strict=True))
    expect(worst < 1e-9, name, f"the loss value is right but its gradient differs by {worst:.2e}")
    # large scores: log(sigmoid(x)) underflows to log(0) = -inf in float32
    big = [t.float() * 40 for t in (v, u_pos, u_neg)]
    value = attempt(name, student, *big)
    want_big = _loss_variants(*big)["right"].item()
    expect(bool(torch.isfinite(value).all()), name,
           "with large scores (|u.v| ~ 100, float32) your loss is infinite or NaN: "
           "torch.log(torch.sigmoid(x)) underflows to log(0); use F.logsigmoid(x).")
    expect(abs(value.item() - want_big) <= 1e-4 * abs(want_big), name,
           f"with large scores your loss is {value.item():.4f}, which "
           f"{how_far(value.item(), want_big, 1e-4)}: use F.logsigmoid for log sigma.")
    passed(name, f"loss {want:.6f} and its gradients match torch (|diff| <= 1e-9); "
                 "stable for large scores")


# ---- exercise 3: one vectorised training step -----------------------------------------------

def _tables(V: int, d: int, seed: int) -> tuple[nn.Embedding, nn.Embedding]:
    g = torch.Generator().manual_seed(seed)
    emb_in = nn.Embedding(V, d, sparse=True, dtype=torch.float64)
    emb_out = nn.Embedding(V, d, sparse=True, dtype=torch.float64)
    with torch.no_grad():
        emb_in.weight.copy_(torch.randn(V, d, generator=g, dtype=torch.float64) * 0.5)
        emb_out.weight.copy_(torch.randn(V, d, generator=g, dtype=torch.float64) * 0.5)
    return emb_in, emb_out


def _reference_step(W_in: torch.Tensor, W_out: torch.Tensor, c: torch.Tensor,
                    o: torch.Tensor, n: torch.Tensor, lr: float, same_table: bool = False,
                    accumulate: tuple[torch.Tensor, torch.Tensor] | None = None
                    ) -> tuple[torch.Tensor, torch.Tensor, float, torch.Tensor, torch.Tensor]:
    """Plain SGD on the mean loss; returns new tables, the loss and the gradients."""
    A, B = W_in.clone().requires_grad_(), W_out.clone().requires_grad_()
    out_table = A if same_table else B
    loss = _loss_variants(A[c], out_table[o], out_table[n])["right"]
    loss.backward()
    gA, gB = A.grad, B.grad if B.grad is not None else torch.zeros_like(B)
    if accumulate is not None:
        gA, gB = gA + accumulate[0], gB + accumulate[1]
    return W_in - lr * gA, W_out - lr * gB, loss.item(), gA, gB


def train_step(student: Callable[..., Any]) -> None:
    """Exercise 3: zero the grads, loss of the minibatch, backward, optimizer step."""
    name = "train_step"
    requires_earlier(name, student, ("ns_loss", 2, ns_loss))
    V, d, lr = 9, 4, 0.5
    c = torch.tensor([0, 1, 2, 0, 5])
    o = torch.tensor([1, 0, 3, 2, 6])
    n = torch.tensor([[4, 7], [8, 4], [1, 7], [3, 0], [4, 4]])
    emb_in, emb_out = _tables(V, d, seed=1)
    W_in0, W_out0 = emb_in.weight.detach().clone(), emb_out.weight.detach().clone()
    opt = torch.optim.SGD(list(emb_in.parameters()) + list(emb_out.parameters()), lr=lr)
    value = attempt(name, student, emb_in, emb_out, c, o, n, opt)
    W_in1, W_out1 = emb_in.weight.detach().clone(), emb_out.weight.detach().clone()
    want_in, want_out, want_loss, g_in, g_out = _reference_step(W_in0, W_out0, c, o, n, lr)

    def same(a: torch.Tensor, b: torch.Tensor) -> bool:
        return bool((a - b).abs().max() < 1e-9)

    if same(W_in1, W_in0) and same(W_out1, W_out0):
        fail(name, "the embeddings did not change: after loss.backward() call "
                   "optimizer.step() (and make sure backward() was called on the loss).")
    if not (same(W_in1, want_in) and same(W_out1, want_out)):
        si, so, *_ = _reference_step(W_in0, W_out0, c, o, n, lr, same_table=True)
        if same(W_in1, si):
            fail(name, "the contexts and negatives were looked up in emb_in: word2vec keeps "
                       "two tables, emb_in for the centers and emb_out for contexts and "
                       "negatives.")
        if same(W_in1, W_in0):
            fail(name, "the input (center) embeddings did not change: the center vectors "
                       "v must be looked up in emb_in, the input table.")
        if same(W_out1, W_out0):
            fail(name, "the output embeddings did not change: the true contexts and the "
                       "negatives must be looked up in emb_out.")
        off = max((W_in1 - want_in).abs().max().item(), (W_out1 - want_out).abs().max().item())
        fail(name, "after one step the embeddings differ from a plain SGD step on ns_loss "
                   "of the minibatch, with the centers looked up in emb_in and the contexts "
                   f"and negatives in emb_out (max |difference| {off:.2e}). Did ns_loss pass "
                   "its check? Use the optimizer you are given.")
    expect(isinstance(value, (float, int)) or (isinstance(value, torch.Tensor)
                                                and value.numel() == 1), name,
           "return the loss as a Python number (the value of the one-element loss tensor), "
           f"got {type(value).__name__}")
    value = float(value)
    expect(abs(value - want_loss) < 1e-9, name,
           f"you returned {value:.6f}, which {how_far(value, want_loss)} against the "
           "minibatch's loss before the step: return the value of the very loss you called "
           "backward() on, computed before the optimizer's step.")
    # a second step: its gradient must not include the first one's
    value2 = attempt(name, student, emb_in, emb_out, n[:, 0], c, o.unsqueeze(1), opt)
    W_in2, W_out2 = emb_in.weight.detach().clone(), emb_out.weight.detach().clone()
    want2 = _reference_step(W_in1, W_out1, n[:, 0], c, o.unsqueeze(1), lr)
    if not (same(W_in2, want2[0]) and same(W_out2, want2[1])):
        acc = _reference_step(W_in1, W_out1, n[:, 0], c, o.unsqueeze(1), lr,
                              accumulate=(g_in, g_out))
        if same(W_in2, acc[0]) and same(W_out2, acc[1]):
            fail(name, "the second step also applied the first step's gradient: gradients "
                       "accumulate in PyTorch; call optimizer.zero_grad() before backward().")
        fail(name, "the first step was right but the second was not: does train_step keep "
                   "state between calls? It should only use its arguments.")
    passed(name, f"two SGD steps equal the reference to 1e-9 (losses {value:.4f}, "
                 f"{float(value2):.4f})")


# ---- training: does it learn? ---------------------------------------------------------------

def _topic_corpus(seed: int = 0, n_docs: int = 40, segments: int = 8, length: int = 12
                  ) -> tuple[list[torch.Tensor], np.ndarray]:
    """Two topics of 6 words each (ids 0-5 and 6-11). A document is a run of segments of
    ``length`` words, each segment from one topic, the topics alternating: words near each
    other share a topic, words far apart in a document often do not."""
    rng = np.random.default_rng(seed)
    topic = np.repeat([0, 1], 6)
    docs = []
    for i in range(n_docs):
        parts = [rng.integers(0, 6, size=length) + 6 * ((i + s) % 2) for s in range(segments)]
        docs.append(torch.from_numpy(np.concatenate(parts)))
    return docs, topic


def learns_clusters(pairs_fn: Callable[..., Any], step_fn: Callable[..., Any],
                    epochs: int = 8) -> None:
    """Train with the student's pairs and step on two synthetic topics: each word's nearest
    neighbours must come from its own topic, and the loss must go down."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: threads only wait for each other
    try:
        _learns_clusters(pairs_fn, step_fn, epochs)
    finally:
        torch.set_num_threads(threads)


def _learns_clusters(pairs_fn: Callable[..., Any], step_fn: Callable[..., Any],
                     epochs: int) -> None:
    name = "training on two topics"
    requires(name, 1, skipgram_pairs, pairs_fn)
    requires(name, 3, train_step, step_fn)
    docs, topic = _topic_corpus()
    V, d, K, B = len(topic), 8, 3, 128
    g = torch.Generator().manual_seed(0)
    centers, contexts = [], []
    for doc in docs:
        got = attempt(name, pairs_fn, doc, 2)
        centers.append(torch.as_tensor(np.asarray(got[0])).reshape(-1).long())
        contexts.append(torch.as_tensor(np.asarray(got[1])).reshape(-1).long())
    centers, contexts = torch.cat(centers), torch.cat(contexts)
    emb_in, emb_out = nn.Embedding(V, d, sparse=True), nn.Embedding(V, d, sparse=True)
    with torch.no_grad():
        emb_in.weight.uniform_(-0.5 / d, 0.5 / d, generator=g)
        emb_out.weight.zero_()
    start = emb_in.weight.detach().clone()
    opt = torch.optim.SparseAdam(list(emb_in.parameters()) + list(emb_out.parameters()),
                                 lr=0.05)
    epoch_losses, first = [], None
    for _ in range(epochs):
        order = torch.randperm(len(centers), generator=g)
        negatives = torch.randint(0, V, (len(centers), K), generator=g)
        total, steps = 0.0, 0
        for s in range(0, len(order), B):
            idx = order[s:s + B]
            value = float(attempt(name, step_fn, emb_in, emb_out, centers[idx],
                                  contexts[idx], negatives[idx], opt))
            first = value if first is None else first  # (1 + K) log 2: emb_out starts at 0
            total += value
            steps += 1
        epoch_losses.append(total / steps)
    W = emb_in.weight.detach()
    expect(bool((W - start).abs().max() > 1e-6), name,
           "the input vectors did not change during training: does train_step call "
           "loss.backward() and optimizer.step()?")
    expect(epoch_losses[-1] < first, name,
           f"the loss went UP during training (first minibatch {first:.3f}, last epoch "
           f"{epoch_losses[-1]:.3f}): train_step must MINIMISE ns_loss: backward() on the "
           "loss itself (not on its negative), and optimizer.zero_grad() before each "
           "backward() (otherwise old gradients pile up).")
    unit = F.normalize(W, dim=1)
    sims = unit @ unit.T
    sims.fill_diagonal_(-2)
    nearest = sims.topk(3, dim=1).indices.numpy()
    same_topic = float((topic[nearest] == topic[:, None]).mean())
    learned = epoch_losses[-1] < first - 0.3 and same_topic >= 0.9
    expect(learned, name,
           f"the vectors did not learn the topics: loss {first:.3f} -> "
           f"{epoch_losses[-1]:.3f}, and {same_topic:.0%} of each word's 3 nearest neighbours "
           "are from its own topic (random vectors: about 45%). Does centers[i] go with "
           "contexts[i] (two words at most `window` apart)? Does ns_loss pass its check, "
           "and does train_step zero the gradients before each backward()?")
    passed(name, f"loss {first:.3f} (first minibatch) -> {epoch_losses[-1]:.3f} (last epoch); "
                 f"{same_topic:.0%} of "
                 "the nearest neighbours share the word's topic")


def months_close(vectors: Any, words: Sequence[str], k: int = 10,
                 threshold: float = 0.25) -> float:
    """Final check on text8: the months (stemmed) are among each other's ``k`` nearest
    neighbours. Returns the mean share of the other months among them."""
    name = "months are neighbours"
    if isinstance(vectors, torch.Tensor):
        vectors = vectors.detach().cpu().numpy()
    vectors = np.asarray(vectors, dtype=np.float64)
    expect(vectors.ndim == 2 and len(vectors) == len(words), name,
           f"pass the input embedding matrix, one row per word ({len(words)} rows); got "
           f"shape {vectors.shape}")
    norms = np.linalg.norm(vectors, axis=1)
    expect(bool((norms > 0).all()) and np.ptp(vectors, axis=0).max() > 0, name,
           "some word vectors are all zero (or all vectors are equal): pass emb_in.weight, "
           "the center vectors, after training (emb_out starts at zero).")
    months = ["januari", "februari", "march", "april", "june", "juli", "august", "septemb",
              "octob", "novemb", "decemb"]
    index = {w: i for i, w in enumerate(words)}
    months = [m for m in months if m in index]
    unit = vectors / norms[:, None]
    ids = np.array([index[m] for m in months])
    sims = unit[ids] @ unit.T
    sims[np.arange(len(ids)), ids] = -np.inf
    top = np.argsort(-sims, axis=1)[:, :k]
    share = float(np.mean([np.isin(row, ids).sum() / (len(ids) - 1) for row in top]))
    chance = k / (len(words) - 1)
    expect(share >= threshold, name,
           f"on average only {share:.0%} of the other months are among a month's {k} nearest "
           f"neighbours (random vectors: about {chance:.1%}; a working skip-gram: 30% or "
           "more after one epoch). Did the training loop run and the loss go down?")
    passed(name, f"{share:.0%} of the other months are among each month's {k} nearest "
                 f"neighbours (chance: {chance:.1%})")
    return share
