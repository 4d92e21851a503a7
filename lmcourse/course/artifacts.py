"""Named artifacts: results several notebooks read, each computed by ONE function.

An artifact is a run too slow for a notebook's budget: MiniLM fine-tuned for spoiler detection
on every label (the spoiler teacher) and on 256 labels (the few-label teacher), GloVe on text8
trained until its loss is flat (three seeds), and the word2vec runs on text8 (ours and
gensim's). (Runs that compare methods over seeds are reference runs instead:
:mod:`lmcourse.course.reference`.) The function that computes an artifact is the one the
notebook's cell calls (``artifacts.text8_glove(X, words)``) and the one ``make teacher``
(``python -m lmcourse.course.artifacts``) calls beforehand, with the same inputs; both go
through the course cache (:mod:`lmcourse.course.cache`), so the notebook reads what
``make teacher`` wrote, and computes it itself, saying so, when it is missing.

Each registered :class:`Artifact` also declares how to build the notebook's inputs (or small
ones, for the unit tests) and a **first-steps check**: the first steps are trained again,
live, and must repeat the cached run's first losses (:func:`check_first_steps`), so a cache
entry can never silently stand for another computation.

    python -m lmcourse.course.artifacts            # compute (or find) every artifact, timed
    python -m lmcourse.course.artifacts --list     # names, what they are, estimates
    python -m lmcourse.course.artifacts --check    # the first-steps check of each
    python -m lmcourse.course.artifacts --jobs 2   # two at a time, each in its own process
"""

from __future__ import annotations

import argparse
import copy
import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch

import lmcourse
from lmcourse.course import teacher
from lmcourse.course.artifact_jobs import build_in_processes
from lmcourse.course.cache import cache_dir, cached_tensors, keeps_rng
from lmcourse.course.harness import note
from lmcourse.course.keys import digest
from lmcourse.course.reference import transfer_curve
from lmcourse.course.reference.rt_teacher import (
    RT_TEACHER_ESTIMATE,
    RT_TEACHER_WHAT,
    rt_teacher,
    rt_teacher_first_steps,
)
from lmcourse.data.words import WordCorpus
from lmcourse.models.embeddings.glove import WORDSIM, train_glove, wordsim_score
from lmcourse.models.embeddings.word2vec import Trained, gensim_word2vec, train_word2vec

__all__ = ["ARTIFACTS", "Artifact", "text8_glove", "text8_word2vec",
           "check_first_steps", "glove_until_flat", "spoiler_teacher"]

spoiler_teacher = teacher.spoiler_teacher  # registered below, with the others


def _teacher_and_test_scores(data: teacher.SpoilerData, steps: int | None = None,
                             progress: bool = True) -> torch.nn.Module:
    """The spoiler teacher, and its CPU scores on the test sentences that chapter 13 reads
    (:func:`lmcourse.course.teacher.teacher_test_scores`)."""
    model = spoiler_teacher(data, steps=steps, progress=progress)
    on_cpu = model if next(model.parameters()).device.type == "cpu" else copy.deepcopy(model).cpu()
    teacher.teacher_test_scores(data, on_cpu.eval())
    return model


def check_first_steps(live: Sequence[float], cached: Sequence[float], what: str,
                      tol: float = 1e-3) -> float:
    """Compare the losses of the first steps trained here (``live``) with the cached run's
    first ones; log one line (:func:`lmcourse.course.harness.note`, not the student's
    view), raise ``AssertionError`` when the largest relative difference reaches ``tol``
    (thread counts change the rounding, nothing else should)."""
    k = len(live)
    if k == 0 or len(cached) < k:
        raise AssertionError(f"{what}: {k} live steps to compare with {len(cached)} cached")
    gap = max(abs(a / b - 1) if b else abs(a) for a, b in zip(live, cached[:k], strict=True))
    note(f"{what}, first {k} steps trained here: loss {live[-1]:.6f} at step {k}, cached run "
         f"{cached[k - 1]:.6f}; largest relative difference {gap:.1e} (tolerance {tol:g})")
    if not gap < tol:
        raise AssertionError(f"{what}: the first {k} steps trained here differ from the cached "
                             f"run by {gap:.1e} (tolerance {tol:g}): the cache entry was not "
                             "computed by this recipe")
    return gap


