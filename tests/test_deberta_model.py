"""The small DeBERTa: layer = disentangled attention + BERT's sublayers, shared relative
table, relative-only encoder, enhanced mask decoder, pre-training drop-in, SiFT."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from lmcourse.finetune import SequenceClassifier
from lmcourse.masking import mask_tokens
from lmcourse.models.bert import BertConfig, BertModel, BertOutput
from lmcourse.models.deberta import DisentangledSelfAttention, disentangled_attention
from lmcourse.models.deberta_model import (
    DebertaForPreTraining,
    DebertaLayer,
    DebertaModel,
    EnhancedMaskDecoder,
    embeddings_forward,
    parameter_budget_report,
    sift_loss,
)
from lmcourse.models.pretraining import (
    BertForPreTraining,
    collate_pairs,
    evaluate_pretraining,
    pretrain,
)

TINY = BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=32, max_position_embeddings=32,
                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
SPECIAL = dict(special_ids=[0, 1, 2, 3, 4], cls_id=1, sep_id=2, pad_id=0, mask_id=3)


def random_pairs(n, seed=0, low=5, high=40):
    g = torch.Generator().manual_seed(seed)
    def sentence():
        return torch.randint(low, high, (int(torch.randint(2, 7, (1,), generator=g)),),
                             generator=g).tolist()
    return [(sentence(), sentence(), int(torch.randint(0, 2, (1,), generator=g)))
            for _ in range(n)]


# ---- the layer --------------------------------------------------------------------------

def test_layer_attention_is_disentangled_attention():
    torch.manual_seed(0)
    layer, k = DebertaLayer(TINY, k=3).double(), 3
    x = torch.randn(2, 7, 16, dtype=torch.float64)
    p = torch.randn(2 * k, 16, dtype=torch.float64)
    mask = torch.tensor([[1] * 7, [1] * 5 + [0] * 2]).bool()[:, None, None, :]
    Ws = [m.weight.T for m in (layer.query, layer.key, layer.value, layer.pos_query,
                               layer.pos_key)]
    want, want_w = disentangled_attention(x, p, *Ws, k=k, num_heads=2, mask=mask)
    got, got_w = layer.attention(x, p, mask)
    assert (got - want).abs().max() < 1e-10 and (got_w - want_w).abs().max() < 1e-10
    # and the reference module holding the same weights and table
    ref = DisentangledSelfAttention(16, 2, k).double()
    with torch.no_grad():
        for name, W in zip(("W_q", "W_k", "W_v", "W_qr", "W_kr"), Ws, strict=True):
            getattr(ref, name).copy_(W)
        ref.rel_embeddings.copy_(p)
    ref_out, ref_w = ref(x, mask)
    assert (got - ref_out).abs().max() < 1e-10 and (got_w - ref_w).abs().max() < 1e-10
    # the full layer: output projection + residual + LayerNorm, then the feed-forward block
    out, weights = layer(x, p, mask)
    h = layer.attention_output(want, x)
    assert (out - layer.output(layer.intermediate(h), h)).abs().max() < 1e-10
    assert torch.equal(weights, got_w)


# ---- the encoder ------------------------------------------------------------------------

def test_shapes_and_output_fields():
    torch.manual_seed(0)
    model = DebertaModel(TINY, k=4).eval()
    ids = torch.randint(5, 40, (3, 9))
    out = model(ids, attention_mask=torch.ones(3, 9), token_type_ids=torch.zeros_like(ids))
    assert isinstance(out, BertOutput)
    assert out.last_hidden_state.shape == (3, 9, 16)
    assert len(out.hidden_states) == 3 and all(h.shape == (3, 9, 16) for h in out.hidden_states)
    assert len(out.attentions) == 2 and all(a.shape == (3, 2, 9, 9) for a in out.attentions)
    assert out.pooler_output.shape == (3, 16)
    assert torch.equal(out.hidden_states[-1], out.last_hidden_state)
    # longer than max_position_embeddings: fine without absolute positions
    assert model(torch.randint(5, 40, (1, 50))).last_hidden_state.shape == (1, 50, 16)
    no_pool = DebertaModel(BertConfig(**{**TINY.__dict__, "pooler": False}), k=4)
    assert no_pool(ids).pooler_output is None


def test_input_validation():
    model = DebertaModel(TINY, k=2)
    with pytest.raises(ValueError, match="batch x tokens"):
        model(torch.tensor([5, 6, 7]))
    with pytest.raises(ValueError, match="must match"):
        model(torch.tensor([[5, 6, 7]]), attention_mask=torch.ones(1, 4))
    with pytest.raises(ValueError, match="k"):
        DebertaModel(TINY, k=0)
    with pytest.raises(ValueError, match="ALBERT"):
        DebertaModel(BertConfig(**{**TINY.__dict__, "share_layers": True}))
    emd = DebertaForPreTraining(TINY, k=2)
    with pytest.raises(ValueError, match="positions"):
        emd(torch.randint(5, 40, (1, 33)))


def test_padding_keys_get_no_attention():
    torch.manual_seed(0)
    model = DebertaModel(TINY, k=4).eval()
    ids = torch.randint(5, 40, (2, 8))
    mask = torch.tensor([[1] * 8, [1] * 5 + [0] * 3])
    out = model(ids, attention_mask=mask)
    for a in out.attentions:
        assert torch.all(a[1, :, :, 5:] == 0)
        assert torch.allclose(a.sum(-1), torch.ones(2, 2, 8))
    # what the padding holds does not matter to the real tokens
    other = ids.clone()
    other[1, 5:] = torch.randint(5, 40, (3,))
    again = model(other, attention_mask=mask).last_hidden_state
    assert torch.allclose(again[1, :5], out.last_hidden_state[1, :5], atol=1e-6)


def test_shared_relative_table_is_one_parameter():
    model = DebertaModel(TINY, k=5)
    H, I, L, V = 16, 32, 2, 40
    tables = [n for n, p in model.named_parameters() if p.shape == (10, H)]
    assert tables == ["rel_embeddings.weight"]
    # per layer: 5 bias-free projections, output dense + LN, feed-forward in and out + LN
    layer = 5 * H * H + (H * H + H) + 2 * H + (H * I + I) + (I * H + H) + 2 * H
    # word + segment + LN, the one rel table + its LN, the layers, the pooler
    expected = (V * H + 2 * H + 2 * H) + (10 * H + 2 * H) + L * layer + (H * H + H)
    assert sum(p.numel() for p in model.parameters()) == expected
    # every layer gets the same table P = LayerNorm(E_rel), computed once per forward
    seen = []
    hooks = [m.register_forward_pre_hook(lambda _, args: seen.append(args[1]))
             for m in model.layer]
    model(torch.randint(5, 40, (2, 6)))
    for h in hooks:
        h.remove()
    assert len(seen) == L and all(p is seen[0] for p in seen)
    assert torch.equal(seen[0], model.relative_embeddings())


def test_no_absolute_position_without_emd_shift_invariant():
    """[a, b, c] and [x, a, b, c] with x masked out: the same relative offsets among a, b, c,
    so the same outputs there when positions are relative only; the EMD breaks it."""
    torch.manual_seed(0)
    plain = DebertaForPreTraining(TINY, k=2, enhanced_mask_decoder=False).eval()
    assert not any("position" in n for n, _ in plain.named_parameters())
    abc = torch.tensor([[7, 9, 11, 13, 15]])
    xabc = torch.tensor([[20, 7, 9, 11, 13, 15]])
    shifted_mask = torch.tensor([[0, 1, 1, 1, 1, 1]])
    with torch.no_grad():
        a, _ = plain(abc)
        b, _ = plain(xabc, attention_mask=shifted_mask)
    assert torch.allclose(a[0], b[0, 1:], atol=1e-5)
    torch.manual_seed(0)
    emd = DebertaForPreTraining(TINY, k=2).eval()
    torch.nn.init.normal_(emd.emd.position_embeddings.weight, std=1.0)
    with torch.no_grad():
        a, _ = emd(abc)
        b, _ = emd(xabc, attention_mask=shifted_mask)
    assert (a[0] - b[0, 1:]).abs().max() > 1e-3


def test_emd_parameters_and_output():
    torch.manual_seed(0)
    emd = EnhancedMaskDecoder(TINY, k=3)
    assert emd.position_embeddings.weight.shape == (32, 16)
    h, p = torch.randn(2, 5, 16), torch.randn(6, 16)
    assert emd(h, p).shape == (2, 5, 16)
    with_emd = DebertaForPreTraining(TINY, k=3)
    without = DebertaForPreTraining(TINY, k=3, enhanced_mask_decoder=False)
    n_emd = sum(p.numel() for p in with_emd.emd.parameters())
    count = sum(p.numel() for p in with_emd.parameters())
    assert count == sum(p.numel() for p in without.parameters()) + n_emd


# ---- ablations: terms and the shared EMD layer --------------------------------------------

LAYER_KEYS = ["query.weight", "key.weight", "value.weight", "pos_query.weight", "pos_key.weight",
              "attention_output.dense.weight", "attention_output.dense.bias",
              "attention_output.LayerNorm.weight", "attention_output.LayerNorm.bias",
              "intermediate.dense.weight", "intermediate.dense.bias", "output.dense.weight",
              "output.dense.bias", "output.LayerNorm.weight", "output.LayerNorm.bias"]
# recorded from the code before `terms` and `share_emd_layer` existed (TINY: two layers)
ENCODER_KEYS = (["embeddings.word_embeddings.weight", "embeddings.token_type_embeddings.weight",
                 "embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias",
                 "rel_embeddings.weight", "rel_norm.weight", "rel_norm.bias"]
                + [f"layer.{i}.{name}" for i in range(2) for name in LAYER_KEYS]
                + ["pooler.dense.weight", "pooler.dense.bias"])
PRETRAINING_KEYS = ([f"deberta.{name}" for name in ENCODER_KEYS]
                    + ["emd.position_embeddings.weight"]
                    + [f"emd.layer.{name}" for name in LAYER_KEYS]
                    + ["mlm.bias", "mlm.dense.weight", "mlm.dense.bias", "mlm.LayerNorm.weight",
                       "mlm.LayerNorm.bias", "mlm.word_embeddings.weight", "nsp.weight",
                       "nsp.bias"])
IDS = torch.tensor([[1, 7, 9, 11, 2, 13, 15, 2], [1, 8, 10, 2, 12, 2, 0, 0]])
MASK = (IDS != 0).long()


def test_default_construction_keeps_its_parameters():
    assert list(DebertaModel(TINY, k=3).state_dict()) == ENCODER_KEYS
    assert list(DebertaForPreTraining(TINY, k=3).state_dict()) == PRETRAINING_KEYS
    no_emd = DebertaForPreTraining(TINY, k=3, enhanced_mask_decoder=False)
    assert list(no_emd.state_dict()) == [n for n in PRETRAINING_KEYS if not n.startswith("emd.")]


def test_explicit_defaults_equal_the_defaults_exactly():
    torch.manual_seed(0)
    default = DebertaForPreTraining(TINY, k=3).eval()
    torch.manual_seed(0)
    explicit = DebertaForPreTraining(TINY, k=3, enhanced_mask_decoder=True,
                                     terms=("c2c", "c2p", "p2c"), share_emd_layer=False).eval()
    a, b = default.state_dict(), explicit.state_dict()
    assert list(a) == list(b) and all(torch.equal(a[n], b[n]) for n in a)
    assert explicit.emd.layer is not explicit.deberta.layer[-1]
    with torch.no_grad():
        for x, y in zip(default(IDS, attention_mask=MASK), explicit(IDS, attention_mask=MASK),
                        strict=True):
            assert torch.equal(x, y)


def test_terms_reach_every_layer():
    torch.manual_seed(0)
    full = DebertaForPreTraining(TINY, k=3).eval()
    torch.manual_seed(0)
    ablated = DebertaForPreTraining(TINY, k=3, terms=("c2p", "c2c")).eval()
    assert ablated.deberta.terms == ("c2c", "c2p")
    assert all(layer.terms == ("c2c", "c2p") for layer in [*ablated.deberta.layer,
                                                             ablated.emd.layer])
    # the same parameters, drawn the same way: only the attention differs
    a, b = full.state_dict(), ablated.state_dict()
    assert all(torch.equal(a[n], b[n]) for n in a)
    for model in (full, ablated):  # N(0, 0.02) leaves attention near uniform: sharpen it
        torch.manual_seed(1)
        for layer in [*model.deberta.layer, model.emd.layer]:
            for m in (layer.query, layer.key, layer.pos_query, layer.pos_key):
                torch.nn.init.normal_(m.weight, std=0.5)
    with torch.no_grad():
        assert (full(IDS)[0] - ablated(IDS)[0]).abs().max() > 1e-3
    layer = DebertaLayer(TINY, k=3, terms=("c2c", "p2c")).double()
    x, p = torch.randn(2, 5, 16, dtype=torch.float64), torch.randn(6, 16, dtype=torch.float64)
    Ws = [m.weight.T for m in (layer.query, layer.key, layer.value, layer.pos_query,
                               layer.pos_key)]
    want = disentangled_attention(x, p, *Ws, k=3, num_heads=2, terms=("c2c", "p2c"))
    assert all(torch.equal(g, w) for g, w in zip(layer.attention(x, p), want, strict=True))


def test_content_only_encoder_ignores_order():
    """terms=("c2c",) leaves no position anywhere: permuting the tokens permutes the output."""
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    ids = torch.randint(5, 40, (2, 6), generator=torch.Generator().manual_seed(0))
    for terms, invariant in ((("c2c",), True), (("c2c", "c2p", "p2c"), False)):
        torch.manual_seed(0)
        model = DebertaModel(TINY, k=2, terms=terms).eval()
        with torch.no_grad():
            out = model(ids).last_hidden_state
            permuted = model(ids[:, perm]).last_hidden_state
        assert torch.allclose(out[:, perm], permuted, atol=1e-5) == invariant


@pytest.mark.parametrize("terms,unused", [(("c2c",), ("pos_query", "pos_key")),
                                          (("c2c", "c2p"), ("pos_query",)),
                                          (("c2c", "p2c"), ("pos_key",))])
def test_unused_position_projection_gets_no_gradient(terms, unused):
    torch.manual_seed(0)
    model = DebertaModel(TINY, k=3, terms=terms)
    model(IDS, attention_mask=MASK).last_hidden_state.pow(2).sum().backward()
    for layer in model.layer:
        for name in ("query", "key", "value", "pos_query", "pos_key"):
            grad = getattr(layer, name).weight.grad
            if name in unused:
                assert grad is None, name
            else:
                assert grad is not None and grad.abs().max() > 0, name
    assert (model.rel_embeddings.weight.grad is None) == (terms == ("c2c",))


@pytest.mark.parametrize("bad", [(), ("c2p", "p2c"), ("c2c", "p2p")])
def test_invalid_terms_and_sharing_raise(bad):
    for cls in (DebertaLayer, DebertaModel, DebertaForPreTraining):
        with pytest.raises(ValueError, match="includes 'c2c'"):
            cls(TINY, 2, terms=bad)
    with pytest.raises(ValueError, match="needs the EMD"):
        DebertaForPreTraining(TINY, 2, enhanced_mask_decoder=False, share_emd_layer=True)
    with pytest.raises(ValueError, match="k=3"):
        EnhancedMaskDecoder(TINY, 2, layer=DebertaLayer(TINY, 3))
    with pytest.raises(ValueError, match="differ"):
        EnhancedMaskDecoder(TINY, 2, layer=DebertaLayer(TINY, 2), terms=("c2c",))


@pytest.mark.parametrize("terms", [("c2c", "c2p", "p2c"), ("c2c", "p2c")])
def test_shared_emd_layer_adds_only_the_position_table(terms):
    torch.manual_seed(0)
    encoder = DebertaModel(TINY, k=3, terms=terms)
    torch.manual_seed(0)
    shared = DebertaForPreTraining(TINY, k=3, terms=terms, share_emd_layer=True)
    without = DebertaForPreTraining(TINY, k=3, terms=terms, enhanced_mask_decoder=False)
    assert shared.emd.layer is shared.deberta.layer[-1]
    count = sum(p.numel() for p in shared.parameters())
    assert count == sum(p.numel() for p in without.parameters()) + 32 * 16
    # the shared layer is initialised once, with the encoder: the same draws as an encoder
    # built alone; only the EMD's position table is (BERT-)initialised after it (and the
    # word embeddings, tied to the MLM head, are re-drawn with it, as without sharing)
    a, b = encoder.state_dict(), shared.deberta.state_dict()
    assert [n for n in a if not torch.equal(a[n], b[n])] == ["embeddings.word_embeddings.weight"]
    assert shared.emd.position_embeddings.weight.std() < 0.05  # N(0, 0.02), not N(0, 1)
    # the EMD runs exactly the encoder's last layer on H + E_pos
    h, p = torch.randn(2, 5, 16), shared.deberta.relative_embeddings()
    pos = shared.emd.position_embeddings.weight[:5]
    assert torch.equal(shared.emd(h, p), shared.deberta.layer[-1](h + pos, p)[0])
    mlm, nsp = shared(IDS, attention_mask=MASK)
    assert mlm.shape == (2, 8, 40) and nsp.shape == (2, 2)


def test_shared_emd_layer_learns_through_both_paths():
    g = torch.Generator().manual_seed(0)
    h, p, target = (torch.randn(*shape, generator=g) for shape in ((2, 8, 16), (6, 16),
                                                                     (2, 8, 16)))

    def step_moves(share, loss_of):
        """How much one SGD step on ``loss_of(model)`` moves the EMD's output on fixed
        inputs and the encoder's output."""
        torch.manual_seed(0)
        model = DebertaForPreTraining(TINY, k=3, share_emd_layer=share)
        with torch.no_grad():
            emd_before, enc_before = model.emd(h, p), model.deberta(IDS).last_hidden_state
        loss_of(model).backward()
        torch.optim.SGD(model.parameters(), lr=10.0).step()
        with torch.no_grad():
            return (float((model.emd(h, p) - emd_before).abs().max()),
                    float((model.deberta(IDS).last_hidden_state - enc_before).abs().max()))

    def nsp_loss(model):  # the encoder path only: the NSP head never sees the EMD
        return F.cross_entropy(model(IDS)[1], torch.tensor([0, 1]))

    def emd_loss(model):  # the EMD path only: fixed inputs, no encoder, no (tied) MLM head
        return (model.emd(h, p) * target).mean()

    assert step_moves(True, nsp_loss)[0] > 1e-4    # the encoder's step moves the EMD
    assert step_moves(False, nsp_loss)[0] == 0     # not when it has a layer of its own
    assert step_moves(True, emd_loss)[1] > 1e-4    # the EMD's step moves the encoder
    assert step_moves(False, emd_loss)[1] == 0
    # in the MLM loss, the shared layer's gradient comes from both of its uses
    torch.manual_seed(0)
    model = DebertaForPreTraining(TINY, k=3, share_emd_layer=True)
    weight = model.deberta.layer[-1].value.weight
    out = model.deberta(IDS)
    both = model.mlm(model.emd(out.last_hidden_state, model.deberta.relative_embeddings()))
    (g_both,) = torch.autograd.grad(both.logsumexp(-1).mean(), weight)
    emd_only = model.mlm(model.emd(out.last_hidden_state.detach(),
                                   model.deberta.relative_embeddings()))
    (g_emd,) = torch.autograd.grad(emd_only.logsumexp(-1).mean(), weight)
    assert g_emd.abs().max() > 0 and (g_both - g_emd).abs().max() > 1e-3 * g_both.abs().max()


