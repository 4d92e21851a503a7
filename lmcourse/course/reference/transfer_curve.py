"""References ``spoiler-curve`` and ``polarity-curve``: what pre-training buys, label by label.

A bag of words matches a fine-tuned BERT on the spoiler sample when every one of its
8,784 training sentences is labelled. Pre-training is meant to pay where labels are
scarce and the test speaks differently from the training set, so these references train
every classifier of the course on the first ``n`` labelled sentences of a fixed random
order, ``n`` = 16, 32, ... up to all of them, and score each on the same test sentences:

- **majority**: one score for every sentence (ROC-AUC 0.5 by construction);
- **bag of words**: word counts, L2 logistic regression (:mod:`lmcourse.models.logistic`,
  the penalty chosen by cross-validation on the ``n`` labels themselves);
- **BiLSTM**: the BiLSTM baseline (:func:`lmcourse.models.baselines.train_bilstm`), word
  vectors learned from the ``n`` sentences only;
- **MiniLM features**: the frozen encoder's mean-pooled sentence vectors, the same
  logistic regression;
- **MiniLM fine-tuned**: the fine-tuning recipe (``[CLS]``, frozen embeddings, balanced
  batches of 16, AdamW at 1e-4, 10% warm-up then linear decay), 10 epochs, at least 50 and
  at most 300 steps.

A seed fixes the order in which sentences get labels (stratified: each prefix holds the
training set's share of the rarer class, at least 2) and every model's random draws, so
the methods of one seed see the very same labels. ``spoiler-curve`` scores every distinct
test sentence of the split by review and, separately, the half of the test reviews written
in held-out phrasings (words no training review contains); ``polarity-curve`` repeats the
curve on real English, the 200 movie-review sentences of Pang & Lee (2005), each seed
holding out its own random 100 (50 of each label) as the test set.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import cache

import torch

from lmcourse.course.cache import keeps_rng
from lmcourse.course.reference.recipe import ENCODER_FIRST_STEPS, Reference, SeedRun
from lmcourse.course.reference.result import ReferenceResult
from lmcourse.data.goodreads import distinct_sentences
from lmcourse.metrics import roc_auc
from lmcourse.models.logistic import LAMBDAS, bag_of_words_classifier, cross_validate

SIZES_SPOILER = [16, 32, 64, 128, 256, 512, 1024, 0]  # 0: every training sentence
SIZES_POLARITY = [16, 32, 64, 100]
METHODS = ("majority", "bag_of_words", "bilstm", "minilm_features", "minilm_finetuned")

SHARED = {
    "curve_x": "labelled sentences (the curve: fine-tuned MiniLM's test ROC-AUC)",
    "max_len": 32,
    "bag_of_words": "word counts (lmcourse.data.tokenize) of the n sentences, L2 logistic "
                    "regression, lambda by 5-fold stratified cross-validation on the n labels",
    "lambdas": list(LAMBDAS),
    "minilm_features": "all-MiniLM-L6-v2 frozen, mean of the last layer over real tokens; "
                       "the same logistic regression",
    "bilstm": {"recipe": "lab 03 (lmcourse.models.baselines.train_bilstm)", "embed_dim": 32,
               "hidden": 32, "batch": 64, "lr": 3e-3,
               "updates": "as many as fine-tuning takes steps, at least 2 epochs"},
    "finetune": {"recipe": "lab 06: [CLS], embeddings frozen, balanced batches, AdamW, "
                           "linear warm-up then decay, clip 1", "batch": 16, "lr": 1e-4,
                 "warmup": 0.1, "epochs": 10, "min_steps": 50, "max_steps": 300},
    "draw": "one stratified random order per seed; size n takes its first n sentences, "
            "max(2, round(n x share)) of them of the rarer class",
}

SPOILER_RECIPE = {
    "task": "spoiler sentences of the generated Goodreads sample, lab 03's review split",
    "unit": "distinct sentences; label = majority of the sentence's tags (ties: spoiler)",
    "test": "every distinct test sentence; also its held-out-phrasing part and the rest",
    "sizes": SIZES_SPOILER, **SHARED,
}

POLARITY_RECIPE = {
    "task": "Pang & Lee (2005) sentence polarity, the 200 sentences gensim ships",
    "unit": "sentences (all distinct), label 1 = positive",
    "test": "per seed, a random 100 sentences (50 of each label); sizes drawn from the rest",
    "sizes": SIZES_POLARITY, **SHARED,
}


@dataclass
class Task:
    """Texts and 0/1 labels to draw training labels from and to test on; ``parts`` are
    boolean masks over the test rows scored on their own."""

    train_texts: list[str]
    train_labels: torch.Tensor
    test_texts: list[str]
    test_labels: torch.Tensor
    parts: dict[str, torch.Tensor]


def _distinct(rows) -> tuple[list[str], torch.Tensor]:
    texts, labels = distinct_sentences(rows)
    return texts, torch.tensor(labels)


@cache
def spoiler_task() -> Task:
    from lmcourse.course.teacher import spoiler_data
    from lmcourse.data.goodreads import heldout_phrasing

    data = spoiler_data()
    train_texts, train_labels = _distinct(data.train)
    test_texts, test_labels = _distinct(data.test)
    heldout = {t for t, _, review in data.test if heldout_phrasing(review)}
    mask = torch.tensor([t in heldout for t in test_texts])
    return Task(train_texts, train_labels, test_texts, test_labels,
                {"heldout": mask, "same_phrasing": ~mask})


@cache
def polarity_task(seed: int) -> Task:
    from lmcourse.data import load_polarity

    rows = load_polarity()
    g = torch.Generator().manual_seed(10_000 + seed)
    test: list[int] = []
    for label in (0, 1):
        members = [i for i, (_, y) in enumerate(rows) if y == label]
        test += [members[int(j)] for j in torch.randperm(len(members), generator=g)[:50]]
    rest = [i for i in range(len(rows)) if i not in set(test)]
    return Task([rows[i][0] for i in rest], torch.tensor([rows[i][1] for i in rest]),
                [rows[i][0] for i in sorted(test)],
                torch.tensor([rows[i][1] for i in sorted(test)]), {})


def label_order(labels: torch.Tensor, seed: int) -> torch.Tensor:
    """A random order of the training rows in which every prefix of length ``n`` holds
    ``max(2, round(n x share))`` rows of the rarer class (as far as there are any)."""
    g = torch.Generator().manual_seed(seed)
    rare = int(labels.float().mean() <= 0.5)  # the rarer class (1 on a tie)
    share = float((labels == rare).float().mean())
    pools = {c: torch.nonzero(labels == c).flatten() for c in (0, 1)}
    pools = {c: p[torch.randperm(len(p), generator=g)].tolist() for c, p in pools.items()}
    order, taken = [], {0: 0, 1: 0}
    for n in range(1, len(labels) + 1):
        want_rare = min(len(pools[rare]), max(2, round(n * share)))
        c = rare if taken[rare] < want_rare or taken[rare ^ 1] >= len(pools[rare ^ 1]) \
            else rare ^ 1
        order.append(pools[c][taken[c]])
        taken[c] += 1
    return torch.tensor(order)


def finetune_steps(n: int, recipe: dict) -> int:
    """``epochs x n / batch`` rounded, clamped to ``[min_steps, max_steps]``."""
    f = recipe["finetune"]
    return min(f["max_steps"], max(f["min_steps"], round(f["epochs"] * n / f["batch"])))


@cache
def minilm_files():
    """MiniLM's tokenizer and the folder of its weights (loaded once)."""
    from lmcourse.pretrained import load_hf_tokenizer, minilm_path

    return load_hf_tokenizer(), minilm_path()


