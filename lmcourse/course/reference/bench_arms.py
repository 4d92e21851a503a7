"""References ``bench-*``: the pre-training bench, one arm per change a paper made.

The bench is a tiny BERT (2 layers of width 64, pairs of up to 32 pieces) with RoBERTa's
recipe (dynamic masking, MLM only), 4,000 steps of 32 pairs, three seeds; each arm changes
one thing (``ARMS``, in :mod:`bench_recipes`): static masking over 40 epochs, NSP, SOP,
ALBERT's factorised embeddings (E = 32) and layer sharing, a large batch at equal pairs,
span masking and the boundary objective, ELECTRA at equal training FLOPs, DeBERTa and its
ablations (the models: :mod:`bench_models`). Every arm is scored on the same held-out
masked positions and by the probe (``pretraining_eval``), beside the n-gram guesses and a
bag of words. ``wiki-bench-*`` (``WIKI_BENCH_REFS``) are the same arms on the Wikipedia
excerpt, pairs of up to 64 pieces, probed on Rotten Tomatoes snippets; ``prose-bench-*``
(``PROSE_BENCH_REFS``) the same again in the 8,000-piece pre-training vocabulary, pairs of up
to 128 pieces (issue 55).
"""

from __future__ import annotations

import re
from functools import cache

import torch

from lmcourse.course.reference.bench_fill_in import (  # noqa: F401 - the chapters read pb.*
    FILL_IN_KEYS,
    fill_in_label,
    fill_in_ngram,
    fill_in_on_blanks,
    fill_in_row,
)
from lmcourse.course.reference.bench_models import (  # noqa: F401 - the chapters read pb.*
    _deberta,
    _generator_config,
    bench_config,
    build_model,
    deberta_intermediate,
    electra_steps,
    step_flops,
)
from lmcourse.course.reference.bench_recipes import (  # noqa: F401 - the chapters read pb.*
    ALBERT_TUNING,
    ARMS,
    BATCH_LR_DEV,
    BATCH_LR_TUNING,
    BATCH_TUNING,
    BENCH,
    ELECTRA_LR_DEV_AUC,
    ELECTRA_LR_GRID,
    ELECTRA_LR_TUNING,
    HALF_PAIRS,
    KEEP_WEIGHTS,
    LARGE_BATCH_WARMUP,
    LR_GRID,
    LR_TUNING,
    NOT_RECIPES,
    PREFIXES,
    PROSE,
    PROSE_TUNING,
    QUARTER_PAIRS,
    SMALL_BATCH_TUNING,
    SMALL_BATCH_WARMUP_DEV,
    SMALL_PAIRS,
    SPAN_MASKING,
    WARMUP_GRID,
    WIKI,
    WIKI_ARMS,
    WIKI_BENCH,
    WIKI_SETTINGS_TRIED,
    WIKI_TUNING,
    _arm,
    _settings,
    corpus_of,
    fill_in_budget,
    keeps_weights,
    reviews_fill_in_budget,
    settings_tried,
    train_pairs,
)
from lmcourse.course.reference.pretraining_eval import (  # noqa: F401 - the chapters read pb.*
    BLANK_KINDS,
    WIKI_CORPORA,
    _data,
    bench,
    blank_scores,
    dev_batch,
    encoder_of,
    held_out_blanks,
    inputs_as_seen,
    probe_auc,
    probe_data,
    show_inputs_as_seen,
    sop_eval_batch,
)
from lmcourse.course.reference.recipe import Reference, SeedRun
from lmcourse.models.compress import count_params

# ---- masking -----------------------------------------------------------------------------

def _masker(name: str, pairs: list, seed: int):
    from lmcourse.masking import StaticMasking, mask_spans
    from lmcourse.models.pretraining import collate_pairs

    s, c = _settings(name), _data(corpus_of(name)).corpus
    if s["masking"].startswith("static"):
        copies = re.search(r"(\d+) cop", s["masking"])  # "static, 10 copies"; "static": one
        ids = collate_pairs(pairs, c.cls_id, c.sep_id, c.pad_id, s["max_len"])["input_ids"]
        masks = StaticMasking(ids, int(copies.group(1)) if copies else 1, mask_id=c.mask_id,
                              vocab_size=len(c), special_ids=c.special_ids,
                              generator=torch.Generator().manual_seed(seed))
        return masks.by_visit
    if s["masking"].startswith("span"):  # whole words, as SpanBERT: a "##" piece continues one
        rng = torch.Generator().manual_seed(seed)
        continues = torch.tensor([piece.startswith("##") for piece in c.pieces])
        return lambda rows, ids: mask_spans(ids, c.mask_id, len(c), c.special_ids, generator=rng,
                                            is_continuation=continues[ids])
    return None


