"""The transformer decoder layer vs ``torch.nn.TransformerDecoderLayer`` and its definition."""

import pytest
import torch

from lmcourse.models.attention import causal_mask, padding_mask
from lmcourse.models.transformer import TransformerDecoderLayer

D, HEADS, FF, T, S, B = 16, 4, 24, 6, 5, 3
LENGTHS = [5, 3, 1]  # memory lengths: the last two sources are padded


def _pair(norm_first=False, batch_first=False, activation="relu", seed=0):
    """A torch layer with perturbed (non-trivial) parameters and ours with its weights."""
    torch.manual_seed(seed)
    ref = torch.nn.TransformerDecoderLayer(D, HEADS, FF, dropout=0.0, activation=activation,
                                           batch_first=batch_first,
                                           norm_first=norm_first).double().eval()
    with torch.no_grad():  # non-trivial LayerNorm parameters and biases
        for p in ref.parameters():
            p.add_(0.1 * torch.randn_like(p))
    ours = TransformerDecoderLayer(D, HEADS, FF, activation=activation,
                                   batch_first=batch_first, norm_first=norm_first).double()
    ours.load_state_dict(ref.state_dict())
    return ref, ours.eval()


def _inputs(batch_first):
    tgt = torch.randn(B, T, D, dtype=torch.float64)
    memory = torch.randn(B, S, D, dtype=torch.float64)
    if not batch_first:
        tgt, memory = tgt.transpose(0, 1), memory.transpose(0, 1)
    return tgt, memory


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("masked", [False, True])
def test_decoder_layer_matches_torch(norm_first, batch_first, activation, masked):
    ref, ours = _pair(norm_first, batch_first, activation)
    tgt, memory = _inputs(batch_first)
    if masked:
        allowed_tgt = causal_mask(T)                          # ours: True = allowed
        allowed_mem = padding_mask(LENGTHS, S)                # B x S, True at real tokens
        expected = ref(tgt, memory, tgt_mask=~allowed_tgt,   # torch: True = not allowed
                       memory_key_padding_mask=~allowed_mem)
        got = ours(tgt, memory, tgt_mask=allowed_tgt,
                   memory_mask=allowed_mem[:, None, None, :])
        unmasked = ours(tgt, memory)
        assert (got - unmasked).abs().max().item() > 1e-3  # the masks do change the output
    else:
        expected, got = ref(tgt, memory), ours(tgt, memory)
    assert got.shape == expected.shape == tgt.shape
    assert (got - expected).abs().max().item() <= 1e-10


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_torch_additive_and_memory_masks(norm_first):
    """torch's float causal mask (``-inf`` above the diagonal) and its ``memory_mask``."""
    ref, ours = _pair(norm_first, batch_first=True, seed=1)
    tgt, memory = _inputs(batch_first=True)
    additive = torch.nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64)
    allowed_mem = torch.rand(T, S, generator=torch.Generator().manual_seed(2)) < 0.6
    allowed_mem[:, 0] = True  # every query keeps at least one key
    expected = ref(tgt, memory, tgt_mask=additive, memory_mask=~allowed_mem)
    got = ours(tgt, memory, tgt_mask=causal_mask(T), memory_mask=allowed_mem)
    assert (got - expected).abs().max().item() <= 1e-10


def test_decoder_layer_unbatched_matches_torch():
    ref, ours = _pair(norm_first=True)
    tgt, memory = torch.randn(T, D, dtype=torch.float64), torch.randn(S, D, dtype=torch.float64)
    mask = causal_mask(T)
    expected = ref(tgt, memory, tgt_mask=~mask)
    got = ours(tgt, memory, tgt_mask=mask)
    assert got.shape == (T, D)
    assert (got - expected).abs().max().item() <= 1e-10


