"""DeBERTa's disentangled attention against the paper's equation written as a loop."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from lmcourse.models.attention import masked_softmax
from lmcourse.models.deberta import (
    ATTENTION_TERMS,
    DisentangledSelfAttention,
    disentangled_attention,
    disentangled_attention_scores,
    naive_disentangled_scores,
    position_memory_bytes,
    relative_positions,
    relative_projections,
)

TOL = 1e-10
f64 = torch.float64


def delta_reference(i: int, j: int, k: int) -> int:
    """δ(i,j) exactly as printed in the paper (eq. 3)."""
    if i - j <= -k:
        return 0
    if i - j >= k:
        return 2 * k - 1
    return i - j + k


def setup(B, N, D, k, seed=0):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(B, N, D, generator=g, dtype=f64)
    p = torch.randn(2 * k, D, generator=g, dtype=f64)
    Ws = [torch.randn(D, D, generator=g, dtype=f64) / math.sqrt(D) for _ in range(5)]
    return h, p, Ws  # Ws: W_q, W_k, W_v, W_qr, W_kr


# ---- relative distances -----------------------------------------------------------------

@pytest.mark.parametrize("n,k", [(1, 1), (5, 1), (6, 2), (8, 3), (4, 10), (7, 7), (9, 4)])
def test_relative_positions_piecewise(n, k):
    delta = relative_positions(n, k)
    assert delta.dtype == torch.long and delta.shape == (n, n)
    expected = torch.tensor([[delta_reference(i, j, k) for j in range(n)] for i in range(n)])
    assert torch.equal(delta, expected)
    assert int(delta.min()) >= 0 and int(delta.max()) <= 2 * k - 1


def test_relative_positions_values():
    # k = 2: i-j <= -2 -> 0, i-j >= 2 -> 3, else i-j+2
    assert relative_positions(4, 2).tolist() == [[2, 1, 0, 0],
                                                 [3, 2, 1, 0],
                                                 [3, 3, 2, 1],
                                                 [3, 3, 3, 2]]
    # k = 1: only the diagonal is i-j+k = 1; everything else is clipped
    assert relative_positions(3, 1).tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_bad_k_raises(bad):
    with pytest.raises(ValueError, match="k"):
        relative_positions(4, bad)
    with pytest.raises(ValueError, match="k"):
        position_memory_bytes(4, bad, 8)
    with pytest.raises(ValueError, match="k"):
        DisentangledSelfAttention(8, 2, bad)


def test_bad_shapes_raise():
    h, p, (W_q, W_k, _, W_qr, W_kr) = setup(1, 4, 6, 2)
    with pytest.raises(ValueError, match="n"):
        relative_positions(-1, 2)
    with pytest.raises(ValueError, match="2k"):
        disentangled_attention_scores(h, p[:3], W_q, W_k, W_qr, W_kr, k=2)
    with pytest.raises(ValueError, match="divisible"):
        disentangled_attention_scores(h, p, W_q, W_k, W_qr, W_kr, k=2, num_heads=4)
    with pytest.raises(ValueError, match="k"):
        disentangled_attention_scores(h, p, W_q, W_k, W_qr, W_kr, k=0)


# ---- vectorised scores against the loop -------------------------------------------------

@pytest.mark.parametrize("B,N,D,heads,k", [(2, 7, 12, 3, 2), (1, 5, 8, 2, 1),
                                           (2, 4, 6, 1, 9), (1, 9, 16, 4, 3)])
def test_scores_match_naive_loop(B, N, D, heads, k):
    h, p, (W_q, W_k, _, W_qr, W_kr) = setup(B, N, D, k)
    fast = disentangled_attention_scores(h, p, W_q, W_k, W_qr, W_kr, k, heads)
    slow = naive_disentangled_scores(h, p, W_q, W_k, W_qr, W_kr, k, heads)
    assert fast.shape == slow.shape == (B, heads, N, N)
    assert float((fast - slow).abs().max()) <= TOL


def test_each_term_matters():
    """Dropping either position term (zero W_kr or W_qr) changes the scores: the check
    against the loop would see a missing or mis-indexed term."""
    h, p, (W_q, W_k, _, W_qr, W_kr) = setup(1, 6, 8, 2)
    full = disentangled_attention_scores(h, p, W_q, W_k, W_qr, W_kr, 2, 2)
    zero = torch.zeros_like(W_qr)
    no_c2p = disentangled_attention_scores(h, p, W_q, W_k, W_qr, zero, 2, 2)
    no_p2c = disentangled_attention_scores(h, p, W_q, W_k, zero, W_kr, 2, 2)
    assert float((full - no_c2p).abs().max()) > 1e-3
    assert float((full - no_p2c).abs().max()) > 1e-3
    # position-to-content uses δ(j,i), not δ(i,j): with δ(i,j) the result differs
    q_r, _ = relative_projections(p, W_qr, W_kr, 2)
    k_c = (h @ W_k).view(1, 6, 2, 4).transpose(1, 2)
    delta = relative_positions(6, 2)
    p2c_wrong = torch.einsum("bhjd,hijd->bhij", k_c, q_r[:, delta])  # Q^r_δ(i,j)
    c2p_only = disentangled_attention_scores(h, p, W_q, W_k, zero, W_kr, 2, 2)
    assert float((c2p_only + p2c_wrong / math.sqrt(12) - full).abs().max()) > 1e-3


def test_unbatched_input():
    h, p, (W_q, W_k, _, W_qr, W_kr) = setup(1, 5, 8, 3)
    batched = disentangled_attention_scores(h, p, W_q, W_k, W_qr, W_kr, 3, 2)
    single = disentangled_attention_scores(h[0], p, W_q, W_k, W_qr, W_kr, 3, 2)
    naive = naive_disentangled_scores(h[0], p, W_q, W_k, W_qr, W_kr, 3, 2)
    assert single.shape == (2, 5, 5)
    assert torch.equal(single, batched[0])
    assert float((single - naive).abs().max()) <= TOL


def test_scale_is_one_over_sqrt_3d():
    h, p, (W_q, W_k, _, W_qr, W_kr) = setup(2, 6, 12, 2)
    heads, d = 3, 4
    scaled = disentangled_attention_scores(h, p, W_q, W_k, W_qr, W_kr, 2, heads)
    raw = disentangled_attention_scores(h, p, W_q, W_k, W_qr, W_kr, 2, heads, scale=1.0)
    assert float((scaled - raw / math.sqrt(3 * d)).abs().max()) <= TOL
    # and not BERT's 1/sqrt(d) nor the full hidden size
    assert float((scaled - raw / math.sqrt(d)).abs().max()) > 1e-3
    assert float((scaled - raw / math.sqrt(3 * 12)).abs().max()) > 1e-3


# ---- attention output, masks, module ------------------------------------------------------

def naive_attention(h, p, Ws, k, heads, mask):
    W_q, W_k, W_v, W_qr, W_kr = Ws
    scores = naive_disentangled_scores(h, p, W_q, W_k, W_qr, W_kr, k, heads)
    B, N, D = h.shape
    d = D // heads
    out = torch.zeros(B, N, D, dtype=f64)
    weights = torch.zeros_like(scores)
    for b in range(B):
        for hd in range(heads):
            v = h[b] @ W_v[:, hd * d:(hd + 1) * d]
            for i in range(N):
                allowed = [j for j in range(N) if mask[b, 0, i, j]]
                e = [math.exp(float(scores[b, hd, i, j])) for j in allowed]
                for j, ej in zip(allowed, e, strict=True):
                    weights[b, hd, i, j] = ej / sum(e)
                    out[b, i, hd * d:(hd + 1) * d] += weights[b, hd, i, j] * v[j]
    return out, weights


def test_attention_with_mask_matches_loop():
    B, N, D, heads, k = 2, 6, 12, 3, 2
    h, p, Ws = setup(B, N, D, k, seed=1)
    lengths = torch.tensor([6, 4])
    mask = (torch.arange(N)[None, :] < lengths[:, None])[:, None, None, :].expand(B, 1, N, N)
    mask = mask & torch.ones(N, N, dtype=torch.bool).tril()  # padding and causal
    out, weights = disentangled_attention(h, p, *Ws, k, heads, mask)
    ref_out, ref_weights = naive_attention(h, p, Ws, k, heads, mask)
    assert out.shape == (B, N, D) and weights.shape == (B, heads, N, N)
    assert float((weights - ref_weights).abs().max()) <= TOL
    assert float((out - ref_out).abs().max()) <= TOL
    assert torch.all(weights.masked_select(~mask.expand_as(weights)) == 0)


def test_module_forward_and_gradients():
    torch.manual_seed(0)
    attn = DisentangledSelfAttention(hidden=8, heads=2, k=3).double()
    assert attn.rel_embeddings.shape == (6, 8)
    h = torch.randn(2, 5, 8, dtype=f64)
    out, weights = attn(h)
    ref = masked_softmax(naive_disentangled_scores(h, attn.rel_embeddings, attn.W_q, attn.W_k,
                                                   attn.W_qr, attn.W_kr, 3, 2))
    assert out.shape == (2, 5, 8)
    assert float((weights - ref).detach().abs().max()) <= TOL
    out.sum().backward()
    for name in ("W_q", "W_k", "W_v", "W_qr", "W_kr", "rel_embeddings"):
        assert getattr(attn, name).grad is not None, name
        assert float(getattr(attn, name).grad.abs().max()) > 0, name
    with pytest.raises(ValueError, match="divisible"):
        DisentangledSelfAttention(10, 3, 2)


# ---- ablations: terms ------------------------------------------------------------------------

SUBSETS = [("c2c",), ("c2c", "c2p"), ("c2c", "p2c"), ("c2c", "c2p", "p2c")]


def heads_of(x, heads):
    """``B x N x D`` -> ``B x heads x N x d``, written out here, not imported."""
    B, N, D = x.shape
    return x.reshape(B, N, heads, D // heads).permute(0, 2, 1, 3)


def test_c2c_alone_is_scaled_dot_product_attention():
    B, N, D, heads, k = 2, 6, 12, 3, 2
    h, p, (W_q, W_k, W_v, W_qr, W_kr) = setup(B, N, D, k, seed=3)
    q, key, v = heads_of(h @ W_q, heads), heads_of(h @ W_k, heads), heads_of(h @ W_v, heads)
    want = torch.einsum("bhid,bhjd->bhij", q, key) / math.sqrt(D // heads)
    got = disentangled_attention_scores(h, p, W_q, W_k, W_qr, W_kr, k, heads, terms=("c2c",))
    assert float((got - want).abs().max()) <= TOL
    # the attention output is torch's own scaled dot-product attention, padding masked
    mask = (torch.arange(N) < torch.tensor([6, 4])[:, None])[:, None, None, :]
    out, weights = disentangled_attention(h, p, W_q, W_k, W_v, W_qr, W_kr, k, heads, mask,
                                          terms=("c2c",))
    ref = F.scaled_dot_product_attention(q, key, v, attn_mask=mask)
    assert float((out - ref.permute(0, 2, 1, 3).reshape(B, N, D)).abs().max()) <= TOL
    assert float((weights - torch.softmax(want.masked_fill(~mask, -math.inf), -1)).abs().max()
                 ) <= TOL
    # no position at all: the relative table does not matter
    other = disentangled_attention_scores(h, 5 * p + 1, W_q, W_k, W_qr, W_kr, k, heads,
                                          terms=("c2c",))
    assert torch.equal(other, got)


def test_c2c_c2p_matches_the_loop_with_scale_sqrt_2d():
    B, N, D, heads, k = 2, 7, 12, 3, 2
    d = D // heads
    h, p, (W_q, W_k, _, W_qr, W_kr) = setup(B, N, D, k, seed=4)
    fast = disentangled_attention_scores(h, p, W_q, W_k, W_qr, W_kr, k, heads,
                                         terms=("c2c", "c2p"))
    slow = naive_disentangled_scores(h, p, W_q, W_k, W_qr, W_kr, k, heads, terms=("c2c", "c2p"))
    assert float((fast - slow).abs().max()) <= TOL
    # the expected sum, built here pair by pair: Q^c_i K^c_j + Q^c_i K^r_δ(i,j), / sqrt(2d)
    q, key = heads_of(h @ W_q, heads), heads_of(h @ W_k, heads)
    k_r = heads_of((p @ W_kr)[None], heads)[0]  # heads x 2k x d
    delta = torch.tensor([[delta_reference(i, j, k) for j in range(N)] for i in range(N)])
    c2p = torch.einsum("bhid,hijd->bhij", q, k_r[:, delta])
    want = (torch.einsum("bhid,bhjd->bhij", q, key) + c2p) / math.sqrt(2 * d)
    assert float((fast - want).abs().max()) <= TOL
    raw = disentangled_attention_scores(h, p, W_q, W_k, W_qr, W_kr, k, heads, scale=1.0,
                                        terms=("c2c", "c2p"))
    assert float((fast - raw / math.sqrt(3 * d)).abs().max()) > 1e-3  # not the full set's


@pytest.mark.parametrize("terms", SUBSETS)
def test_every_subset_matches_the_loop(terms):
    h, p, (W_q, W_k, _, W_qr, W_kr) = setup(2, 6, 8, 3, seed=5)
    fast = disentangled_attention_scores(h, p, W_q, W_k, W_qr, W_kr, 3, 2, terms=terms)
    slow = naive_disentangled_scores(h, p, W_q, W_k, W_qr, W_kr, 3, 2, terms=terms)
    assert float((fast - slow).abs().max()) <= TOL
    # the order the names are given in does not matter, bit for bit
    again = disentangled_attention_scores(h, p, W_q, W_k, W_qr, W_kr, 3, 2,
                                          terms=tuple(reversed(terms)))
    assert torch.equal(fast, again)
    raw = disentangled_attention_scores(h, p, W_q, W_k, W_qr, W_kr, 3, 2, scale=1.0,
                                        terms=terms)
    assert float((fast - raw / math.sqrt(len(terms) * 4)).abs().max()) <= TOL


def test_all_terms_is_the_default_exactly():
    assert ATTENTION_TERMS == ("c2c", "c2p", "p2c")
    h, p, Ws = setup(2, 6, 8, 3, seed=6)
    W_q, W_k, _, W_qr, W_kr = Ws
    default = disentangled_attention_scores(h, p, W_q, W_k, W_qr, W_kr, 3, 2)
    full = disentangled_attention_scores(h, p, W_q, W_k, W_qr, W_kr, 3, 2,
                                         terms=("c2c", "c2p", "p2c"))
    assert torch.equal(default, full)
    out, w = disentangled_attention(h, p, *Ws, 3, 2)
    out_full, w_full = disentangled_attention(h, p, *Ws, 3, 2, terms=("c2c", "c2p", "p2c"))
    assert torch.equal(out, out_full) and torch.equal(w, w_full)


@pytest.mark.parametrize("bad", [(), ("c2p",), ("c2p", "p2c"), ("c2c", "p2p"), ("C2C",),
                                 ("c2c", "c2c"), "c2c", None])
def test_invalid_terms_raise(bad):
    h, p, (W_q, W_k, W_v, W_qr, W_kr) = setup(1, 4, 8, 2)
    with pytest.raises(ValueError, match="c2c.*c2p.*p2c.*includes 'c2c'"):
        disentangled_attention_scores(h, p, W_q, W_k, W_qr, W_kr, 2, 2, terms=bad)
    with pytest.raises(ValueError, match="includes 'c2c'"):
        disentangled_attention(h, p, W_q, W_k, W_v, W_qr, W_kr, 2, 2, terms=bad)
    with pytest.raises(ValueError, match="includes 'c2c'"):
        DisentangledSelfAttention(8, 2, 2, terms=bad)
    with pytest.raises(ValueError, match="includes 'c2c'"):
        naive_disentangled_scores(h, p, W_q, W_k, W_qr, W_kr, 2, 2, terms=bad)


class CountMatmuls(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.count += getattr(func, "__name__", "") in ("matmul", "__matmul__")
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("terms,matmuls", [(("c2c",), 3), (("c2c", "c2p"), 5),
                                           (("c2c", "p2c"), 5), (ATTENTION_TERMS, 7)])
def test_unused_terms_are_not_computed(terms, matmuls):
    """Q^c, K^c and Q^c K^c^T always; each position term adds its projection of P and its
    N x 2k product."""
    h, p, (W_q, W_k, _, W_qr, W_kr) = setup(1, 5, 8, 2)
    with CountMatmuls() as counter:
        disentangled_attention_scores(h, p, W_q, W_k, W_qr, W_kr, 2, 2, terms=terms)
    assert counter.count == matmuls


@pytest.mark.parametrize("terms,unused", [(("c2c",), ("W_qr", "W_kr", "rel_embeddings")),
                                          (("c2c", "c2p"), ("W_qr",)),
                                          (("c2c", "p2c"), ("W_kr",))])
def test_unused_position_matrix_gets_no_gradient(terms, unused):
    torch.manual_seed(0)
    attn = DisentangledSelfAttention(hidden=8, heads=2, k=3, terms=terms).double()
    assert attn.terms == terms
    out, _ = attn(torch.randn(2, 5, 8, dtype=f64))
    out.sum().backward()
    for name in ("W_q", "W_k", "W_v", "W_qr", "W_kr", "rel_embeddings"):
        grad = getattr(attn, name).grad
        if name in unused:
            assert grad is None, name
        else:
            assert grad is not None and float(grad.abs().max()) > 0, name


# ---- memory ---------------------------------------------------------------------------------

def test_memory_matches_real_tensors():
    n, k, d = 7, 3, 8
    p = torch.randn(2 * k, d)
    W = torch.randn(d, d)
    q_r, k_r = relative_projections(p, W, W)
    mem = position_memory_bytes(n, k, d)
    assert mem.disentangled == q_r.nbytes + k_r.nbytes
    delta = relative_positions(n, k)
    per_pair = k_r[0][delta]  # K^r_δ(i,j) for every pair: n x n x d
    assert per_pair.shape == (n, n, d)
    assert mem.per_pair == 2 * per_pair.nbytes
    assert position_memory_bytes(n, k, d, torch.float64).per_pair == 2 * mem.per_pair


def test_memory_scaling():
    k, d = 4, 64
    ns = [16, 32, 64, 128, 256]
    mems = [position_memory_bytes(n, k, d) for n in ns]
    assert len({m.disentangled for m in mems}) == 1  # constant in N
    ratios = [m.per_pair / n**2 for m, n in zip(mems, ns, strict=True)]
    assert len(set(ratios)) == 1 and ratios[0] == 2 * d * 4  # linear in N^2
    assert position_memory_bytes(16, 2 * k, d).disentangled == 2 * mems[0].disentangled
    assert mems[-1].per_pair > 1000 * mems[-1].disentangled