# ---- pre-training -----------------------------------------------------------------------

def test_pretraining_heads_are_tied_and_shaped():
    torch.manual_seed(0)
    model = DebertaForPreTraining(TINY, k=4)
    assert model.mlm.word_embeddings is model.deberta.embeddings.word_embeddings
    assert model.mlm.bias.numel() == 40
    batch = collate_pairs(random_pairs(3), 1, 2, 0, 16)
    mlm, nsp = model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])
    assert mlm.shape == (*batch["input_ids"].shape, 40) and nsp.shape == (3, 2)
    predict = batch["input_ids"] > 20
    picked, _ = model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"],
                      predict=predict)
    assert torch.allclose(picked, mlm[predict], atol=1e-6)


def test_pretrain_runs_five_steps():
    torch.manual_seed(0)
    model = DebertaForPreTraining(TINY, k=4)
    history = pretrain(model, random_pairs(40), steps=5, batch_size=8, max_len=16,
                       progress=False, **SPECIAL)
    assert len(history.mlm) == 5 and all(math.isfinite(x) for x in history.mlm + history.nsp)
    assert history.tokens > 0


@pytest.mark.parametrize("emd", [True, False])
def test_training_on_a_fixed_batch_lowers_the_mlm_loss(emd):
    torch.manual_seed(0)
    model = DebertaForPreTraining(TINY, k=4, enhanced_mask_decoder=emd)
    batch = collate_pairs(random_pairs(16, seed=1), 1, 2, 0, 16)
    masked, labels = mask_tokens(batch["input_ids"], 3, 40, SPECIAL["special_ids"], prob=0.3,
                                 generator=torch.Generator().manual_seed(0))
    before = evaluate_pretraining(model, batch, masked, labels)["MLM loss"]
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    predict = labels != -100
    for _ in range(25):
        mlm, _ = model(masked, batch["token_type_ids"], batch["attention_mask"], predict)
        loss = F.cross_entropy(mlm, labels[predict])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    after = evaluate_pretraining(model, batch, masked, labels)["MLM loss"]
    assert after < 0.7 * before