def _scores(name: str, model) -> dict[str, float]:
    from lmcourse.models.pretraining import evaluate_pretraining

    b, s, corpus = bench(corpus_of(name)), _settings(name), corpus_of(name)
    out = evaluate_pretraining(model, b.eval_batch, b.eval_ids, b.eval_labels)
    metrics = {"masked_accuracy": round(out["masked accuracy"], 4),
               "mlm_loss": round(out["MLM loss"], 4), **blank_scores(model, corpus)}
    if s["objective"] == "MLM + NSP":
        metrics["nsp_accuracy"] = round(out["NSP accuracy"], 4)
    if s["objective"] == "MLM + SOP":
        metrics["sop_accuracy"] = round(evaluate_pretraining(model, *sop_eval_batch(corpus))
                                        ["NSP accuracy"], 4)
    return metrics



# ---- training ----------------------------------------------------------------------------

def _train_bench(name: str, recipe: dict, seed: int, device: torch.device,
                 progress: bool = True, stop_after: int | None = None) -> SeedRun:
    model, history, curve, probe_curve = _pretrain_arm(name, recipe, seed, device, progress,
                                                       stop_after)
    losses = total_losses(history)
    metrics: dict[str, float] = {}
    if stop_after is None:
        metrics = {**_scores(name, model),
                   "probe_auc": probe_auc(encoder_of(model), corpus_of(name))}
        if probe_curve:
            metrics["probe_curve"] = probe_curve
    metrics.update(parameters=count_params(model), train_seconds=round(history.seconds, 1),
                   tokens_per_s=round(history.tokens_per_second))
    if _arm(name) == "bench-mlm":  # ELECTRA's yardstick
        metrics["train_flops"] = step_flops(name) * len(history.mlm)
    state = ({k: v.detach().cpu() for k, v in model.state_dict().items()}
             if keeps_weights(name) else None)
    return SeedRun(curve=curve, train_loss=losses, metrics=metrics, state=state)


def total_losses(history) -> list[float]:
    """Each step's training loss: MLM + NSP (or SOP) + the auxiliary loss (SBO)."""
    return [m + n + a for m, n, a in zip(
        history.mlm, history.nsp, history.auxiliary or [0.0] * len(history.mlm), strict=True)]


def dev_scores(name: str, seed: int = 0, device: torch.device | str = "cpu",
               **changes) -> dict[str, float]:
    """Arm ``name`` trained with ``changes`` to its recipe (e.g. ``warmup=0.3``), scored on
    the *development* masks (:func:`dev_batch`), never on the reported ones: how a setting
    the papers tuned is chosen here. Masked accuracy and MLM loss."""
    from lmcourse.models.pretraining import evaluate_pretraining

    model, *_ = _pretrain_arm(name, {**_settings(name), **changes}, seed,
                              torch.device(device), progress=True, probe=False)
    out = evaluate_pretraining(model, *dev_batch(corpus_of(name)))
    return {"masked_accuracy": round(out["masked accuracy"], 4),
            "mlm_loss": round(out["MLM loss"], 4)}


def electra_dev_auc(lr: float, seed: int = 0, device: torch.device | str = "cpu") -> float:
    """wiki-bench-electra trained at learning rate ``lr``, scored by the probe on the
    Rotten Tomatoes *tuning* snippets: how ELECTRA's own learning rate is chosen."""
    name = WIKI + "bench-electra"
    run_ = _train_electra({**_settings(name), "lr": lr}, seed, torch.device(device),
                          name=name, probe_split="tuning")
    return run_.metrics["dev_probe_auc"]