_VECTORS: dict[tuple[str, str], torch.Tensor] = {}


def _sentence_vectors(texts: list[str], max_len: int, device: torch.device) -> torch.Tensor:
    """MiniLM's frozen mean-pooled vectors of ``texts`` (computed once per text)."""
    from lmcourse import finetune
    from lmcourse.models.bert import BertModel
    from lmcourse.models.feature_based import sentence_vectors

    missing = [t for t in dict.fromkeys(texts) if (str(max_len), t) not in _VECTORS]
    if missing:
        tokenizer, path = minilm_files()
        encoder = BertModel.from_pretrained(path).to(device)
        ids, mask = finetune.encode(tokenizer, missing, max_len)
        for t, v in zip(missing, sentence_vectors(encoder, ids, mask), strict=True):
            _VECTORS[str(max_len), t] = v
    return torch.stack([_VECTORS[str(max_len), t] for t in texts])


def finetune_minilm(texts: list[str], labels: torch.Tensor, recipe: dict, seed: int,
                    device: torch.device, stop_after: int | None = None):
    """The fine-tuning recipe (``recipe["finetune"]``) on ``texts``: the model and its
    training losses."""
    from lmcourse import finetune
    from lmcourse.models.bert import BertModel

    tokenizer, path = minilm_files()
    f, steps = recipe["finetune"], finetune_steps(len(texts), recipe)
    ids, mask = finetune.encode(tokenizer, texts, recipe["max_len"])
    with torch.random.fork_rng(devices=None if device.type == "cuda" else []):
        torch.manual_seed(seed)  # the classifier's initial weights, then every dropout mask
        model = finetune.SequenceClassifier(BertModel.from_pretrained(path))
        model.freeze_embeddings()
        model.to(device)
        optimizer = finetune.make_optimizer(model, f["lr"])
        scheduler = finetune.warmup_linear(optimizer, round(f["warmup"] * steps), steps)
        result = finetune.fit(model, (ids, mask, labels), steps=stop_after or steps,
                              batch_size=f["batch"], optimizer=optimizer, scheduler=scheduler,
                              generator=torch.Generator().manual_seed(seed), progress=False)
    return model, result.losses