# ---- GloVe on text8, until its loss is flat --------------------------------------------------

GLOVE_ESTIMATE = "about 30 s per seed on a 2-core CPU"
# AdaGrad's step; "flat": less than 1% per epoch; x_max = 10, the value of GloVe's own demo
# script for text8 (the paper's 100 was set for billions of words: few of text8's counts
# reach either)
TEXT8_GLOVE = dict(lr=0.2, tol=0.01, x_max=10.0)
_GLOVE_STORED = ("vectors", "context_vectors", "losses", "seconds", "tracked")


@keeps_rng
def glove_until_flat(X: sp.spmatrix, seeds: Sequence[int] = (0, 1, 2), dim: int = 100,
                     lr: float = 0.2, tol: float = 0.01, max_epochs: int = 60,
                     x_max: float = 100.0, alpha: float = 0.75, batch_size: int = 16384,
                     device: torch.device | str = "cpu",
                     track: Callable[[np.ndarray], float] | None = None,
                     track_name: str | None = None, progress: bool = True,
                     what: str = "GloVe") -> list[Trained]:
    """One :func:`~lmcourse.models.embeddings.glove.train_glove` run per seed, each
    stopped when its loss is flat (an epoch lowers it by less than ``tol``, relatively) or
    at ``max_epochs``, kept in the course cache under a key of ``X``, every setting and
    ``track_name`` (which must name what ``track`` measures after every epoch)."""
    if track is not None and not track_name:
        raise ValueError("track_name must say what track measures: it is part of the cache key")
    dev = torch.device(device)
    settings = dict(dim=dim, lr=lr, tol=tol, epochs=max_epochs, x_max=x_max, alpha=alpha,
                    batch_size=batch_size)
    runs = []
    for seed in seeds:
        def run(seed: int = seed) -> dict[str, torch.Tensor]:
            trained = train_glove(X, seed=seed, device=dev, progress=progress, track=track,
                                  **settings)
            return {"vectors": torch.from_numpy(trained.vectors),
                    "context_vectors": torch.from_numpy(trained.context_vectors),
                    "losses": torch.tensor(trained.losses, dtype=torch.float64),
                    "seconds": torch.tensor([trained.seconds], dtype=torch.float64),
                    "tracked": torch.tensor(trained.tracked or [], dtype=torch.float64)}

        recipe = {"recipe": "glove-until-flat-v2", "X": digest(X), "seed": seed, **settings,
                  "track": track_name}
        state = cached_tensors("glove", recipe, run, keys=set(_GLOVE_STORED), device=dev,
                               what=f"{what}, seed {seed}", estimate=GLOVE_ESTIMATE)
        runs.append(Trained(state["vectors"].numpy(), state["losses"].tolist(),
                            float(state["seconds"][0]), state["context_vectors"].numpy(),
                            state["tracked"].tolist() if track is not None else None))
    return runs


def text8_glove(X: sp.spmatrix, words: Sequence[str], seeds: Sequence[int] = (0, 1, 2),
                    dim: int = 100, device: torch.device | str | None = None,
                    progress: bool = True) -> list[Trained]:
    """GloVe on text8's co-occurrence matrix ``X`` (rows in the order of ``words``):
    x_max = 10, AdaGrad at 0.2 on minibatches of 16,384 pairs, until an epoch lowers the loss
    by less than 1% (at most 60 epochs, 100 on a GPU), WordSim-353 measured after every
    epoch."""
    return glove_until_flat(X, seeds=seeds, dim=dim, **TEXT8_GLOVE,
                            max_epochs=lmcourse.budget(cpu=60, gpu=100),
                            device=lmcourse.device() if device is None else device,
                            track=wordsim_score(words), track_name=WORDSIM, progress=progress,
                            what="chapter 04's GloVe until flat")


# ---- word2vec on text8: our skip-gram and CBOW beside gensim's -------------------------------

