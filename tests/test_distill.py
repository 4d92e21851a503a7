"""Distillation losses against hand computations, Hinton's T^2 measured, the DistilBERT
student's initialisation, TinyBERT's layer-wise losses and layer map."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from lmcourse.models.bert import BertConfig, BertModel
from lmcourse.models.compress import count_params
from lmcourse.models.distill import (
    attention_loss,
    combined_loss,
    cosine_embedding_loss,
    distilbert_loss,
    distillation_loss,
    embedding_loss,
    hidden_loss,
    init_student_from_teacher,
    layer_map,
    prediction_loss,
    soft_target_grad_norms,
    softmax_t,
)


@pytest.fixture
def logits() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return (torch.randn(4, 10, generator=g, dtype=torch.float64),
            2 * torch.randn(4, 10, generator=g, dtype=torch.float64))


def test_softmax_t() -> None:
    z = torch.tensor([1.0, 2.0, 4.0])
    torch.testing.assert_close(softmax_t(z, 1.0), torch.softmax(z, -1))
    p = softmax_t(z, 2.0)
    torch.testing.assert_close(p, torch.exp(z / 2) / torch.exp(z / 2).sum())
    assert softmax_t(z, 100.0).max() - softmax_t(z, 100.0).min() < 0.02  # nearly uniform
    with pytest.raises(ValueError):
        softmax_t(z, 0.0)


def test_distillation_loss_by_hand(logits) -> None:
    s, t = logits
    T = 3.0
    total = 0.0
    for b in range(s.shape[0]):  # plain loops, no torch softmax
        zt = [math.exp(v / T) for v in t[b].tolist()]
        zs = [math.exp(v / T) for v in s[b].tolist()]
        q = [v / sum(zt) for v in zt]
        p = [v / sum(zs) for v in zs]
        total += -sum(qi * math.log(pi) for qi, pi in zip(q, p, strict=True))
    assert distillation_loss(s, t, T).item() == pytest.approx(total / s.shape[0], rel=1e-12)


def test_confident_teacher_is_cross_entropy(logits) -> None:
    s, _ = logits
    labels = torch.tensor([3, 0, 9, 5])
    t = 1e4 * F.one_hot(labels, 10).double()
    torch.testing.assert_close(distillation_loss(s, t, 1.0), F.cross_entropy(s, labels))


def test_minimum_at_teacher_logits(logits) -> None:
    _, t = logits
    T = 2.0
    s = t.clone().requires_grad_(True)
    at_teacher = distillation_loss(s, t, T)
    (grad,) = torch.autograd.grad(at_teacher, s)
    assert grad.abs().max() < 1e-12
    g = torch.Generator().manual_seed(1)
    for _ in range(5):
        other = t + 0.3 * torch.randn(t.shape, generator=g, dtype=t.dtype)
        assert distillation_loss(other, t, T) > at_teacher
    # the minimum value is the teacher's entropy: the KL divergence is then 0
    q = softmax_t(t, T)
    assert at_teacher.item() == pytest.approx(-(q * q.log()).sum(-1).mean().item())


def test_wrong_variants_differ(logits) -> None:
    """Each mistake a lab check has to catch gives another value."""
    s, t = logits
    T = 2.0
    right = distillation_loss(s, t, T).item()
    p, q = softmax_t(s, T), softmax_t(t, T)
    reversed_ce = -(p * F.log_softmax(t / T, -1)).sum(-1).mean().item()  # roles swapped
    reversed_kl = (p * (p.log() - q.log())).sum(-1).mean().item()  # KL(p || q)
    teacher_at_1 = -(softmax_t(t, 1.0) * F.log_softmax(s / T, -1)).sum(-1).mean().item()
    student_at_1 = -(q * F.log_softmax(s, -1)).sum(-1).mean().item()
    for wrong in (reversed_ce, reversed_kl, teacher_at_1, student_at_1):
        assert abs(wrong - right) > 1e-3
    # the right KL direction differs from it only by the teacher's entropy
    kl = (q * (q.log() - p.log())).sum(-1).mean().item()
    assert kl == pytest.approx(right + (q * q.log()).sum(-1).mean().item())


def test_no_gradient_into_teacher(logits) -> None:
    s, t = logits
    t = t.clone().requires_grad_(True)
    distillation_loss(s.requires_grad_(True), t, 2.0).backward()
    assert t.grad is None


def test_t_squared_keeps_gradient_scale(logits) -> None:
    """Hinton et al.: d L_d / d s falls like 1/T^2; times T^2 it levels off."""
    s, t = logits
    temps = [4.0, 8.0, 16.0, 32.0, 64.0]
    scaled = soft_target_grad_norms(s, t, temps, scale_t2=True)
    plain = soft_target_grad_norms(s, t, temps, scale_t2=False)
    # the limit: ||(s - t) - mean(s - t)|| / (C B)
    d = s - t
    limit = ((d - d.mean(-1, keepdim=True)).norm() / d.numel()).item()
    assert scaled[-1] == pytest.approx(limit, rel=0.01)
    assert max(scaled[1:]) / min(scaled[1:]) < 1.1  # roughly constant for T >= 8
    for a, b in zip(plain[1:], plain[2:], strict=False):
        assert a / b == pytest.approx(4.0, rel=0.05)  # doubling T quarters it
    assert plain[1] / plain[-1] > 50


def test_combined_loss(logits) -> None:
    s, t = logits
    labels = torch.tensor([1, 2, 3, 4])
    T, a, b = 4.0, 0.7, 0.3
    value = combined_loss(s, t, labels, T, a, b)
    expected = a * T**2 * distillation_loss(s, t, T) + b * F.cross_entropy(s, labels)
    torch.testing.assert_close(value, expected)
    only_soft = combined_loss(s, t, labels, T, 1.0, 0.0)
    assert only_soft.item() == pytest.approx(T**2 * distillation_loss(s, t, T).item())


def test_cosine_embedding_loss() -> None:
    g = torch.Generator().manual_seed(2)
    h = torch.randn(2, 5, 8, generator=g)
    assert cosine_embedding_loss(h, 3 * h).item() == pytest.approx(0.0, abs=1e-6)
    assert cosine_embedding_loss(h, -h).item() == pytest.approx(2.0, abs=1e-6)
    other = h.clone()
    other[:, 3:] = -h[:, 3:]  # only padding differs
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 0, 0]])
    assert cosine_embedding_loss(h, other, mask).item() == pytest.approx(0.0, abs=1e-6)
    assert cosine_embedding_loss(h, other).item() == pytest.approx(0.8, abs=1e-6)


def test_distilbert_loss() -> None:
    g = torch.Generator().manual_seed(3)
    s, t = torch.randn(2, 5, 12, generator=g), torch.randn(2, 5, 12, generator=g)
    hs, ht = torch.randn(2, 5, 8, generator=g), torch.randn(2, 5, 8, generator=g)
    labels = torch.full((2, 5), -100)
    labels[0, 1], labels[1, 2] = 4, 7
    mask = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]])
    out = distilbert_loss(s, t, labels, hs, ht, mask)
    keep = mask.bool()
    torch.testing.assert_close(out.distill, distillation_loss(s[keep], t[keep], 2.0))
    torch.testing.assert_close(out.mlm, F.cross_entropy(s[labels != -100], labels[labels != -100]))
    torch.testing.assert_close(out.cos, cosine_embedding_loss(hs, ht, mask))
    torch.testing.assert_close(out.total, 5.0 * 4 * out.distill + 2.0 * out.mlm + 1.0 * out.cos)


@pytest.fixture
def teacher() -> BertModel:
    torch.manual_seed(0)
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=6,
                        num_attention_heads=2, intermediate_size=32, max_position_embeddings=20)
    return BertModel(config).double().eval()


def _layer_params(H: int, I: int) -> int:
    # Q, K, V, attention output: 4(H^2 + H); FFN: HI + I + IH + H; two LayerNorms: 4H
    return 4 * (H * H + H) + (H * I + I + I * H + H) + 4 * H


def test_init_student_from_teacher(teacher) -> None:
    student = init_student_from_teacher(teacher)
    assert student.config.num_hidden_layers == 3
    assert student.pooler is None and student.embeddings.token_type_embeddings is None
    assert student.config.type_vocab_size == 0 and not student.config.pooler
    for j, i in enumerate([0, 2, 4]):
        s_state = student.encoder.layer[j].state_dict()
        for name, value in teacher.encoder.layer[i].state_dict().items():
            assert torch.equal(s_state[name], value), (j, i, name)
    # not a copy of an odd layer
    assert not torch.equal(student.encoder.layer[1].output.dense.weight,
                           teacher.encoder.layer[1].output.dense.weight)
    for name in ("word_embeddings", "position_embeddings", "LayerNorm"):
        for key, value in getattr(teacher.embeddings, name).state_dict().items():
            assert torch.equal(getattr(student.embeddings, name).state_dict()[key], value)
    # the copies are independent tensors
    assert student.encoder.layer[0].output.dense.weight.data_ptr() != \
        teacher.encoder.layer[0].output.dense.weight.data_ptr()
    c = teacher.config
    H, I, V, P = c.hidden_size, c.intermediate_size, c.vocab_size, c.max_position_embeddings
    embeddings = V * H + P * H + 2 * H  # words, positions, LayerNorm
    assert count_params(teacher) == (embeddings + c.type_vocab_size * H + 6 * _layer_params(H, I)
                                     + H * H + H)
    assert count_params(student) == embeddings + 3 * _layer_params(H, I)
    ids = torch.randint(1, 50, (2, 7))
    out = student(ids, torch.ones_like(ids))
    assert out.pooler_output is None and len(out.hidden_states) == 4
    assert student(ids).last_hidden_state.dtype == torch.float64


def test_init_student_choices(teacher) -> None:
    student = init_student_from_teacher(teacher, layers=[0, 3, 5])
    assert torch.equal(student.encoder.layer[2].output.dense.weight,
                       teacher.encoder.layer[5].output.dense.weight)
    assert init_student_from_teacher(teacher, num_layers=2).config.num_hidden_layers == 2
    with pytest.raises(ValueError):
        init_student_from_teacher(teacher, num_layers=4)  # every other of 6 gives at most 3
    with pytest.raises(ValueError):
        init_student_from_teacher(teacher, layers=[0, 6])


def test_tinybert_losses_zero_when_equal(teacher) -> None:
    ids = torch.randint(1, 50, (2, 7))
    out = teacher(ids)
    h, a = out.hidden_states[2], out.attentions[1]
    assert embedding_loss(out.hidden_states[0], out.hidden_states[0]).item() == 0.0
    assert hidden_loss(h, h).item() == 0.0
    assert hidden_loss(h, h, torch.eye(16, dtype=h.dtype)).item() == 0.0
    assert attention_loss(a, a).item() == 0.0
    logits = torch.randn(2, 5, dtype=torch.float64)
    q = softmax_t(logits, 1.0)
    assert prediction_loss(logits, logits).item() == pytest.approx(
        -(q * q.log()).sum(-1).mean().item())  # its minimum, the teacher's entropy
    # positive otherwise
    assert embedding_loss(out.hidden_states[0], out.hidden_states[1]).item() > 0
    assert hidden_loss(h, out.hidden_states[3]).item() > 0
    assert attention_loss(a, out.attentions[2]).item() > 0
    assert prediction_loss(logits + torch.randn(2, 5, dtype=torch.float64), logits).item() > \
        prediction_loss(logits, logits).item()


def test_hidden_loss_projection() -> None:
    """``W_h`` lifts the student width d' to the teacher width d and is trained by it."""
    g = torch.Generator().manual_seed(4)
    hs, ht = torch.randn(2, 5, 4, generator=g), torch.randn(2, 5, 8, generator=g)
    proj = nn.Linear(4, 8)
    loss = hidden_loss(hs, ht, proj)
    torch.testing.assert_close(loss, ((proj(hs) - ht) ** 2).mean())
    loss.backward()
    assert proj.weight.grad is not None and proj.weight.grad.abs().sum() > 0
    assert hidden_loss(hs, hs @ proj.weight.T.detach(), proj.weight.T.detach()).item() == 0.0
    with pytest.raises(ValueError):
        attention_loss(torch.rand(1, 2, 3, 3), torch.rand(1, 4, 3, 3))


