"""ELMo pieces: highway limits, char-CNN pooling, biLM directions, joint loss, scalar mix."""

import pytest
import torch
from torch import nn

from lmcourse.models.elmo import (
    BOW,
    EOW,
    PAD,
    BiLM,
    CharCNN,
    Highway,
    ScalarMix,
    bilm_losses,
    encode_chars,
    evaluate_bilm,
    fit_bilm,
    nearest_neighbour_accuracy,
)


def test_highway_limits():
    torch.manual_seed(0)
    x = torch.randn(5, 8)
    carry = Highway(8, gate_bias=-50.0)  # t = sigmoid(-50 + ...) ~ 0: y = x
    assert torch.allclose(carry(x), x, atol=1e-6)
    transform = Highway(8, gate_bias=50.0)  # t ~ 1: y = relu(W_H x + b_H)
    assert torch.allclose(transform(x), torch.relu(transform.transform(x)), atol=1e-6)
    # in between: the convex combination written out by hand
    mid = Highway(8, gate_bias=0.0)
    t = torch.sigmoid(x @ mid.gate.weight.T + mid.gate.bias)
    ref = t * torch.relu(x @ mid.transform.weight.T + mid.transform.bias) + (1 - t) * x
    assert torch.allclose(mid(x), ref, atol=1e-6)


def test_encode_chars_layout():
    c = encode_chars(["ab", "x" * 30], max_chars=6)
    assert c[0].tolist() == [BOW, ord("a") + 3, ord("b") + 3, EOW, PAD, PAD]
    assert c[1, 0] == BOW and c[1, -1] == EOW and c.shape == (2, 6)


def test_charcnn_shapes_and_max_pool():
    torch.manual_seed(0)
    enc = CharCNN(12, char_dim=4, filters=((1, 3), (2, 5)), num_highway=2)
    chars = encode_chars(["the", "cat", "sat", "the"], 8).view(2, 2, 8)
    out = enc(chars)
    assert out.shape == (2, 2, 12)
    assert torch.allclose(out[0, 0], out[1, 1])  # same word, same vector
    pooled = enc.pooled(encode_chars(["cat"], 8))
    assert pooled.shape == (1, 8)
    # reference: per-position conv outputs by unfold, then the max over positions
    e = enc.embed(encode_chars(["cat"], 8))[0]  # C x d
    conv = enc.convs[1]
    windows = e.unfold(0, 2, 1)  # positions x d x 2
    per_pos = torch.einsum("pdw,ndw->pn", windows, conv.weight) + conv.bias
    assert torch.allclose(pooled[0, 3:], torch.relu(per_pos).amax(0), atol=1e-5)
    # Kim et al.'s tanh is an option; the released ELMo (and our default) use relu
    with torch.no_grad():
        enc.activation = torch.tanh
        assert torch.allclose(enc.pooled(encode_chars(["cat"], 8))[0, 3:],
                              torch.tanh(per_pos).amax(0), atol=1e-5)
    tanh_enc = CharCNN(12, char_dim=4, filters=((1, 3), (2, 5)), activation="tanh")
    assert tanh_enc.activation is torch.tanh and CharCNN(12).activation is torch.relu
    with pytest.raises(ValueError, match="activation must be one of"):
        CharCNN(12, activation="gelu")


def _model():
    torch.manual_seed(0)
    return BiLM(30, dim=8, hidden=12, num_layers=2, char_dim=4, filters=((1, 4), (2, 4)))


def test_bilm_directions_do_not_see_the_wrong_side():
    model = _model().eval()
    words = [f"w{i}" for i in range(7)]
    chars = encode_chars(words, 6)[None]
    changed = chars.clone()
    changed[0, 3] = encode_chars(["zzz"], 6)[0]
    with torch.no_grad():
        _, f1, b1 = model.directional_states(chars)
        _, f2, b2 = model.directional_states(changed)
    for j in range(2):
        assert torch.equal(f1[j][0, :3], f2[j][0, :3])  # forward: past only
        assert torch.equal(b1[j][0, 4:], b2[j][0, 4:])  # backward: future only
        assert (f1[j][0, 3:] - f2[j][0, 3:]).abs().max() > 1e-4
        assert (b1[j][0, :4] - b2[j][0, :4]).abs().max() > 1e-4
    reps = model.layers(chars)
    assert reps.shape == (3, 1, 7, 16)
    assert torch.equal(reps[0, ..., :8], reps[0, ..., 8:])