def _bilstm(texts: list[str], labels: torch.Tensor, recipe: dict, seed: int):
    from lmcourse.models.baselines import train_bilstm

    b = recipe["bilstm"]
    epochs = max(2, math.ceil(finetune_steps(len(texts), recipe) / math.ceil(len(texts)
                                                                              / b["batch"])))
    rows = [(t, int(y), "") for t, y in zip(texts, labels.tolist(), strict=True)]
    return train_bilstm(rows, epochs=epochs, embed_dim=b["embed_dim"], hidden_size=b["hidden"],
                        batch_size=b["batch"], lr=b["lr"], seed=seed).predict


def _scores(task: Task, scores: torch.Tensor) -> dict[str, float]:
    """ROC-AUC on the whole test set and on each part."""
    y = task.test_labels.tolist()
    out = {"": roc_auc(y, scores.tolist())}
    for part, mask in task.parts.items():
        out["/" + part] = roc_auc(task.test_labels[mask].tolist(), scores[mask].tolist())
    return out


def train_curve(task: Task, recipe: dict, seed: int, device: torch.device,
                progress: bool = True, stop_after: int | None = None) -> SeedRun:
    """Every method at every size of one seed; the curve is fine-tuned MiniLM's AUC."""
    from lmcourse import finetune, progress_bar

    order = label_order(task.train_labels, seed)
    sizes = [n or len(order) for n in recipe["sizes"]]
    metrics: dict[str, float] = {}
    curve, first_losses, start = [], [], time.perf_counter()
    if stop_after is None:
        train_vectors = _sentence_vectors(task.train_texts, recipe["max_len"], device)
        test_vectors = _sentence_vectors(task.test_texts, recipe["max_len"], device)
    for n in progress_bar(sizes, progress, desc=f"seed {seed}: labels"):
        idx = order[:n]
        texts, labels = [task.train_texts[i] for i in idx], task.train_labels[idx]
        model, losses = finetune_minilm(texts, labels, recipe, seed, device, stop_after)
        if not first_losses:
            first_losses = losses
        if stop_after is not None:
            return SeedRun([], first_losses, {})
        tick = time.perf_counter()
        tokenizer, _ = minilm_files()
        predictions = {
            "majority": torch.zeros(len(task.test_texts)),
            "minilm_finetuned": finetune.predict_texts(model, tokenizer, task.test_texts,
                                                       recipe["max_len"]),
        }
        del model
        bow = bag_of_words_classifier(texts, labels, recipe["lambdas"], seed=seed)
        predictions["bag_of_words"] = bow(task.test_texts)
        features = cross_validate(train_vectors[idx], labels, recipe["lambdas"], seed=seed)
        predictions["minilm_features"] = features(test_vectors)
        predictions["bilstm"] = _bilstm(texts, labels, recipe, seed)(task.test_texts)
        for method in METHODS:
            for suffix, value in _scores(task, predictions[method].float()).items():
                metrics[f"{method}@{n}{suffix}"] = round(value, 5)
        metrics[f"rare@{n}"] = int((labels == 1).sum().item())
        metrics[f"finetune_steps@{n}"] = finetune_steps(n, recipe)
        metrics[f"lambda_bag_of_words@{n}"] = bow.lam
        metrics[f"lambda_minilm_features@{n}"] = features.lam
        curve.append([n, round(time.perf_counter() - start, 1),
                      metrics[f"minilm_finetuned@{n}"]])
        metrics[f"seconds@{n}"] = round(time.perf_counter() - tick, 1)
    metrics["train_seconds"] = round(time.perf_counter() - start, 1)
    return SeedRun(curve, first_losses, metrics)


