"""Reference ``tiny-bert``: the tiny BERT's recipe, run long enough to learn context.

Two layers of width 128, MLM + NSP on pairs of up to 64 pieces, batches of 32, lr 2e-3: the
recipe a notebook trains live for 600 steps, run for 3,000 (a CPU minute stops just before
the held-out loss falls). Scored on held-out masked-token accuracy beside the n-gram guesses
fitted on the training sentences; seed 0's weights are kept for fill-in-the-blank and
attention maps.
"""

from __future__ import annotations

from functools import cache

import torch

from lmcourse.course.reference.pretraining_eval import CORPUS, reviews
from lmcourse.course.reference.recipe import Reference, SeedRun
from lmcourse.models.compress import count_params
from lmcourse.models.pretraining import load_tiny_bert, tiny_bert

TINY_BERT = {
    "corpus": CORPUS, "pairs": "NSP pairs of consecutive sentences (chapter 09's nsp_pairs)",
    "model": "BertForPreTraining", "hidden_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 512, "max_len": 64, "dropout": 0.0,
    "objective": "MLM + NSP", "masking": "dynamic (a fresh 15% mask, 80/10/10, per batch)",
    "steps": 3000, "batch": 32, "lr": 2e-3, "warmup": 0.1, "weight_decay": 0.01,
    "schedule": "linear warm-up over 10% of the steps, then linear decay to 0", "clip": 1.0,
    "eval": "held-out masked-token accuracy on the first 2,500 test pairs, masked once "
            "(seed 123), every 250 steps (chapter 09's evaluate_pretraining)",
    "eval_pairs": 2500, "eval_every": 250,
}



def _masked_test_pairs(first: int, end: int, seed: int):
    """Test pairs ``first`` to ``end - 1`` at the recipe's length, masked once with
    ``seed``: ``(batch, ids, labels)``."""
    from lmcourse.masking import mask_tokens
    from lmcourse.models.pretraining import collate_pairs, nsp_pairs

    data = reviews()
    c = data.corpus
    pairs = nsp_pairs(data.test.documents, seed=1)[first:end]
    batch = collate_pairs(pairs, c.cls_id, c.sep_id, c.pad_id, TINY_BERT["max_len"])
    ids, labels = mask_tokens(batch["input_ids"], c.mask_id, len(c), c.special_ids,
                              generator=torch.Generator().manual_seed(seed))
    return batch, ids, labels


@cache
def tiny_bert_eval_batch():
    """The scored pairs: the first ``eval_pairs`` test pairs, masked once (seed 123)."""
    return _masked_test_pairs(0, TINY_BERT["eval_pairs"], 123)


def tiny_bert_fill_in_budget(baselines: dict) -> tuple[int, int]:
    """The ledger's tuning budgets of the tiny BERT against the fill-in n-gram: its recipe was
    run as written (one setting), the n-gram chose among every setting it scored."""
    from lmcourse.course.reference.bench_recipes import settings_tried

    return 1, settings_tried(baselines)


#: the test pairs the tiny BERT's rivals choose their settings on: after the 2,500 it is
#: scored on, so no setting is chosen on a scored blank
DEV_PAIRS = (2500, 3500)


@cache
def tiny_bert_masks():
    """``(development, held-out)`` single-piece masks of the tiny BERT, each ``(ids,
    labels)``: test pairs 2,500-3,499 masked once with seed 321 choose a rival's setting,
    the scored pairs (:func:`tiny_bert_eval_batch`) score it."""
    _, dev_ids, dev_labels = _masked_test_pairs(*DEV_PAIRS, 321)
    _, ids, labels = tiny_bert_eval_batch()
    return (dev_ids, dev_labels), (ids, labels)


def tiny_bert_model():
    """The recipe's :func:`~lmcourse.models.pretraining.tiny_bert` on the review corpus."""
    r = TINY_BERT
    return tiny_bert(len(reviews().corpus), r["hidden_size"], r["num_hidden_layers"],
                     r["num_attention_heads"], r["intermediate_size"], r["max_len"])


def _tiny_bert_scores(model) -> dict[str, float]:
    from lmcourse.models.pretraining import evaluate_pretraining

    out = evaluate_pretraining(model, *tiny_bert_eval_batch())
    return {"masked_accuracy": round(out["masked accuracy"], 4),
            "mlm_loss": round(out["MLM loss"], 4), "nsp_accuracy": round(out["NSP accuracy"], 4)}