def test_parameter_budget_report():
    bert, deberta = BertForPreTraining(TINY), DebertaForPreTraining(TINY, k=4)
    report = parameter_budget_report(bert, deberta)
    assert report["bert"] == sum(p.numel() for p in bert.parameters())
    assert report["deberta"] == sum(p.numel() for p in deberta.parameters())
    assert report["bert positional"] == 32 * 16
    assert report["deberta positional"] == 8 * 16 + 2 * 16 + 32 * 16
    assert report["difference"] == report["deberta"] - report["bert"]


# ---- SiFT -------------------------------------------------------------------------------

def classifier_and_inputs(encoder_cls, seed=0):
    torch.manual_seed(seed)
    encoder = encoder_cls(TINY)
    clf = SequenceClassifier(encoder, num_labels=3, pooling="pooler").eval()
    torch.nn.init.normal_(clf.classifier.weight, std=3.0)  # outputs that react to inputs
    ids = torch.randint(5, 40, (4, 7))
    mask = torch.tensor([[1] * 7, [1] * 7, [1] * 4 + [0] * 3, [1] * 2 + [0] * 5])
    return clf, ids, mask


@pytest.mark.parametrize("encoder_cls", [BertModel, DebertaModel])
def test_embeddings_forward_reproduces_the_classifier(encoder_cls):
    clf, ids, mask = classifier_and_inputs(encoder_cls)
    emb, forward = embeddings_forward(clf, ids, mask)
    assert emb.shape == (4, 7, 16)
    assert torch.allclose(forward(emb), clf(ids, mask), atol=1e-6)