WORD2VEC_ESTIMATE = "about 45 s on a 2-core CPU"
#: the settings ours and gensim's share: d, window L, K negatives, subsampling t
TEXT8_WORD2VEC = dict(dim=100, window=5, negative=5, sample=1e-3)
#: (name, ours?, skip-gram?, initial learning rate: the C tool's defaults)
WORD2VEC_RUNS = (("skip-gram (ours)", True, True, 0.025), ("CBOW (ours)", True, False, 0.05),
                 ("gensim skip-gram", False, True, 0.025), ("gensim CBOW", False, False, 0.05))
_WORD2VEC_STORED = ("vectors", "context_vectors", "losses", "seconds")


def text8_word2vec(corpus: WordCorpus, documents: Sequence[Sequence[str]],
                       seeds: Sequence[int] = (0, 1, 2), epochs: int | None = None,
                       dim: int = 100, device: torch.device | str | None = None
                       ) -> dict[str, list[Trained]]:
    """The word2vec runs on text8, by name: our skip-gram and CBOW (seed ``seeds[0]``) and
    gensim's (every seed, one worker), with the same settings (window 5, K = 5, t = 1e-3,
    5 epochs, 10 on a GPU) from ``documents`` (gensim) and ``corpus``, built from them with
    min_count 5 (ours). ``seconds``: CPU seconds of each training call (wall seconds on a GPU),
    so that our time and gensim's compare fairly on a busy machine."""
    dev = lmcourse.device() if device is None else torch.device(device)
    epochs = lmcourse.budget(cpu=5, gpu=10) if epochs is None else epochs
    clock = time.perf_counter if dev.type == "cuda" else time.process_time
    settings = dict(TEXT8_WORD2VEC, dim=dim, epochs=epochs)
    plan = [(name, ours, sg, lr, seed) for name, ours, sg, lr in WORD2VEC_RUNS
            for seed in (seeds[:1] if ours else seeds)]

    def train(ours: bool, sg: bool, lr: float, seed: int) -> tuple[Trained, float]:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # gensim gets one worker: one core each, a fair race
        try:
            start = clock()
            trained = (train_word2vec(corpus, sg=sg, lr=lr, seed=seed, device=dev, **settings)
                       if ours else
                       gensim_word2vec(documents, corpus.words, sg=sg, lr=lr, seed=seed,
                                       min_count=5, **settings))
            return trained, clock() - start
        finally:
            torch.set_num_threads(threads)

    def run_all() -> dict[str, torch.Tensor]:
        state = {}
        for name, ours, sg, lr, seed in plan:
            trained, seconds = train(ours, sg, lr, seed)
            state |= {f"{name}|{seed}|vectors": torch.from_numpy(trained.vectors),
                      f"{name}|{seed}|context_vectors": torch.from_numpy(trained.context_vectors),
                      f"{name}|{seed}|losses": torch.tensor(trained.losses, dtype=torch.float64),
                      f"{name}|{seed}|seconds": torch.tensor([seconds], dtype=torch.float64)}
        return state

    recipe = {"recipe": "text8-word2vec-v1", "corpus": digest([corpus.words, corpus.docs]),
              "runs": [list(p) for p in plan], **settings}
    keys = {f"{name}|{seed}|{field}" for name, *_, seed in plan for field in _WORD2VEC_STORED}
    state = cached_tensors("word2vec", recipe, run_all, keys=keys, device=dev,
                           what=f"chapter 4b's word2vec runs ({len(plan)})",
                           estimate=WORD2VEC_ESTIMATE)
    runs: dict[str, list[Trained]] = {}
    for name, *_, seed in plan:
        runs.setdefault(name, []).append(Trained(
            state[f"{name}|{seed}|vectors"].numpy(), state[f"{name}|{seed}|losses"].tolist(),
            float(state[f"{name}|{seed}|seconds"][0]),
            state[f"{name}|{seed}|context_vectors"].numpy()))
    return runs