def train_tiny_bert(recipe: dict, seed: int, device: torch.device, progress: bool = True,
                    stop_after: int | None = None) -> SeedRun:
    """The tiny BERT for ``recipe['steps']``; the curve is held-out masked-token accuracy
    (higher is better) every ``eval_every`` steps."""
    import lmcourse
    from lmcourse.models.pretraining import nsp_pairs, pretrain

    data = reviews()
    c = data.corpus
    pairs = nsp_pairs(data.train.documents, seed=0)
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        model = tiny_bert_model().to(device)
        curve: list[list[float]] = []
        bar = lmcourse.progress_bar(range(stop_after or recipe["steps"]), progress,
                                    desc=f"tiny-bert seed {seed}", mininterval=10)

        def checkpoint(step: int, history) -> None:
            bar.update(1)
            if step % recipe["eval_every"] == 0 or step == recipe["steps"]:
                acc = _tiny_bert_scores(model)["masked_accuracy"]
                curve.append([step, round(history.seconds, 2), acc])
                bar.set_postfix(masked_accuracy=f"{acc:.3f}")

        history = pretrain(model, pairs, steps=recipe["steps"], batch_size=recipe["batch"],
                           lr=recipe["lr"], warmup=recipe["warmup"],
                           weight_decay=recipe["weight_decay"], nsp=True, seed=seed,
                           progress=False, stop_after=stop_after, callback=checkpoint,
                           special_ids=c.special_ids, cls_id=c.cls_id, sep_id=c.sep_id,
                           pad_id=c.pad_id, mask_id=c.mask_id, max_len=recipe["max_len"])
        bar.close()
    metrics: dict[str, float] = {}
    if stop_after is None:
        metrics = _tiny_bert_scores(model)
    metrics.update(parameters=count_params(model.bert), train_seconds=round(history.seconds, 1),
                   tokens_per_s=round(history.tokens_per_second))
    return SeedRun(curve=curve, train_loss=[m + n for m, n in zip(history.mlm, history.nsp,
                                                                  strict=True)],
                   metrics=metrics, state={k: v.detach().cpu()
                                           for k, v in model.state_dict().items()})


def evaluate_tiny_bert(recipe: dict, state: dict[str, torch.Tensor]) -> tuple[str, float]:
    model = load_tiny_bert(state, recipe["num_attention_heads"])
    return "masked_accuracy", _tiny_bert_scores(model)["masked_accuracy"]


@cache
def tiny_bert_baselines(recipe: dict | None = None) -> dict[str, float]:
    """The guesses the tiny BERT is printed beside, fitted on its training sentences: the
    unigram and bigrams (add-k chosen on held-out training sentences) and the tuned fill-in
    n-gram (order and discount chosen on :func:`tiny_bert_masks`' development pairs)."""
    from lmcourse.course.reference.bench_fill_in import fill_in_ngram
    from lmcourse.models.masked_lm_bench import choose_smoothing, masked_token_baselines

    _, ids, labels = tiny_bert_eval_batch()
    sentences, special_ids = reviews().train.sentences(), reviews().corpus.special_ids
    k, _ = choose_smoothing(sentences, special_ids)  # on held-out training sentences
    g = masked_token_baselines(sentences, ids, labels, special_ids, smoothing=k)
    return {"unigram": round(g["unigram"], 4), "bigram_left": round(g["bigram (left)"], 4),
            "bigram_both": round(g["bigram (both sides)"], 4), "bigram_both_k": k,
            **fill_in_ngram(tuple(map(tuple, sentences)), "reviews", tiny_bert_masks)}



TINY_BERT_REF = Reference(
    name="tiny-bert", title="chapter 09's tiny BERT, 3,000 steps, vs the n-gram guesses",
    recipe=TINY_BERT, train=train_tiny_bert, evaluate=evaluate_tiny_bert,
    baselines=lambda recipe: dict(tiny_bert_baselines()), seconds_per_seed=240.0,
    first_steps=25, tolerance=2e-3, keep_weights=(0,),
    notes=["chapter 09's model and recipe; only the number of steps differs (600 -> 3,000)",
           "seconds are training time only (held-out evaluation excluded)"])