def test_sift_zero_without_perturbation_and_nonnegative():
    clf, ids, mask = classifier_and_inputs(DebertaModel)
    emb, forward = embeddings_forward(clf, ids, mask)
    logits = forward(F.layer_norm(emb, emb.shape[-1:]))
    assert sift_loss(forward, emb, logits, epsilon=0.0, step_size=0.0).item() < 1e-10
    for eps in (1e-2, 0.3, 3.0):
        loss = sift_loss(forward, emb, logits, epsilon=eps,
                         generator=torch.Generator().manual_seed(1))
        assert loss.item() >= 0
    assert sift_loss(forward, emb, logits, epsilon=3.0).item() > 1e-3
    # scale-invariant: the model sees LayerNorm(e), so rescaling and shifting each token's
    # vector changes nothing, though the model itself does see the difference
    g = torch.Generator().manual_seed(0)
    rescaled = emb * (0.1 + 10 * torch.rand(4, 7, 1, generator=g)) + 3 * torch.randn(4, 7, 1,
                                                                                  generator=g)
    assert sift_loss(forward, rescaled, logits, epsilon=0.0, step_size=0.0).item() < 1e-10
    assert sift_loss(forward, rescaled, forward(rescaled), epsilon=0.0,
                     step_size=0.0).item() > 1e-7


