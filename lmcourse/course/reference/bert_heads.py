"""References ``bert-heads-qa``, ``bert-heads-tags``, ``bert-heads-pairs``: BERT's fine-tuning
heads (a), (c) and (d) on the plot tasks, three seeds each, beside simple baselines.

MiniLM (all-MiniLM-L6-v2) with :mod:`lmcourse.models.heads` is fine-tuned on 2,000 examples
of a task (:mod:`lmcourse.data.plot_tasks`, names and places from one half of the lists) and
scored every ``eval_every`` steps on 500 test examples whose names and places all come from
the other half, so the test asks about people the training never mentioned:

- ``qa``: extractive question answering, exact match, beside the first name in the passage
  and the name in the sentence that shares most words with the question;
- ``tags``: person / place tagging, micro F1 over name words, beside a per-word lexicon
  (with and without "an unseen capitalised word is a person");
- ``pairs``: do two spoilers give away the same fact? accuracy, beside "the same names" and
  a bag-of-words pair classifier trained on the same 2,000 pairs, its number of steps
  chosen on development pairs (per seed).

Only the seeds' metrics and curves are kept (MiniLM's weights are 90 MB).
"""

from __future__ import annotations

import statistics
from functools import cache

import torch

from lmcourse.course.reference.recipe import ENCODER_FIRST_STEPS, Reference, SeedRun, no_weights

RECIPE = {
    "model": "all-MiniLM-L6-v2 (6 layers, width 384, 22.7M parameters), lmcourse.models.heads",
    "data": "lmcourse.data.plot_tasks: training examples use one half of the name and place "
            "lists, test examples the other half",
    "train_examples": 2000, "test_examples": 500, "data_seed": 0,
    "batch": 16, "lr": 1e-4, "warmup": 0.1, "weight_decay": 0.01, "clip": 1.0,
    "eval_every": 25,
}
TASKS = {
    "qa": {"head": "BertForQuestionAnswering", "steps": 150, "max_len": 96,
           "metric": "exact_match"},
    "tags": {"head": "BertForTokenClassification", "steps": 100, "max_len": 48,
             "metric": "tag_f1"},
    "pairs": {"head": "BertForSequenceClassification", "steps": 300, "max_len": 64,
              "metric": "accuracy"},
}


@cache
def task_data(task: str):
    """``(train, test)`` examples of ``task`` and their encodings for MiniLM."""
    from lmcourse import finetune_heads as fh
    from lmcourse.data import plot_tasks as pt
    from lmcourse.pretrained import load_hf_tokenizer

    make = {"qa": pt.fact_questions, "tags": pt.tagged_sentences, "pairs": pt.fact_pairs}[task]
    encode = {"qa": fh.encode_questions, "tags": fh.encode_tags, "pairs": fh.encode_pairs}[task]
    train = make(RECIPE["train_examples"], RECIPE["data_seed"], "train")
    test = make(RECIPE["test_examples"], RECIPE["data_seed"], "test")
    tokenizer, max_len = load_hf_tokenizer(), TASKS[task]["max_len"]
    return train, test, encode(tokenizer, train, max_len), encode(tokenizer, test, max_len)


def new_head(task: str) -> torch.nn.Module:
    """MiniLM with the task's head; the head's weights come from torch's current seed."""
    from lmcourse.models import heads
    from lmcourse.pretrained import minilm_path

    cls = getattr(heads, TASKS[task]["head"])
    labels = {"qa": 2, "tags": 3, "pairs": 2}[task]
    return cls.from_pretrained(minilm_path(), num_labels=labels)


def score(task: str, model: torch.nn.Module) -> float:
    """The task's test metric for ``model`` (exact match, tag F1 or accuracy)."""
    from lmcourse import finetune_heads as fh
    from lmcourse.data import plot_tasks as pt

    _, test, _, encoded = task_data(task)
    if task == "qa":
        answers = fh.predict_answers(model, encoded, test)
        return statistics.mean(pt.exact_match(p, e.answer) for p, e in zip(answers, test,
                                                                            strict=True))
    if task == "tags":
        return pt.tag_f1(fh.predict_tags(model, encoded), [s.tags for s in test])
    same = fh.predict_pairs(model, encoded) > 0.5
    return float((same.long() == encoded["labels"]).float().mean())