def _pretrain_arm(name: str, recipe: dict, seed: int, device: torch.device,
                  progress: bool = True, stop_after: int | None = None, probe: bool = True):
    """Train arm ``name`` with ``recipe``: ``(model, history, curve, probe_curve)``."""
    import lmcourse
    from lmcourse.models.pretraining import pretrain

    s, corpus = {**BENCH, **recipe}, corpus_of(name)
    b = bench(corpus)
    pairs = train_pairs(name)
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        model = build_model(name, s).to(device)
        masker = _masker(name, pairs, seed)
        curve: list[list[float]] = []
        probe_curve: list[list[float]] = []  # bench-mlm: the probe as ELECTRA's curve has it
        probe_every = s["steps"] // 8 if _arm(name) == "bench-mlm" and probe else 0
        bar = lmcourse.progress_bar(range(stop_after or s["steps"]), progress,
                                    desc=f"{name} seed {seed}", mininterval=10)

        def checkpoint(step: int, history) -> None:
            bar.update(1)
            if step % s["eval_every"] == 0 or step == s["steps"]:
                loss = b.score(model)["MLM loss"]
                curve.append([step, round(history.seconds, 2), round(loss, 4)])
                bar.set_postfix(held_out_loss=f"{loss:.3f}")
            if probe_every and step % probe_every == 0:
                probe_curve.append([step, round(history.seconds, 2),
                                    probe_auc(encoder_of(model), corpus)])

        history = pretrain(model, pairs, steps=s["steps"], batch_size=s["batch"], lr=s["lr"],
                           warmup=s["warmup"], weight_decay=s["weight_decay"],
                           nsp=s["objective"] in ("MLM + NSP", "MLM + SOP"), masker=masker,
                           seed=seed, progress=False, stop_after=stop_after,
                           callback=checkpoint, **b.ids_args)
        bar.close()
    return model, history, curve, probe_curve


