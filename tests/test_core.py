"""lmcourse core: device, budget, seeding, show."""

from __future__ import annotations

import inspect

import torch

import lmcourse


def test_device_follows_cuda_availability_and_override(monkeypatch):
    monkeypatch.delenv("LMCOURSE_DEVICE", raising=False)
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert lmcourse.device().type == expected
    monkeypatch.setenv("LMCOURSE_DEVICE", "cpu")
    assert lmcourse.device().type == "cpu" and not lmcourse.on_gpu()


def test_budget_picks_cpu_value_on_cpu(monkeypatch):
    monkeypatch.setenv("LMCOURSE_DEVICE", "cpu")
    assert lmcourse.budget(cpu=10, gpu=1000) == 10
    assert lmcourse.budget(cpu=7) == 7


def test_budget_picks_gpu_value_on_gpu(monkeypatch):
    monkeypatch.setattr(lmcourse, "on_gpu", lambda: True)
    assert lmcourse.budget(cpu=10, gpu=1000) == 1000
    assert lmcourse.budget(cpu=10) == 10


def test_seed_everything_makes_runs_repeatable():
    lmcourse.seed_everything(3)
    a = torch.randn(5)
    g = lmcourse.seed_everything(3)
    assert torch.equal(a, torch.randn(5))
    assert torch.equal(torch.randn(4, generator=g), torch.randn(4, generator=torch.Generator()
                                                                .manual_seed(3)))


def test_show_returns_the_source():
    shown = lmcourse.show(lmcourse.budget)
    text = getattr(shown, "data", shown)
    assert "def budget" in text


def test_progress_bar_is_off_when_asked_or_when_tqdm_disable_is_set(monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    assert not lmcourse.progress_bar(range(3), progress=True).disable
    assert lmcourse.progress_bar(range(3), progress=False).disable
    monkeypatch.setenv("TQDM_DISABLE", "1")
    bar = lmcourse.progress_bar(range(3), progress=True)
    assert bar.disable and list(bar) == [0, 1, 2]  # still iterates, silently


def test_show_names_the_file_and_line_and_shows_every_call(monkeypatch):
    from lmcourse.models import heads

    assert lmcourse.where(heads.best_span) == (
        f"lmcourse/models/heads.py:{inspect.getsourcelines(heads.best_span)[1]}")
    shown = []

    class Shell:  # stands in for a running kernel
        pass

    import IPython
    import IPython.display

    monkeypatch.setattr(IPython, "get_ipython", lambda: Shell())
    monkeypatch.setattr(IPython.display, "display", lambda *objs: shown.extend(objs))
    first, second = lmcourse.show(heads.best_span), lmcourse.show(heads.BertClassifierHead)
    assert len(shown) == 4  # a header and the code, for each call
    assert shown[0].data == f"`{lmcourse.where(heads.best_span)}`"
    assert "def best_span" in shown[1].data and "def best_span" in first
    assert "class BertClassifierHead" in second
    assert second._ipython_display_() is None  # as a cell's last value, nothing more
