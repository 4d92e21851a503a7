"""The cached spoiler teacher: trained once, then loaded; a damaged cache is retrained."""

from __future__ import annotations

import pytest
import torch

from lmcourse import finetune
from lmcourse.course import teacher
from lmcourse.models.distill import half_depth_student


@pytest.fixture
def small_data():
    data = teacher.spoiler_data()
    spoilers = [row for row in data.train if row[1]][:16]
    others = [row for row in data.train if not row[1]][:48]
    return teacher.SpoilerData(spoilers + others, data.validation[:8], data.test[:8],
                               data.tokenizer)


def test_the_teacher_is_trained_once_then_loaded(small_data, tmp_path, monkeypatch):
    monkeypatch.setenv(teacher.CACHE_ENV, str(tmp_path))
    first = teacher.spoiler_teacher(small_data, steps=2, progress=False)
    files = list(tmp_path.glob("spoiler-teacher-*.safetensors"))
    assert len(files) == 1 and not list(tmp_path.glob("*.tmp"))

    def no_training(*args, **kwargs):
        raise AssertionError("the cached teacher was trained again")

    monkeypatch.setattr(finetune, "fit", no_training)
    second = teacher.spoiler_teacher(small_data, steps=2, progress=False)
    for a, b in zip(first.state_dict().values(), second.state_dict().values(), strict=True):
        assert torch.equal(a.cpu(), b.cpu())
    # another recipe (more steps) is another file, so it would be trained
    with pytest.raises(AssertionError, match="trained again"):
        teacher.spoiler_teacher(small_data, steps=3, progress=False)


def test_a_damaged_cache_file_is_retrained(small_data, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(teacher.CACHE_ENV, str(tmp_path))
    teacher.spoiler_teacher(small_data, steps=1, progress=False)
    (path,) = tmp_path.glob("spoiler-teacher-*.safetensors")
    path.write_bytes(b"not a safetensors file")
    model = teacher.spoiler_teacher(small_data, steps=1, progress=False)
    assert "could not be read" in capsys.readouterr().out
    assert isinstance(model, finetune.SequenceClassifier) and path.stat().st_size > 1000


def test_half_depth_students_and_their_pool(small_data, tmp_path, monkeypatch):
    monkeypatch.setenv(teacher.CACHE_ENV, str(tmp_path))
    model = teacher.spoiler_teacher(small_data, steps=1, progress=False)
    student = half_depth_student(model)
    layers = student.encoder.encoder.layer
    assert len(layers) == 3
    for j in range(3):
        for a, b in zip(layers[j].parameters(), model.encoder.encoder.layer[2 * j].parameters(),
                        strict=True):
            assert torch.equal(a, b)
    random_student = half_depth_student(model, "random")
    assert not torch.equal(random_student.encoder.encoder.layer[0].attention.self.query.weight,
                           layers[0].attention.self.query.weight)
    assert torch.equal(random_student.classifier.weight, model.classifier.weight)
    assert not any(p.requires_grad for p in student.encoder.embeddings.parameters())
    with pytest.raises(ValueError, match="every other"):
        half_depth_student(model, "odd")

    (ids, mask, labels), logits = teacher.distillation_pool(small_data, model)
    assert int(labels.sum()) == 16 and len(labels) == 16 + 24  # 1.5 others per spoiler
    with torch.no_grad():
        direct = model(ids[:4], mask[:4])
    assert torch.allclose(logits[:4], direct, atol=1e-5)
    # kept in the cache: read back the same, and another teacher is another entry
    assert len(list(tmp_path.glob("distillation-pool-*.safetensors"))) == 1
    assert torch.equal(teacher.distillation_pool(small_data, model)[1], logits)
    with torch.no_grad():
        model.classifier.bias.add_(1.0)
    shifted = teacher.distillation_pool(small_data, model)[1]
    assert len(list(tmp_path.glob("distillation-pool-*.safetensors"))) == 2
    assert torch.allclose(shifted, logits + 1.0, atol=1e-5)


def test_the_teacher_leaves_the_callers_random_generators_alone(small_data, tmp_path,
                                                                 monkeypatch):
    import random

    import numpy as np

    monkeypatch.setenv(teacher.CACHE_ENV, str(tmp_path))

    def draws_after(call) -> tuple:
        torch.manual_seed(7), np.random.seed(7), random.seed(7)
        call()
        return torch.rand(3).tolist(), np.random.rand(3).tolist(), random.random()

    untouched = draws_after(lambda: None)
    cold = draws_after(lambda: teacher.spoiler_teacher(small_data, steps=2, progress=False))
    warm = draws_after(lambda: teacher.spoiler_teacher(small_data, steps=2, progress=False))
    assert cold == warm == untouched