def _train_electra(recipe: dict, seed: int, device: torch.device, progress: bool = True,
                   stop_after: int | None = None, name: str = "bench-electra",
                   probe_split: str = "test") -> SeedRun:
    """ELECTRA's run; its curve is the probe's ROC-AUC on the discriminator
    (``probe_split="tuning"``: a development run, scored on the tuning snippets only)."""
    import lmcourse
    from lmcourse.models.electra import (
        ElectraDiscriminator,
        pretrain_electra,
        share_embeddings,
    )
    from lmcourse.models.pretraining import BertForPreTraining

    corpus = corpus_of(name)
    prefix = PREFIXES[corpus]
    s, b = {**BENCH, **recipe}, bench(corpus)
    steps = electra_steps(corpus)
    every = max(1, steps // 8)
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        generator = BertForPreTraining(_generator_config(corpus)).to(device)
        discriminator = ElectraDiscriminator(bench_config(corpus)).to(device)
        if s.get("embeddings", "").startswith("shared"):
            share_embeddings(generator, discriminator)
        curve: list[list[float]] = []
        bar = lmcourse.progress_bar(range(stop_after or steps), progress,
                                    desc=f"{name} seed {seed}", mininterval=10)

        def checkpoint(step: int, history) -> None:
            bar.update(1)
            if (step % every == 0 or step == steps) and probe_split == "test":
                auc = probe_auc(discriminator.electra, corpus)
                curve.append([step, round(history.seconds, 2), auc])
                bar.set_postfix(probe_auc=f"{auc:.3f}")

        history = pretrain_electra(generator, discriminator, train_pairs(f"{prefix}bench-mlm"),
                                   steps=steps, batch_size=s["batch"], lr=s["lr"],
                                   warmup=s["warmup"], weight_decay=s["weight_decay"],
                                   weight=s["electra_weight"], seed=seed, progress=False,
                                   stop_after=stop_after, callback=checkpoint, **b.ids_args)
        bar.close()
    losses = [m + s["electra_weight"] * d for m, d in zip(history.mlm, history.disc,
                                                           strict=True)]
    metrics: dict[str, float] = {}
    if stop_after is None and probe_split == "tuning":
        metrics = {"dev_probe_auc": probe_auc(discriminator.electra, corpus, "tuning")}
    elif stop_after is None:
        metrics = {"probe_auc": curve[-1][2], "generator_mlm_loss":
                   round(b.score(generator)["MLM loss"], 4),
                   "replaced_share": round(sum(history.replaced[-100:]) / 100, 4)}
    metrics.update(parameters=count_params(discriminator),
                   generator_parameters=count_params(generator), steps=steps,
                   train_seconds=round(history.seconds, 1),
                   tokens_per_s=round(history.tokens / max(history.seconds, 1e-9)),
                   train_flops=step_flops(name) * len(history.mlm))
    return SeedRun(curve=curve, train_loss=losses, metrics=metrics)


def arm_sentences(name: str) -> list:
    """The training sentences arm ``name`` pre-trains on (its pairs' sentences, or all)."""
    data = _data(corpus_of(name))
    if _settings(name)["train_pairs"] == "all":
        return data.train.sentences()
    return [s for a, b, _ in train_pairs(name) for s in (a, b)]


@cache
def masked_guesses(name: str) -> dict[str, float]:
    """The context-free guesses at arm ``name``'s held-out masked positions, fitted on its
    training sentences, the two-sided bigram's add-k (``bigram_both_k``) chosen on training
    sentences held out from its counts."""
    from lmcourse.models.masked_lm_bench import choose_smoothing, masked_token_baselines

    corpus = corpus_of(name)
    b, specials, sentences = bench(corpus), _data(corpus).corpus.special_ids, arm_sentences(name)
    k, _ = choose_smoothing(sentences, specials)
    guesses = masked_token_baselines(sentences, b.eval_ids, b.eval_labels, specials,
                                     smoothing=k)
    return {"unigram": round(guesses["unigram"], 4),
            "bigram_left": round(guesses["bigram (left)"], 4),
            "bigram_both": round(guesses["bigram (both sides)"], 4), "bigram_both_k": k}


@cache
def bench_baselines(name: str) -> dict[str, float]:
    """The context-free guesses (:func:`masked_guesses`), the fill-in n-gram on single
    pieces, whole words and spans (:func:`fill_in_ngram`, :func:`fill_in_on_blanks`), and
    the probe's bag of words on the same rows: on the reviews the course's spoiler baseline
    tuned on the validation reviews; for the Wikipedia arms one tuned on the Rotten
    Tomatoes tuning split (:func:`lmcourse.models.tuned_bag_of_words.tune_bag_of_words`)."""
    from lmcourse.metrics import roc_auc
    from lmcourse.models.baselines import tuned_bag_of_words_baseline

    corpus = corpus_of(name)
    _, labels, fit, fit_rows, test_rows = probe_data(corpus)
    test_texts = [t for t, _, _ in test_rows]
    if corpus == "reviews":
        from lmcourse.data.goodreads import load_reviews, sample_path, sentences, split_reviews

        # tuned on the validation reviews, which neither the bench nor the probe reads
        validation = sentences(split_reviews(load_reviews(sample_path())).validation)
        bow = tuned_bag_of_words_baseline(fit_rows, validation)(test_texts)
    else:
        from lmcourse.data.rotten_tomatoes import load_rotten_tomatoes
        from lmcourse.models.tuned_bag_of_words import tune_bag_of_words

        tuning = load_rotten_tomatoes("tuning")
        bow = tune_bag_of_words([t for t, _, _ in fit_rows], labels[fit],
                                [r.text for r in tuning],
                                torch.tensor([r.label for r in tuning]))(test_texts)
    sentences = tuple(map(tuple, arm_sentences(name)))
    out = {**masked_guesses(name), "bag_of_words_auc": round(roc_auc(labels[~fit], bow), 4),
           **fill_in_ngram(sentences, corpus), **fill_in_on_blanks(sentences, corpus)}
    if corpus in WIKI_CORPORA:
        objective = _settings(name)["objective"]
        if objective in ("MLM + NSP", "MLM + SOP"):
            out.update(order_blind_pairs(objective[-3:], corpus))
    return out


PAIR_BOW_STEPS = (300, 1000, 3000)


@cache
def order_blind_pairs(task: str, corpus: str = "wiki") -> dict[str, float]:
    """The sentence-pair arms' rival on real prose: chapter 10's order-blind bag-of-words
    pair classifier, its training steps chosen on pairs of the tuning articles, scored on
    the held-out pairs the arm is scored on (NSP: the bench's first 1,000 test pairs; SOP:
    :func:`sop_eval_batch`'s)."""
    from lmcourse.models.baselines import bag_of_words_pair_accuracy
    from lmcourse.models.pretraining import nsp_pairs, sop_pairs

    data, n = _data(corpus), len(bench(corpus).eval_ids)
    make = {"NSP": nsp_pairs, "SOP": sop_pairs}[task]
    train, tuning = make(data.train.documents, seed=0), make(data.tuning.documents, seed=2)
    held = make(data.test.documents, seed=1)[:n]
    tried = {steps: round(bag_of_words_pair_accuracy(train, tuning[:n], len(data.corpus),
                                                     steps=steps), 4)
             for steps in PAIR_BOW_STEPS}
    best = max(tried, key=tried.get)
    key = f"order_blind_{task.lower()}"
    return {key: round(bag_of_words_pair_accuracy(train, held, len(data.corpus), steps=best),
                       4), f"{key}_steps": best,
            **{f"{key}_dev@{steps}": acc for steps, acc in tried.items()}}


def load_arm(name: str, state: dict[str, torch.Tensor]) -> torch.nn.Module:
    """Arm ``name``'s model with stored weights, in evaluation mode (float32, CPU)."""
    model = build_model(name)
    model.load_state_dict({k: v.float() for k, v in state.items()})
    return model.eval()


def _evaluate_arm(name: str):
    def evaluate(recipe: dict, state: dict[str, torch.Tensor]) -> tuple[str, float]:
        return "mlm_loss", round(bench(corpus_of(name)).score(load_arm(name, state))["MLM loss"],
                                 4)
    return evaluate



# how much longer a step takes on each corpus than on the reviews (wider model, longer pairs,
# larger vocabulary): the committed wall times of wiki-bench-mlm and prose-bench-mlm over
# bench-mlm's (1,318 s and 2,706 s against 259 s for three seeds)
CORPUS_COST = {"reviews": 1.0, "wiki": 5.0, "prose": 10.0}


def _arm_reference(name: str) -> Reference:
    """The reference of arm ``name`` (``bench-*`` on the reviews, ``wiki-bench-*`` on the
    Wikipedia excerpt)."""
    title, changes = ARMS[_arm(name)]
    if corpus_of(name) in WIKI_CORPORA:
        title = WIKI_ARMS.get(_arm(name), (title, {}))[0]
    recipe = _settings(name)
    if _arm(name) == "bench-electra":
        def train(recipe, seed, device, progress=True, stop_after=None, name=name):
            return _train_electra(recipe, seed, device, progress, stop_after, name)
    else:
        def train(recipe, seed, device, progress=True, stop_after=None, name=name):
            return _train_bench(name, recipe, seed, device, progress, stop_after)
    steps = recipe["steps"] if isinstance(recipe["steps"], int) else BENCH["steps"]
    return Reference(
        name=name, title=f"{PREFIXES[corpus_of(name)].replace('-', ' ')}bench: {title}",
        recipe=recipe, train=train,
        evaluate=_evaluate_arm(name),
        baselines=lambda recipe, name=name: dict(bench_baselines(name)),
        seconds_per_seed=75.0 * steps * recipe["batch"] / (BENCH["steps"] * BENCH["batch"])
        * CORPUS_COST[corpus_of(name)],
        first_steps=25, tolerance=2e-3,
        keep_weights=(0,) if keeps_weights(name) else (),
        notes=["one change against bench-mlm (DeBERTa's ablations: against bench-deberta)",
               "seconds are training time only (held-out evaluation excluded)",
               {"wiki": WIKI_TUNING, "prose": PROSE_TUNING}.get(corpus_of(name), LR_TUNING)]
        + ([ELECTRA_LR_TUNING] if _arm(name) == "bench-electra"
           and corpus_of(name) in WIKI_CORPORA else [])
        + ([ALBERT_TUNING] if "embedding_size" in changes else [])
        + ([BATCH_TUNING] if "warmup" in changes else []))


BENCH_REFS = {name: _arm_reference(name) for name in ARMS}
#: the same arms on the Wikipedia excerpt (run, not yet registered: issue 42)
WIKI_BENCH_REFS = {WIKI + name: _arm_reference(WIKI + name) for name in ARMS}
#: the same arms in the pre-training vocabulary (issue 55: registered once they have run)
PROSE_BENCH_REFS = {PROSE + name: _arm_reference(PROSE + name) for name in ARMS}