def bag_of_words_pairs(seed: int) -> dict[str, float]:
    """Test accuracy of a bag-of-words pair classifier trained on the same training pairs,
    its number of steps chosen on development pairs (new books drawn with the training
    names, seed ``data_seed + 1``): ``{"bag_of_words": accuracy, "bag_of_words_steps": n}``."""
    from lmcourse.course.reference.bench_arms import PAIR_BOW_STEPS
    from lmcourse.data import plot_tasks as pt
    from lmcourse.data import tokenize
    from lmcourse.models.baselines import bag_of_words_pair_accuracy

    train, test, _, _ = task_data("pairs")
    dev = pt.fact_pairs(RECIPE["test_examples"], RECIPE["data_seed"] + 1, "train")
    vocab = {"[UNK]": 0}
    for a, b, _ in train:
        for w in tokenize(a) + tokenize(b):
            vocab.setdefault(w, len(vocab))

    def ids(pairs):
        return [([vocab.get(w, 0) for w in tokenize(a)] or [0],
                 [vocab.get(w, 0) for w in tokenize(b)] or [0], label) for a, b, label in pairs]
    tried = {steps: bag_of_words_pair_accuracy(ids(train), ids(dev), len(vocab), steps=steps,
                                               seed=seed) for steps in PAIR_BOW_STEPS}
    best = max(tried, key=tried.get)  # the fewest steps on a tie (dicts keep order)
    return {"bag_of_words": round(bag_of_words_pair_accuracy(ids(train), ids(test), len(vocab),
                                                             steps=best, seed=seed), 4),
            "bag_of_words_steps": best}


@cache
def baselines(task: str) -> dict[str, float]:
    """The seed-free baselines of ``task`` on its test examples."""
    from lmcourse.data import plot_tasks as pt

    train, test, _, _ = task_data(task)
    if task == "qa":
        return {name: round(statistics.mean(pt.exact_match(guess(e.question, e.context),
                                                            e.answer) for e in test), 4)
                for name, guess in (("first_name", pt.first_name_answer),
                                    ("word_overlap", pt.overlap_answer))}
    if task == "tags":
        gold = [s.tags for s in test]
        return {name: round(pt.tag_f1([pt.lexicon_tagger(train, caps)(s.words) for s in test],
                                      gold), 4)
                for name, caps in (("lexicon", False), ("lexicon_capitals", True))}
    return {"same_names": round(statistics.mean(
                pt.name_overlap_pairs(a, b) == label for a, b, label in test), 4),
            "majority": round(max(statistics.mean(lab for _, _, lab in test),
                                  1 - statistics.mean(lab for _, _, lab in test)), 4)}


def _train(task: str):
    def train(recipe: dict, seed: int, device: torch.device, progress: bool = True,
              stop_after: int | None = None) -> SeedRun:
        """Fine-tune seed ``seed`` (the head's draw, dropout and batch order); with
        ``stop_after``, the first steps only, and the trained weights are returned."""
        from lmcourse import finetune_heads as fh

        steps, metric = TASKS[task]["steps"], TASKS[task]["metric"]
        last = stop_after or steps
        _, _, encoded, _ = task_data(task)
        curve: list[list[float]] = []
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(seed)
            model = new_head(task).to(device)

            def checkpoint(step: int, seconds: float) -> None:
                if step % recipe["eval_every"] == 0 or step == last:
                    curve.append([step, round(seconds, 2), round(score(task, model), 4)])

            losses, seconds = fh.train_head(
                model, encoded, steps, batch_size=recipe["batch"], lr=recipe["lr"],
                warmup=recipe["warmup"], clip=recipe["clip"], seed=seed, progress=progress,
                stop_after=stop_after, callback=checkpoint)
        metrics: dict[str, float] = {metric: curve[-1][2], "train_seconds": round(seconds, 1)}
        if task == "pairs" and stop_after is None:
            metrics |= bag_of_words_pairs(seed)
        state = ({k: v.detach().cpu() for k, v in model.state_dict().items()}
                 if stop_after is not None else None)
        return SeedRun(curve=curve, train_loss=losses, metrics=metrics, state=state)
    return train



TITLES = {"qa": "extractive QA (head c): who dies, who betrays, who killed",
          "tags": "token tagging (head d): person and place names",
          "pairs": "sentence pairs (head a): the same plot fact or not"}
HEAD_REFS = {task: Reference(
    name=f"bert-heads-{task}", title=f"MiniLM fine-tuned, {TITLES[task]}",
    recipe={**RECIPE, "task": task, **TASKS[task]}, train=_train(task),
    evaluate=no_weights(f"bert-heads-{task}", " (MiniLM is 90 MB)"),
    baselines=lambda recipe, task=task: dict(baselines(task)),
    seconds_per_seed=0.5 * TASKS[task]["steps"] + 20, keep_weights=(),
    first_steps=ENCODER_FIRST_STEPS,
    notes=["names and places in the test examples never occur in the training examples",
           "seconds are training time only (evaluation excluded)"])
    for task in TASKS}
