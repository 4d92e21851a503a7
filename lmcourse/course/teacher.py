"""The spoiler teacher of distillation and compression: MiniLM fine-tuned on every label.

The course's fine-tuning recipe trains the pre-trained MiniLM (6 layers, width 384) on
labelled spoiler sentences (256 in the few-label setting): frozen embeddings, balanced
batches of 16, AdamW at 1e-4 with 10% linear warm-up then linear decay. The teacher is the
same recipe on **every** training sentence, 200 steps
on a CPU (600 on a GPU). Distillation and compression start from that model, so it is trained
once and kept in the course cache (:mod:`lmcourse.course.cache`), under a key that hashes
the recipe, the data and the MiniLM weights; it is one of the registered artifacts
(:mod:`lmcourse.course.artifacts`), which ``make teacher`` computes beforehand.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

import torch

import lmcourse
from lmcourse import finetune
from lmcourse.course.cache import CACHE_ENV, cache_dir, cached_tensors, keeps_rng
from lmcourse.course.keys import digest
from lmcourse.data.goodreads import distinct_sentences, sample_path, sentences, split_reviews
from lmcourse.data.goodreads import load_reviews as _load_reviews
from lmcourse.metrics import roc_auc
from lmcourse.models.bert import BertModel
from lmcourse.pretrained import load_hf_tokenizer, minilm_path

__all__ = ["CACHE_ENV", "SpoilerData", "cache_dir", "distillation_pool",
           "spoiler_data", "spoiler_teacher", "teacher_first_steps", "teacher_test_scores"]

WHAT = "lab 06's recipe fine-tuned on every label (the spoiler teacher)"
ESTIMATE = "about 45 s on a 2-core CPU"

MAX_LEN = 32


@dataclass
class SpoilerData:
    """The spoiler sentences split by review (hashed into train / validation / test), each a
    list of ``(sentence, label, review_id)``, and MiniLM's tokenizer."""

    train: list[tuple[str, int, str]]
    validation: list[tuple[str, int, str]]
    test: list[tuple[str, int, str]]
    tokenizer: object
    max_len: int = MAX_LEN

    def encode(self, part: list[tuple[str, int, str]]
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(input_ids, attention_mask, labels)`` of a part, at most ``max_len`` pieces."""
        ids, mask = finetune.encode(self.tokenizer, [t for t, _, _ in part], self.max_len)
        return ids, mask, torch.tensor([label for _, label, _ in part])

    def evaluation_sample(self, others: int, seed: int = 0,
                          part: list[tuple[str, int, str]] | None = None
                          ) -> tuple[list[str], list[int]]:
        """``(texts, labels)``: the rows of ``part`` (default: the test split) whose sentence
        is a spoiler or one of ``others`` distinct non-spoiler sentences drawn at random.
        ROC-AUC only compares positives with negatives, so sampling the negatives leaves its
        expected value unchanged and makes a sweep of many models affordable."""
        part = self.test if part is None else part
        spoilers = sorted({t for t, label, _ in part if label})
        rest = sorted({t for t, _, _ in part} - set(spoilers))
        chosen = set(spoilers) | set(random.Random(seed).sample(rest, min(others, len(rest))))
        rows = [(t, label) for t, label, _ in part if t in chosen]
        return [t for t, _ in rows], [label for _, label in rows]

    def roc_auc(self, model: torch.nn.Module, texts: list[str], labels: list[int]) -> float:
        """ROC-AUC of ``model``'s P(spoiler) on ``texts`` (each distinct text scored once)."""
        return roc_auc(labels, finetune.predict_texts(model, self.tokenizer, texts,
                                                      self.max_len))


def spoiler_data(path: str | os.PathLike | None = None) -> SpoilerData:
    """The course's spoiler sentences (the sample unless ``path`` names another file)."""
    split = split_reviews(_load_reviews(sample_path() if path is None else path),
                          by="review_id")
    return SpoilerData(*(sentences(p) for p in split), tokenizer=load_hf_tokenizer())


def _new_model() -> finetune.SequenceClassifier:
    """MiniLM with a fresh classifier (its initial weights drawn after ``manual_seed(0)``),
    embeddings frozen."""
    torch.manual_seed(0)
    model = finetune.SequenceClassifier(BertModel.from_pretrained(minilm_path()))
    model.freeze_embeddings()
    return model


def _fit_settings(steps: int) -> dict:
    return dict(batch_size=16, lr=1e-4, warmup=0.1, sampling="balanced", steps=steps)


def _teacher_state(data: SpoilerData, steps: int, progress: bool, retrain: bool
                   ) -> dict[str, torch.Tensor]:
    """The cached state dict of the fine-tuned model, with ``losses`` (one per step)."""
    weights = minilm_path() / "model.safetensors"
    recipe = {"recipe": "spoiler-teacher-v2", "seed": 0, "max_len": data.max_len,
              **_fit_settings(steps), "data": digest(data.train),
              "minilm": digest(weights if weights.exists() else minilm_path())}
    device = lmcourse.device()

    def train() -> dict[str, torch.Tensor]:
        model = _new_model().to(device)  # dropout then draws from the generator seeded here
        run = finetune.fit(model, data.encode(data.train), **_fit_settings(steps),
                           generator=torch.Generator().manual_seed(0), progress=progress)
        return {**model.state_dict(), "losses": torch.tensor(run.losses, dtype=torch.float64)}

    return cached_tensors("spoiler-teacher", recipe, train, keys={"losses"}, refresh=retrain,
                          what=WHAT, estimate=ESTIMATE, device=device)


@keeps_rng
def spoiler_teacher(data: SpoilerData | None = None, steps: int | None = None,
                    progress: bool = True, retrain: bool = False
                    ) -> finetune.SequenceClassifier:
    """MiniLM fine-tuned on ``data``'s training sentences (the recipe above), on the course
    device in eval mode. Loaded from the cache when the same recipe was trained before;
    otherwise trained (about 45 s on a 2-core CPU) and cached. The caller's random
    generators are left as they were."""
    data = spoiler_data() if data is None else data
    steps = lmcourse.budget(cpu=200, gpu=600) if steps is None else steps
    state = _teacher_state(data, steps, progress, retrain)
    model = _new_model().to(lmcourse.device())
    model.load_state_dict({k: v for k, v in state.items() if k != "losses"})
    model.losses = state["losses"].tolist()  # one per fine-tuning step, for first-steps checks
    return model.eval()


@keeps_rng
def teacher_first_steps(data: SpoilerData, first: int, steps: int | None = None
                        ) -> list[float]:
    """The training losses of the teacher's first ``first`` steps (of ``steps``, the
    schedule's length), trained here from the same initial weights, batches and dropout
    draws as the cached run: they must match its first losses."""
    steps = lmcourse.budget(cpu=200, gpu=600) if steps is None else steps
    model = _new_model().to(lmcourse.device())
    settings = _fit_settings(steps)
    optimizer = finetune.make_optimizer(model, settings["lr"])
    scheduler = finetune.warmup_linear(optimizer, round(settings["warmup"] * steps), steps)
    return finetune.fit(model, data.encode(data.train), first, batch_size=16,
                        sampling="balanced", generator=torch.Generator().manual_seed(0),
                        optimizer=optimizer, scheduler=scheduler, progress=False).losses


# ---- what a student learns from -------------------------------------------------------------

@torch.no_grad()
def distillation_pool(data: SpoilerData, teacher: torch.nn.Module, others_per_spoiler: float = 1.5,
                      seed: int = 0, batch_size: int = 128
                      ) -> tuple[tuple[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]:
    """The sentences a student learns from: every training spoiler and a fixed random
    ``others_per_spoiler`` times as many other training sentences, encoded, with the
    teacher's logits for each: ``((input_ids, mask, labels), logits)``. The logits are
    computed once per teacher (its weights are part of the cache key) and kept in the course
    cache, so the distillation and compression notebooks and the benchmarks share them."""
    spoilers = [row for row in data.train if row[1]]
    order = torch.randperm(len(data.train), generator=torch.Generator().manual_seed(seed))
    others = [data.train[i] for i in order.tolist() if not data.train[i][1]]
    rows = spoilers + others[:round(others_per_spoiler * len(spoilers))]
    pool = data.encode(rows)
    device = next(teacher.parameters()).device

    def compute() -> dict[str, torch.Tensor]:
        return {"logits": finetune.predict_logits(teacher, pool[0], pool[1], batch_size)}

    recipe = {"recipe": "distillation-pool-v1", "teacher": digest(teacher),
              "rows": digest(rows), "max_len": data.max_len}
    state = cached_tensors("distillation-pool", recipe, compute, keys={"logits"},
                           what="the teacher's logits on the distillation pool",
                           estimate="about 10 s on a 2-core CPU", device=device)
    return pool, state["logits"].cpu()


def teacher_test_scores(data: SpoilerData, teacher: torch.nn.Module) -> torch.Tensor:
    """The teacher's ``P(spoiler)`` for each distinct test sentence, in the order of
    :func:`~lmcourse.data.goodreads.distinct_sentences` ``(data.test)``. Computed once per
    teacher (its weights are part of the cache key) on the teacher's device and kept in the
    course cache, as the distillation pool's logits are: ``make teacher`` scores the CPU
    teacher beforehand, so the compression chapter reads them instead of spending a quarter
    of its CPU minute on them."""
    texts, _ = distinct_sentences(data.test)
    device = next(teacher.parameters()).device

    def compute() -> dict[str, torch.Tensor]:
        return {"scores": finetune.predict_texts(teacher, data.tokenizer, texts, data.max_len)}

    recipe = {"recipe": "teacher-test-scores-v1", "teacher": digest(teacher),
              "texts": digest(texts), "max_len": data.max_len}
    return cached_tensors("teacher-test-scores", recipe, compute, keys={"scores"},
                          what="the teacher's scores on the distinct test sentences",
                          estimate="about 15 s on a 2-core CPU", device=device)["scores"]