@pytest.mark.parametrize("eps,step", [(1e-2, 1e-3), (0.5, 0.5), (0.1, 10.0)])
def test_sift_perturbation_stays_in_the_epsilon_ball(eps, step):
    clf, ids, mask = classifier_and_inputs(DebertaModel)
    emb, forward = embeddings_forward(clf, ids, mask)
    logits = forward(F.layer_norm(emb, emb.shape[-1:]))
    _, delta = sift_loss(forward, emb, logits, epsilon=eps, step_size=step,
                         generator=torch.Generator().manual_seed(0), return_delta=True)
    norms = delta.norm(dim=-1)
    assert delta.shape == emb.shape and not delta.requires_grad
    assert torch.all(norms <= eps * (1 + 1e-5))
    assert norms.max() > 0.99 * eps  # the ball's boundary is reached, not a tiny step
    if step > eps:  # a step longer than the ball: every token ends on the boundary
        assert torch.allclose(norms[mask.bool()], torch.full_like(norms[mask.bool()], eps),
                              rtol=1e-4)


def test_sift_step_ascends_and_is_seeded():
    clf, ids, mask = classifier_and_inputs(DebertaModel)
    emb, forward = embeddings_forward(clf, ids, mask)
    logits = forward(F.layer_norm(emb, emb.shape[-1:]))
    def run(step, seed=0):
        return sift_loss(forward, emb, logits, epsilon=0.5, step_size=step,
                         generator=torch.Generator().manual_seed(seed), return_delta=True)
    (random_start, d0), (adversarial, d1) = run(0.0), run(0.1)
    descent, _ = run(-0.1)  # a step the other way: the gradient's sign is the ascent's
    assert adversarial.item() > random_start.item() > descent.item()
    assert torch.equal(run(0.1)[1], d1) and not torch.equal(run(0.1, seed=1)[1], d1)
    assert not torch.equal(d0, d1)


@pytest.mark.parametrize("encoder_cls", [BertModel, DebertaModel])
def test_sift_gradients_reach_the_model(encoder_cls):
    clf, ids, mask = classifier_and_inputs(encoder_cls)
    emb, forward = embeddings_forward(clf, ids, mask)
    logits = forward(F.layer_norm(emb, emb.shape[-1:]))
    loss = sift_loss(forward, emb, logits, epsilon=1.0, step_size=0.5,
                     generator=torch.Generator().manual_seed(0))
    loss.backward()
    named = dict(clf.named_parameters())
    assert named["classifier.weight"].grad.abs().sum() > 0
    layer_weights = [n for n in named if n.startswith(("encoder.layer.", "encoder.encoder."))
                     and n.endswith("dense.weight")]
    assert layer_weights and all(named[n].grad.abs().sum() > 0 for n in layer_weights)
    assert named["encoder.embeddings.word_embeddings.weight"].grad.abs().sum() > 0