def test_layer_map() -> None:
    assert layer_map(4, 12) == [0, 3, 6, 9, 12]
    assert layer_map(6, 12) == [0, 2, 4, 6, 8, 10, 12]
    assert layer_map(3, 3) == [0, 1, 2, 3]
    with pytest.raises(ValueError):
        layer_map(13, 12)


def test_train_student_follows_its_loss_on_balanced_batches():
    from lmcourse.finetune import SequenceClassifier
    from lmcourse.models.distill import train_student

    torch.manual_seed(0)
    config = BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=32, max_position_embeddings=8)
    student = SequenceClassifier(BertModel(config), dropout=0.0)
    ids = torch.randint(5, 30, (40, 6))
    labels = (torch.arange(40) < 8).long()  # 8 positives, 32 negatives
    target = torch.randn(40, 2) * 3  # "teacher logits", looked up by row
    seen = []

    def loss(model, batch_ids, mask, batch_labels, rows):
        seen.append(batch_labels.float().mean().item())
        return distillation_loss(model(batch_ids, mask), target[rows], 1.0)

    before = distillation_loss(student(ids, torch.ones_like(ids)), target, 1.0).item()
    losses = train_student(student, (ids, torch.ones_like(ids), labels), loss, steps=60,
                           batch_size=8, lr=3e-3, progress=False)
    after = distillation_loss(student(ids, torch.ones_like(ids)), target, 1.0).item()
    assert len(losses) == 60 and set(seen) == {0.5} and after < before
    assert not student.training


def test_train_student_stop_after_repeats_the_first_steps_of_the_full_schedule():
    from lmcourse.finetune import SequenceClassifier
    from lmcourse.models.distill import train_student

    config = BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=32, max_position_embeddings=8)
    ids = torch.randint(5, 30, (40, 6), generator=torch.Generator().manual_seed(1))
    labels = (torch.arange(40) < 8).long()

    def loss(model, batch_ids, mask, batch_labels, rows):
        return torch.nn.functional.cross_entropy(model(batch_ids, mask), batch_labels)

    runs = []
    for stop in (None, 5):
        torch.manual_seed(0)
        student = SequenceClassifier(BertModel(config), dropout=0.0)
        runs.append(train_student(student, (ids, torch.ones_like(ids), labels), loss,
                                  steps=40, batch_size=8, lr=3e-3, progress=False,
                                  stop_after=stop))
    full, first = runs
    assert len(full) == 40 and len(first) == 5 and first == full[:5]