def test_decoder_state_dict_names_match_torch():
    ref = torch.nn.TransformerDecoderLayer(8, 2, 16)
    ours = TransformerDecoderLayer(8, 2, 16)
    assert {k: v.shape for k, v in ours.state_dict().items()} == {
        k: v.shape for k, v in ref.state_dict().items()}
    for name in ("dropout", "dropout1", "dropout2", "dropout3"):
        assert isinstance(getattr(ours, name), torch.nn.Dropout)
    d, f = 8, 16  # 2 attentions + FFN + 3 LayerNorms
    assert sum(p.numel() for p in ours.parameters()) == (
        2 * (4 * d * d + 4 * d) + (2 * d * f + f + d) + 3 * 2 * d)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_is_causal(norm_first):
    _, ours = _pair(norm_first, batch_first=True)
    tgt, memory = _inputs(batch_first=True)
    tgt2 = tgt.clone()
    tgt2[:, 4] += 1.0  # change a future target token
    mask, mem_mask = causal_mask(T), padding_mask(LENGTHS, S)[:, None, None, :]
    a = ours(tgt, memory, tgt_mask=mask, memory_mask=mem_mask)
    b = ours(tgt2, memory, tgt_mask=mask, memory_mask=mem_mask)
    assert (a[:, :4] - b[:, :4]).abs().max().item() == 0.0
    assert (a[:, 4:] - b[:, 4:]).abs().max().item() > 1e-6  # later positions do see it
    # padded memory positions are invisible: changing them changes nothing
    memory2 = memory.clone()
    memory2[1, 3:] += 1.0
    c = ours(tgt, memory2, tgt_mask=mask, memory_mask=mem_mask)
    assert (a - c).abs().max().item() == 0.0


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_attention_weights(norm_first):
    ref, ours = _pair(norm_first, batch_first=True)
    tgt, memory = _inputs(batch_first=True)
    allowed_tgt, allowed_mem = causal_mask(T), padding_mask(LENGTHS, S)
    out, self_w, cross_w = ours(tgt, memory, tgt_mask=allowed_tgt,
                                memory_mask=allowed_mem[:, None, None, :],
                                return_attention=True)
    assert (out - ours(tgt, memory, allowed_tgt, allowed_mem[:, None, None, :])
            ).abs().max().item() == 0.0
    assert self_w.shape == (B, HEADS, T, T) and cross_w.shape == (B, HEADS, T, S)
    assert torch.all(self_w.triu(1) == 0)
    assert torch.all(cross_w.masked_select(~allowed_mem[:, None, None, :].expand_as(cross_w))
                     == 0)
    for w in (self_w, cross_w):
        assert (w.sum(-1) - 1).abs().max().item() < 1e-12

    # torch's layer asks its attentions for no weights: capture their inputs and recompute
    captured = {}

    def hook(name):
        def save(module, args, kwargs):
            captured[name] = (args, kwargs)
        return save

    handles = [ref.self_attn.register_forward_pre_hook(hook("self"), with_kwargs=True),
               ref.multihead_attn.register_forward_pre_hook(hook("cross"), with_kwargs=True)]
    ref(tgt, memory, tgt_mask=~allowed_tgt, memory_key_padding_mask=~allowed_mem)
    for h in handles:
        h.remove()
    for name, module, got in (("self", ref.self_attn, self_w),
                              ("cross", ref.multihead_attn, cross_w)):
        args, kwargs = captured[name]
        kwargs = {**kwargs, "need_weights": True, "average_attn_weights": False}
        _, expected = module(*args, **kwargs)
        assert (got - expected).abs().max().item() <= 1e-10


def test_decoder_bad_activation():
    with pytest.raises(ValueError, match="activation must be 'relu' or 'gelu'.*'tanh'"):
        TransformerDecoderLayer(8, 2, 16, activation="tanh")


def test_decoder_bad_heads():
    with pytest.raises(ValueError, match="not divisible"):
        TransformerDecoderLayer(10, 3)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_causal_mask_float64_and_parameter_count(norm_first):
    """The issue's check: float64, causal self-attention mask, <= 1e-10 for both norms; the
    future of the target cannot move earlier outputs; and the parameter count formula."""
    from lmcourse.models.transformer import decoder_layer_parameters

    ref, ours = _pair(norm_first, batch_first=True, seed=3)
    tgt, memory = _inputs(batch_first=True)
    mask = causal_mask(T)
    got = ours(tgt, memory, tgt_mask=mask)
    assert got.dtype == torch.float64
    assert (got - ref(tgt, memory, tgt_mask=~mask)).abs().max().item() <= 1e-10
    changed = tgt.clone()
    changed[:, 4] += 1.0  # change target position 4: positions 0..3 must not move
    moved = ours(changed, memory, tgt_mask=mask)
    assert (moved[:, :4] - got[:, :4]).abs().max().item() == 0.0
    assert (moved[:, 4:] - got[:, 4:]).abs().max().item() > 1e-6
    n = sum(p.numel() for p in ours.parameters())
    assert n == sum(p.numel() for p in ref.parameters()) == decoder_layer_parameters(D, FF)