def word2vec_first_epoch(runs: dict[str, list[Trained]], corpus: WordCorpus,
                         epochs: int | None = None, dim: int = 100,
                         device: torch.device | str | None = None
                         ) -> tuple[list[float], list[float], str]:
    """Our skip-gram's first epoch trained live (on the full run's learning-rate schedule)
    beside the stored run's: ``(live losses, stored losses, what)``."""
    dev = lmcourse.device() if device is None else torch.device(device)
    epochs = lmcourse.budget(cpu=5, gpu=10) if epochs is None else epochs
    _, _, sg, lr = WORD2VEC_RUNS[0]
    live = train_word2vec(corpus, sg=sg, lr=lr, seed=0, device=dev, epochs=epochs,
                          stop_after=1, **dict(TEXT8_WORD2VEC, dim=dim))
    return live.losses, runs[WORD2VEC_RUNS[0][0]][0].losses, "our skip-gram, seed 0 (epochs)"


# ---- the registry: each artifact's inputs (the notebook's, or tiny ones) and check ----------

@dataclass(frozen=True)
class Artifact:
    """A named artifact: ``function(**inputs(tiny))`` computes (or loads) it, with the
    notebook's inputs or, ``tiny=True``, small ones for the unit tests;
    ``first_steps(result, **inputs)`` retrains the first steps live and returns
    ``(live losses, cached losses, what)``."""

    name: str
    what: str
    estimate: str
    function: Callable[..., object]
    inputs: Callable[[bool], dict]
    first_steps: Callable[..., tuple[list[float], list[float], str]]

    def build(self, tiny: bool = False) -> object:
        return self.function(**self.inputs(tiny))

    def check(self, tiny: bool = False, tol: float = 1e-3) -> float:
        """The first-steps check: the largest relative gap (raises when it reaches ``tol``)."""
        result = self.build(tiny)
        return check_first_steps(*self.first_steps(result, **self.inputs(tiny)), tol=tol)


@functools.cache
def _spoiler_data(tiny: bool) -> teacher.SpoilerData:
    data = teacher.spoiler_data()
    if not tiny:
        return data
    spoilers = [row for row in data.train if row[1]][:16]
    others = [row for row in data.train if not row[1]][:48]
    return teacher.SpoilerData(spoilers + others, data.validation[:8], data.test[:8],
                               data.tokenizer)


def _teacher_inputs(tiny: bool) -> dict:
    return dict(data=_spoiler_data(tiny), steps=4 if tiny else None, progress=not tiny)


def _few_label_inputs(tiny: bool) -> dict:
    if not tiny:
        return dict(progress=True)
    from lmcourse.course.reference.transfer_curve import SPOILER_RECIPE

    short = dict(SPOILER_RECIPE["finetune"], min_steps=3, max_steps=3)
    return dict(n_labels=16, recipe=dict(SPOILER_RECIPE, finetune=short), progress=False)


def _few_label_first_steps(model, n_labels=256, seed=0, recipe=None, progress=True
                           ) -> tuple[list[float], list[float], str]:
    from lmcourse.course.reference import transfer_curve as tc

    recipe = tc.SPOILER_RECIPE if recipe is None else recipe
    task = tc.spoiler_task()
    chosen = tc.label_order(task.train_labels, seed)[:n_labels]
    first = min(10, len(model.losses))
    _, live = tc.finetune_minilm([task.train_texts[i] for i in chosen],
                                 task.train_labels[chosen], recipe, seed, lmcourse.device(),
                                 stop_after=first)
    return live, model.losses, "few-label teacher"


def _rt_teacher_inputs(tiny: bool) -> dict:
    return dict(steps=3 if tiny else None)


def _teacher_first_steps(model, data, steps, progress) -> tuple[list[float], list[float], str]:
    live = teacher.teacher_first_steps(data, first=2 if steps and steps < 10 else 10,
                                       steps=steps)
    return live, model.losses, "spoiler teacher"


@functools.cache
def _text8_corpus(tiny: bool) -> tuple[WordCorpus, list[list[str]]]:
    """The text8 corpus (words seen at least 5 times) and its documents, or a
    small Zipf-distributed one for the unit tests."""
    from lmcourse.data import load_corpus, tokenize

    if tiny:
        rng = np.random.default_rng(0)
        documents = [[f"w{i}" for i in rng.zipf(1.5, 400) % 30] for _ in range(3)]
    else:
        documents = [tokenize(doc) for doc in load_corpus("text8")]
    return WordCorpus.from_documents(documents, min_count=5), documents