def curve_values(result: ReferenceResult, method: str, part: str = "") -> dict[int, list[float]]:
    """``{n labels: [test ROC-AUC of each seed that ran n]}`` of ``method`` read from a
    committed result (``part``: ``""`` for the whole test set, or ``"heldout"``,
    ``"same_phrasing"``). A run may train its largest sizes for fewer seeds (``rt-curve``);
    a size no seed has raises ``KeyError`` naming the run."""
    suffix = f"/{part}" if part else ""
    sizes = [int(point[0]) for point in result.curves[result.seeds[0]]]
    curves = {}
    for n in sizes:
        key = f"{method}@{n}{suffix}"
        curves[n] = [result.metrics[s][key] for s in result.seeds if key in result.metrics[s]]
        if not curves[n]:
            result.values(key)  # raises the KeyError that lists the metrics the run has
    return curves


def _no_weights(recipe: dict, state: dict) -> tuple[str, float]:
    raise NotImplementedError("the learning-curve references keep no weights")


def majority_auc(task: Task) -> dict[str, float]:
    return {"majority": roc_auc(task.test_labels.tolist(), [0.0] * len(task.test_texts))}


SPOILER_CURVE = Reference(
    name="spoiler-curve",
    title="learning curve on spoiler sentences: bag of words, BiLSTM, MiniLM features and "
          "fine-tuned MiniLM from 16 labels to all",
    recipe=SPOILER_RECIPE,
    train=lambda recipe, seed, device, progress=True, stop_after=None: train_curve(
        spoiler_task(), recipe, seed, device, progress, stop_after),
    evaluate=_no_weights,
    baselines=lambda recipe: majority_auc(spoiler_task()),
    seconds_per_seed=420.0,
    keep_weights=(), first_steps=ENCODER_FIRST_STEPS,
    notes=["the bag of words and the MiniLM-features regression choose their penalty by "
           "cross-validation on the n labels, never on the validation or test sentences"],
)

POLARITY_CURVE = Reference(
    name="polarity-curve",
    title="learning curve on real English (Pang & Lee sentence polarity, 200 sentences)",
    recipe=POLARITY_RECIPE,
    train=lambda recipe, seed, device, progress=True, stop_after=None: train_curve(
        polarity_task(seed), recipe, seed, device, progress, stop_after),
    evaluate=_no_weights,
    baselines=lambda recipe: majority_auc(polarity_task(0)),
    seconds_per_seed=60.0,
    seeds=(0, 1, 2, 3, 4),
    keep_weights=(), first_steps=ENCODER_FIRST_STEPS,
)


# ---- the few-label teacher: the curve's model at 256 labels, cached ---------------------------

FEW_LABEL_WHAT = ("lab 06's recipe on 256 labelled generated sentences (chapters 12-13's teacher "
                  "on the spoiler corpus)")
FEW_LABEL_ESTIMATE = "about 45 s on a 2-core CPU"


@keeps_rng
def few_label_teacher(n_labels: int = 256, seed: int = 0, recipe: dict | None = None,
                      progress: bool = True) -> torch.nn.Module:
    """MiniLM fine-tuned by ``spoiler-curve``'s recipe on the first ``n_labels`` distinct
    training sentences of its order for ``seed`` (the teacher of ``distill-transfer``'s seed
    ``seed``), on the course device in eval mode, cached. Its per-step training losses are
    ``model.losses``."""
    import lmcourse
    from lmcourse import finetune
    from lmcourse.course.cache import cached_tensors
    from lmcourse.course.keys import digest
    from lmcourse.models.bert import BertModel
    from lmcourse.pretrained import minilm_path

    recipe = SPOILER_RECIPE if recipe is None else recipe
    task = spoiler_task()
    chosen = label_order(task.train_labels, seed)[:n_labels]
    texts, labels = [task.train_texts[i] for i in chosen], task.train_labels[chosen]
    device = lmcourse.device()
    weights = minilm_path() / "model.safetensors"
    key = {"recipe": "few-label-teacher-v1", "seed": seed, "max_len": recipe["max_len"],
           "finetune": recipe["finetune"], "texts": digest(texts), "labels": digest(labels),
           "minilm": digest(weights if weights.exists() else minilm_path())}

    def train() -> dict[str, torch.Tensor]:
        model, losses = finetune_minilm(texts, labels, recipe, seed, device)
        return {**model.state_dict(), "losses": torch.tensor(losses, dtype=torch.float64)}

    state = cached_tensors("few-label-teacher", key, train, keys={"losses"},
                           what=FEW_LABEL_WHAT, estimate=FEW_LABEL_ESTIMATE, device=device)
    model = finetune.SequenceClassifier(BertModel.from_pretrained(minilm_path()))
    model.freeze_embeddings()
    model.load_state_dict({k: v for k, v in state.items() if k != "losses"})
    model.losses = state["losses"].tolist()
    return model.to(device).eval()
