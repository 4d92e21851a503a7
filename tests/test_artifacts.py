"""The artifacts layer: keys, the cache (lock, misses, damage), the registry, first-steps
checks, random generators left alone, and the wall between model code and the harness."""

from __future__ import annotations

import ast
import random
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from lmcourse.course import artifact_jobs, artifacts, cache
from lmcourse.course.keys import digest, recipe_key

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def cache_in(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    return tmp_path


# ---- keys --------------------------------------------------------------------------------------

def test_digest_is_canonical_and_tells_types_apart(tmp_path):
    assert digest([1, 2, (3, "a")]) == digest((1, 2, [3, "a"]))  # lists and tuples alike
    assert digest({"a": 1, "b": [2.5]}) == digest({"b": [2.5], "a": 1})  # key order
    assert len({digest(x) for x in (1, 1.0, "1", True, None, [1], [[1]], b"1")}) == 8
    assert digest([0.1 + 0.2]) != digest([0.3])  # floats exactly
    t = torch.arange(6.0).view(2, 3)
    assert digest(t) == digest(t.clone()) == digest(t.t().contiguous().t())  # not the layout
    assert digest(t) != digest(t.double()) and digest(t) != digest(t.view(3, 2))
    assert digest(t) != digest(t.numpy())  # a tensor is not an array
    assert digest(torch.nn.Linear(2, 2).requires_grad_(False)) != digest(torch.nn.Linear(2, 2))
    X = sp.random(20, 20, density=0.2, random_state=0, format="coo")
    assert digest(X) == digest(X.tocsr()) == digest(X.tocsc())
    Y = X.tocsr(copy=True)
    Y.data[0] += 1
    assert digest(X) != digest(Y)
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(b"same bytes")
    b.write_bytes(b"same bytes")
    assert digest(a) == digest(b) != digest(str(a))  # a Path by content, a str as text
    with pytest.raises(TypeError, match="cannot hash"):
        digest(object())


def test_recipe_key_covers_name_recipe_device_and_torch(monkeypatch):
    key = recipe_key("x", {"lr": 0.1}, "cpu")
    assert len(key) == 16 and key == recipe_key("x", {"lr": 0.1}, torch.device("cpu"))
    others = {recipe_key("y", {"lr": 0.1}, "cpu"), recipe_key("x", {"lr": 0.2}, "cpu"),
              recipe_key("x", {"lr": 0.1}, "cuda")}
    monkeypatch.setattr(torch, "__version__", "0.0.1")
    others.add(recipe_key("x", {"lr": 0.1}, "cpu"))
    assert key not in others and len(others) == 4


# ---- the cache ---------------------------------------------------------------------------------

def test_a_miss_says_what_and_how_long_a_hit_is_silent_a_damaged_file_is_loud(cache_in, capsys):
    calls = []

    def compute():
        calls.append(1)
        return {"w": torch.arange(3.0)}

    first = cache.cached_tensors("demo", {"n": 3}, compute, what="the demo",
                                 estimate="about 1 s on a 2-core CPU", device="cpu")
    out = capsys.readouterr().out
    assert "the demo: not in the course cache" in out and "about 1 s on a 2-core CPU" in out
    assert "make teacher" in out
    again = cache.cached_tensors("demo", {"n": 3}, compute, device="cpu")
    assert capsys.readouterr().out == "" and len(calls) == 1
    assert torch.equal(first["w"], again["w"])
    (path,) = cache_in.glob("demo-*.safetensors")
    assert not list(cache_in.glob("*.tmp"))  # written atomically, nothing left behind
    path.write_bytes(b"\x00garbage")
    cache.cached_tensors("demo", {"n": 3}, compute, device="cpu")
    assert "could not be read" in capsys.readouterr().out and len(calls) == 2
    cache.cached_tensors("demo", {"n": 4}, compute, device="cpu")  # another recipe
    assert len(calls) == 3 and len(list(cache_in.glob("demo-*.safetensors"))) == 2
    assert cache.cache_dir() == cache_in.resolve()


def test_a_second_process_says_it_waits_for_the_lock(cache_in, capsys, monkeypatch):
    path = cache.cache_path("slow", {"n": 1}, "cpu")
    path.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from filelock import FileLock
        with FileLock({str(path.with_suffix('.lock'))!r}):
            print('held', flush=True)
            time.sleep(1.5)
        """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setattr(cache, "WAIT_NOTICE_S", 0.1)
        start = time.perf_counter()
        cache.cached_tensors("slow", {"n": 1}, lambda: {"w": torch.zeros(1)}, what="the slow one",
                             device="cpu")
        assert time.perf_counter() - start > 0.5  # it did wait for the other process
        assert "waiting for another notebook computing the slow one" in capsys.readouterr().out
    finally:
        holder.wait(timeout=10)


def test_keeps_rng_restores_every_generator():
    torch.manual_seed(3), np.random.seed(3), random.seed(3)
    with cache.keeps_rng():
        torch.manual_seed(0), np.random.seed(0), random.seed(0)
        torch.rand(5), np.random.rand(5), random.random()
    after = torch.rand(2).tolist(), np.random.rand(2).tolist(), random.random()
    torch.manual_seed(3), np.random.seed(3), random.seed(3)
    assert after == (torch.rand(2).tolist(), np.random.rand(2).tolist(), random.random())


# ---- the registry ------------------------------------------------------------------------------

def _draws_after(call) -> tuple:
    torch.manual_seed(11), np.random.seed(11), random.seed(11)
    call()
    return torch.rand(3).tolist(), np.random.rand(3).tolist(), random.random()


@pytest.mark.parametrize("name", list(artifacts.ARTIFACTS))
def test_each_artifact_leaves_the_rng_alone_cold_and_warm_and_passes_its_first_steps_check(
        name, cache_in, capsys):
    artifact = artifacts.ARTIFACTS[name]
    assert artifact.estimate.startswith("about ") and "2-core CPU" in artifact.estimate
    untouched = _draws_after(lambda: None)
    cold = _draws_after(lambda: artifact.build(tiny=True))
    assert "not in the course cache" in capsys.readouterr().out
    assert list(cache_in.glob("*.safetensors"))
    warm = _draws_after(lambda: artifact.build(tiny=True))
    assert "not in the course cache" not in capsys.readouterr().out
    assert cold == warm == untouched
    assert artifact.check(tiny=True) < 1e-3
    assert "first" not in capsys.readouterr().out  # the check's line goes to the log
    assert "steps trained here" in (cache_in / "harness.log").read_text()


def test_first_steps_check_fails_loudly_on_another_run():
    assert artifacts.check_first_steps([1.0, 0.9], [1.0, 0.9, 0.5], "demo") == 0.0
    with pytest.raises(AssertionError, match="not computed by this recipe"):
        artifacts.check_first_steps([1.0, 0.8], [1.0, 0.9, 0.5], "demo")
    with pytest.raises(AssertionError, match="cached"):
        artifacts.check_first_steps([1.0, 0.8], [1.0], "demo")


def test_glove_until_flat_is_cached_by_recipe_and_matrix(cache_in, monkeypatch):
    from lmcourse.models import embeddings as E

    rng = np.random.default_rng(0)
    X = E.cooccurrence([rng.integers(0, 16, 400) for _ in range(3)], 16, 2, weighting="harmonic")
    settings = dict(seeds=(0, 1), dim=6, lr=0.05, tol=0.01, max_epochs=40, x_max=10,
                    batch_size=64, progress=False, track=lambda v: float(v.sum()),
                    track_name="sum")
    first = artifacts.glove_until_flat(X, **settings)
    assert len(list(cache_in.glob("glove-*.safetensors"))) == 2
    for run in first:  # tracked after every epoch, and the last value is the final vectors'
        assert len(run.tracked) == len(run.losses)
        assert run.tracked[-1] == pytest.approx(float(run.vectors.sum()), rel=1e-6)
    fresh = E.train_glove(X, dim=6, epochs=40, lr=0.05, x_max=10, batch_size=64, seed=1,
                          tol=0.01)
    np.testing.assert_array_equal(first[1].vectors, fresh.vectors)

    def no_training(*args, **kwargs):
        raise AssertionError("trained again")

    monkeypatch.setattr(artifacts, "train_glove", no_training)
    again = artifacts.glove_until_flat(X, **settings)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a.vectors, b.vectors)
        assert a.losses == b.losses and a.tracked == b.tracked
    other = X.tocsr(copy=True)
    other.data[0] += 1  # another matrix is another cache entry
    with pytest.raises(AssertionError, match="trained again"):
        artifacts.glove_until_flat(other, **settings)
    with pytest.raises(ValueError, match="track_name"):
        artifacts.glove_until_flat(X, track=lambda v: 0.0)


def test_text8_word2vec_is_cached_by_corpus_and_equals_a_fresh_run(cache_in, monkeypatch):
    from lmcourse.data import WordCorpus
    from lmcourse.models import embeddings as E

    rng = np.random.default_rng(1)
    documents = [[f"w{i}" for i in rng.integers(0, 12, 300)] for _ in range(2)]
    corpus = WordCorpus.from_documents(documents, min_count=5)
    settings = dict(seeds=(0, 1), epochs=2, dim=4, device="cpu")
    first = artifacts.text8_word2vec(corpus, documents, **settings)
    assert {k: len(v) for k, v in first.items()} == {
        "skip-gram (ours)": 1, "CBOW (ours)": 1, "gensim skip-gram": 2, "gensim CBOW": 2}
    fresh = E.train_word2vec(corpus, dim=4, window=5, negative=5, epochs=2, sample=1e-3)
    np.testing.assert_array_equal(first["skip-gram (ours)"][0].vectors, fresh.vectors)
    assert first["skip-gram (ours)"][0].losses == fresh.losses
    assert all(r.seconds > 0 for runs in first.values() for r in runs)

    def no_training(*args, **kwargs):
        raise AssertionError("trained again")

    monkeypatch.setattr(artifacts, "train_word2vec", no_training)
    monkeypatch.setattr(artifacts, "gensim_word2vec", no_training)
    again = artifacts.text8_word2vec(corpus, documents, **settings)
    for name, runs in first.items():
        for a, b in zip(runs, again[name], strict=True):
            np.testing.assert_array_equal(a.vectors, b.vectors)
    other = WordCorpus.from_documents([d[::-1] for d in documents], min_count=5)
    with pytest.raises(AssertionError, match="trained again"):
        artifacts.text8_word2vec(other, documents, **settings)


def test_the_command_lists_the_artifacts_with_estimates(capsys):
    artifacts.main(["--list"])
    out = capsys.readouterr().out
    for name, artifact in artifacts.ARTIFACTS.items():
        assert name in out and artifact.estimate in out
    with pytest.raises(SystemExit):
        artifacts.main(["no-such-artifact"])


# ---- the wall between the concepts and the harness --------------------------------------------

def _concept_modules() -> list[Path]:
    files = [ROOT / "lmcourse" / "autograd.py"]
    for package in ("models", "tokenizers"):
        files += sorted((ROOT / "lmcourse" / package).rglob("*.py"))
    return files


def test_model_code_never_imports_the_harness():
    offenders = []
    for path in _concept_modules():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            if any(n.startswith(("lmcourse.course", "lmcourse.cache", "lmcourse.teacher"))
                   for n in names):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, f"model code imports the harness: {offenders}"
    modules = [".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
               for p in _concept_modules()]
    probe = ("import importlib, sys\n"
             f"for m in {modules!r}: importlib.import_module(m)\n"
             "print(sorted(m for m in sys.modules if m.startswith(('lmcourse.course', "
             "'lmcourse.cache', 'lmcourse.teacher'))))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_package_imports_without_fcntl():
    probe = ("import sys\n"
             "sys.modules['fcntl'] = None  # as on Windows: import fcntl raises ImportError\n"
             "import importlib, pkgutil, lmcourse\n"
             "for m in pkgutil.walk_packages(lmcourse.__path__, 'lmcourse.'):\n"
             "    importlib.import_module(m.name)\n"
             "from lmcourse.course import artifacts, cache, keys, teacher\n"
             "import tempfile, torch, os\n"
             "os.environ['LMCOURSE_CACHE'] = tempfile.mkdtemp()\n"
             "print(cache.cached_tensors('x', {}, lambda: {'w': torch.ones(1)}, device='cpu'))\n")
    # importing must not run anything: a module that trains on import (a __main__ without
    # its guard) would otherwise hang the whole test run
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                            text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    assert "tensor([1.])" in result.stdout


def test_harness_notes_go_to_the_log_not_the_output(tmp_path, monkeypatch, capsys):
    from lmcourse.course import harness

    monkeypatch.setenv("LMCOURSE_CACHE", str(tmp_path))
    artifacts.check_first_steps([1.0, 0.5], [1.0, 0.5, 0.2], "toy run")
    assert capsys.readouterr().out == ""
    log = (tmp_path / harness.LOG_NAME).read_text()
    assert "toy run, first 2 steps trained here" in log
    with pytest.raises(AssertionError, match="differ from the cached run"):
        artifacts.check_first_steps([1.0, 0.9], [1.0, 0.5], "toy run")


def test_the_teacher_artifact_also_caches_its_test_scores_which_equal_a_fresh_scoring(cache_in):
    from lmcourse import finetune
    from lmcourse.course import teacher
    from lmcourse.data.goodreads import distinct_sentences

    data = artifacts._spoiler_data(True)
    model = artifacts.ARTIFACTS["spoiler-teacher"].build(tiny=True).cpu().eval()
    assert list(cache_in.glob("teacher-test-scores-*.safetensors"))  # `make teacher` wrote them
    texts, _ = distinct_sentences(data.test)
    fresh = finetune.predict_texts(model, data.tokenizer, texts, data.max_len)
    assert torch.equal(teacher.teacher_test_scores(data, model), fresh)
    with torch.no_grad():
        next(model.parameters()).add_(1.0)  # another teacher: its own scores, not the cached ones
    assert not torch.equal(teacher.teacher_test_scores(data, model), fresh)


def test_jobs_start_the_longest_first_print_each_childs_lines_whole_and_name_a_failure(
        tmp_path, capsys):
    """``--jobs 2``: two children at a time, longest estimate first; a child's lines come out
    together; a child that fails is named after the others have finished."""
    made = [artifacts.Artifact(name, "what", estimate, None, None, None) for name, estimate in
            [("short", "about 5 s on a 2-core CPU"), ("seeds", "about 30 s per seed"),
             ("long", "about 80 s"), ("broken", "about 1 s")]]
    started = tmp_path / "started"

    def command(artifact, check):
        code = (f"import time; open({str(started)!r}, 'a').write({artifact.name!r} + '\\n'); "
                f"print('{artifact.name} one'); time.sleep(0.3); print('{artifact.name} two'); "
                f"raise SystemExit({int(artifact.name == 'broken')})")
        return [sys.executable, "-c", code]

    with pytest.raises(SystemExit, match=r"artifacts that failed: \['broken'\]"):
        artifact_jobs.build_in_processes(made, jobs=2, check=False, command=command)
    order = started.read_text().split()  # 90 s and 80 s at once, then the others
    assert set(order[:2]) == {"seeds", "long"} and set(order[2:]) == {"short", "broken"}
    out = capsys.readouterr().out.splitlines()
    for name in ("short", "seeds", "long", "broken"):
        assert out[out.index(f"{name} one") + 1] == f"{name} two"
    with pytest.raises(SystemExit):
        artifacts.main(["--jobs", "0"])
    assert "--jobs must be at least 1" in capsys.readouterr().err