@functools.cache
def _text8_cooccurrence(tiny: bool) -> tuple[sp.spmatrix, list[str]]:
    from lmcourse.models.embeddings import cooccurrence

    corpus, _ = _text8_corpus(tiny)
    window = 2 if tiny else 5
    return cooccurrence(corpus.docs, len(corpus), window, weighting="harmonic"), corpus.words


def _word2vec_inputs(tiny: bool) -> dict:
    corpus, documents = _text8_corpus(tiny)
    return dict(corpus=corpus, documents=documents,
                **(dict(seeds=(0, 1), epochs=2, dim=8) if tiny else {}))


def _word2vec_first_steps(runs, corpus, documents, seeds=(0, 1, 2), epochs=None, dim=100,
                          device=None) -> tuple[list[float], list[float], str]:
    return word2vec_first_epoch(runs, corpus, epochs=epochs, dim=dim, device=device)


def _glove_inputs(tiny: bool) -> dict:
    X, words = _text8_cooccurrence(tiny)
    return dict(X=X, words=words, dim=6 if tiny else 100, progress=not tiny,
                **({"seeds": (0,)} if tiny else {}))


def _glove_first_steps(runs, X, words, seeds=(0, 1, 2), dim=100, device=None, progress=True
                       ) -> tuple[list[float], list[float], str]:
    live = train_glove(X, dim=dim, epochs=2, lr=TEXT8_GLOVE["lr"],
                       x_max=TEXT8_GLOVE["x_max"], seed=seeds[0],
                       device=lmcourse.device() if device is None else device)
    return live.losses, runs[0].losses, f"GloVe seed {seeds[0]}"


ARTIFACTS: dict[str, Artifact] = {a.name: a for a in (
    Artifact("spoiler-teacher", teacher.WHAT, teacher.ESTIMATE, _teacher_and_test_scores,
             _teacher_inputs, _teacher_first_steps),
    Artifact("few-label-teacher", transfer_curve.FEW_LABEL_WHAT,
             transfer_curve.FEW_LABEL_ESTIMATE, transfer_curve.few_label_teacher,
             _few_label_inputs, _few_label_first_steps),
    Artifact("rt-teacher", RT_TEACHER_WHAT, RT_TEACHER_ESTIMATE, rt_teacher,
             _rt_teacher_inputs, rt_teacher_first_steps),
    Artifact("text8-glove", "chapter 04's GloVe until its loss is flat (3 seeds)",
             GLOVE_ESTIMATE, text8_glove, _glove_inputs, _glove_first_steps),
    Artifact("text8-word2vec", "chapter 4b's skip-gram and CBOW, ours (1 seed) and "
             "gensim's (3 seeds)", WORD2VEC_ESTIMATE, text8_word2vec, _word2vec_inputs,
             _word2vec_first_steps),
)}


def main(argv: Sequence[str] | None = None) -> None:
    """``make teacher``: compute (or find) every artifact, or those named, and time them."""
    parser = argparse.ArgumentParser(prog="python -m lmcourse.course.artifacts",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="artifacts to compute (default: all)")
    parser.add_argument("--list", action="store_true", help="list the artifacts and estimates")
    parser.add_argument("--check", action="store_true",
                        help="also retrain each one's first steps and compare")
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="compute N artifacts at once, each in its own process with its "
                             "share of the cores (default 1)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, not {args.jobs}")
    unknown = set(args.names) - ARTIFACTS.keys()
    if unknown:
        parser.error(f"unknown artifacts {sorted(unknown)}; known: {sorted(ARTIFACTS)}")
    chosen = [ARTIFACTS[n] for n in args.names] if args.names else list(ARTIFACTS.values())
    if args.list:
        for a in chosen:
            print(f"{a.name:<20} {a.what}; {a.estimate}")
        print(f"cache: {cache_dir()}")
        return
    start = time.perf_counter()
    if args.jobs > 1 and len(chosen) > 1:
        build_in_processes(chosen, args.jobs, args.check)
    else:
        for a in chosen:
            began = time.perf_counter()
            a.check() if args.check else a.build()
            print(f"{a.name:<20} ready in {time.perf_counter() - began:6.1f} s  ({a.what})",
                  flush=True)
    print(f"{len(chosen)} artifacts ready in {cache_dir()} "
          f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