def test_joint_loss_is_sum_of_directional_cross_entropies():
    model = _model()
    torch.manual_seed(1)
    words = torch.randint(0, 30, (3, 6))
    chars = encode_chars([f"w{i}" for i in range(30)], 6)[words]
    loss_f, loss_b = bilm_losses(model, chars, words)
    logits_f, logits_b = model(chars)
    ref_f = torch.stack([nn.functional.cross_entropy(logits_f[b, k], words[b, k + 1])
                         for b in range(3) for k in range(5)]).mean()
    ref_b = torch.stack([nn.functional.cross_entropy(logits_b[b, k], words[b, k - 1])
                         for b in range(3) for k in range(1, 6)]).mean()
    assert torch.allclose(loss_f, ref_f) and torch.allclose(loss_b, ref_b)
    assert torch.allclose(loss_f + loss_b, ref_f + ref_b)


def test_scalar_mix_init_is_mean_and_weights_sum_to_one():
    layers = torch.randn(3, 2, 4, 6)
    mix = ScalarMix(3)
    assert torch.allclose(mix(layers), layers.mean(0), atol=1e-6)
    with torch.no_grad():
        mix.s.copy_(torch.tensor([0.3, -2.0, 1.5]))
        mix.gamma.fill_(2.0)
    w = mix.weights
    assert abs(float(w.sum().detach()) - 1) < 1e-6
    ref = 2.0 * sum(torch.softmax(mix.s.detach(), 0)[j] * layers[j] for j in range(3))
    assert torch.allclose(mix(layers), ref, atol=1e-6)


def test_nearest_neighbour_accuracy():
    feats = torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    assert nearest_neighbour_accuracy(feats, torch.tensor([0, 0, 1, 1])) == 1.0
    assert nearest_neighbour_accuracy(feats, torch.tensor([0, 1, 0, 1])) == 0.0


def test_charcnn_encodes_each_word_on_its_own():
    torch.manual_seed(0)
    enc = CharCNN(6, char_dim=4, filters=((1, 3), (3, 4)), num_highway=1)
    words = ["bank", "west", "bank", "fire", "a"]
    together = enc(encode_chars(words, 8))
    alone = torch.cat([enc(encode_chars([w], 8)) for w in words])
    assert torch.allclose(together, alone, atol=1e-6)


def test_dropout_is_off_in_eval_and_changes_training_outputs():
    torch.manual_seed(0)
    model = BiLM(30, dim=8, hidden=12, dropout=0.5, char_dim=4, filters=((1, 4), (2, 4)))
    chars = encode_chars([f"w{i}" for i in range(6)], 6)[None]
    model.eval()
    with torch.no_grad():
        a, b = model(chars)[0], model(chars)[0]
        model.train()
        c = model(chars)[0]
    assert torch.equal(a, b) and not torch.allclose(a, c)


def test_fit_bilm_lowers_the_loss_and_reports_throughput():
    model = _model()
    torch.manual_seed(2)
    words = torch.randint(0, 30, (8, 6))
    chars = encode_chars([f"w{i}" for i in range(30)], 6)[words]
    batches = [(chars[:4], words[:4]), (chars[4:], words[4:])]
    hist = fit_bilm(model, batches, epochs=8, lr=1e-2, val=batches)
    assert hist["train_fwd"][-1] < hist["train_fwd"][0]
    assert hist["val_bwd"][-1] < hist["val_bwd"][0]
    assert len(hist["tokens_per_s"]) == 8 and min(hist["tokens_per_s"]) > 0


def test_evaluate_bilm_weights_every_word_equally_whatever_the_batches():
    model = _model()
    torch.manual_seed(1)
    chars = torch.randint(3, 20, (4, 7, 6))
    words = torch.randint(0, 30, (4, 7))
    whole = evaluate_bilm(model, [(chars, words)])
    split = evaluate_bilm(model, [(chars[:3], words[:3]), (chars[3:], words[3:])])
    assert split == pytest.approx(whole, rel=1e-5)  # a mean of batch means would differ
    assert model.training  # evaluation puts the model back in training mode
