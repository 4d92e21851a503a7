"""Quality checks that end a lab: does a fine-tuned model beat the baselines trained
on the same sentences (:mod:`lmcourse.models.baselines`)? A baseline may be trained with
several seeds; the target is then the mean of their ROC-AUCs, or, with
``beyond_interval=True``, every one of them beyond the 95% paired bootstrap interval of the
difference. After distillation: does the student keep enough of its teacher's ROC-AUC?"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lmcourse import metrics
from lmcourse.checks import as_float_tensor, attempt, expect, fail, passed
from lmcourse.course.claims import bootstrap_verdict
from lmcourse.course.claims import verdict as claim
from lmcourse.metrics import bootstrap_auc_difference
from lmcourse.models.baselines import Sentences

__all__ = ["beats_baseline", "keeps_teacher_quality"]


Predict = Callable[[list[str]], Any]


def beats_baseline(predict: Predict, validation: Sentences, test: Sentences,
                   baselines: dict[str, Predict | Sequence[Predict]], target: str = "BiLSTM",
                   tolerance: float = 0.0, parts: dict[str, Callable[[str], bool]] | None = None,
                   losses: Sequence[float] | None = None, label: str = "fine-tuned MiniLM",
                   beyond_interval: bool = False, positives: str = "spoilers",
                   record: bool = False, units: str = "sentences",
                   validation_name: str = "validation"
                   ) -> dict[str, dict[str, tuple[float, float]]]:
    """The fine-tuned model's ROC-AUC on ``test`` reaches that of ``baselines[target]``:
    ``AUC >= AUC_target - tolerance``. ``predict(texts)`` and each baseline return
    P(spoiler); a baseline given as a list of such functions (one per seed) gets one row per
    seed and a row ``"<name> (mean of k seeds)"``, and its AUC is the mean of theirs. The
    table (F1 at each model's best validation threshold, and the ``parts`` of the test set)
    comes from :func:`lmcourse.metrics.compare_classifiers`. ``losses``, the training losses,
    help to name a diverged run. Prints the bootstrap interval of the AUC difference with
    each of the target's runs; with ``beyond_interval`` the check passes only when each of
    those intervals lies above 0 (``tolerance`` is then not used). Returns
    ``{model: {part: (ROC-AUC, F1)}}``. ``positives`` names class 1 in the messages (and,
    with ``units`` and ``validation_name``, in the table);
    by default it decides the check without recording a claim: one run gets no verdict, and
    a lab reads its verdict from the chapter's seeds; ``record=True`` records one."""
    name = f"{label} vs {target}"
    if target not in baselines:
        raise ValueError(f"no baseline named {target!r} among {sorted(baselines)}")
    runs = {key: list(fn) if isinstance(fn, Sequence) else [fn] for key, fn in baselines.items()}
    if not all(runs.values()):
        raise ValueError("each baseline needs at least one trained model")
    row_names = {key: [key] if len(fns) == 1 else [f"{key} (seed {i})" for i in range(len(fns))]
                 for key, fns in runs.items()}
    v_texts = [t for t, _, _ in validation]
    t_y = np.array([lab for _, lab, _ in test])
    scores = as_float_tensor(attempt(name, predict, v_texts + [t for t, _, _ in test]))
    expect(scores is not None and scores.numel() == len(v_texts) + len(test), name,
           f"predict(texts) should return one score per sentence ({len(v_texts) + len(test)}"
           f" here)")
    scores = scores.reshape(-1).numpy()
    models = {row: fn for key, fns in runs.items()
              for row, fn in zip(row_names[key], fns, strict=True)}
    rows, test_scores = metrics.compare_classifiers(
        {**models, label: (scores[:len(v_texts)], scores[len(v_texts):])},
        validation, test, parts, units=units, positives=positives,
        validation_name=validation_name)
    auc = rows[label]["all"][0]
    target_aucs = [rows[row]["all"][0] for row in row_names[target]]
    target_auc = float(np.mean(target_aucs))
    if len(target_aucs) > 1:
        rows[f"{target} (mean of {len(target_aucs)} seeds)"] = {
            part: tuple(float(np.mean([rows[r][part][j] for r in row_names[target]]))
                        for j in range(2)) for part in rows[label]}
        print(f"{target}: ROC-AUC {target_auc:.3f} mean of {len(target_aucs)} seeds "
              f"(from {min(target_aucs):.3f} to {max(target_aucs):.3f})")
    if not np.isfinite(scores).all():
        fail(name, "some scores are NaN or infinite: training diverged. Lower the learning "
                   "rate (2e-5 to 1e-4) and clip the gradients.")
    quarter = max(1, len(losses) // 4) if losses is not None else 1
    if losses is not None and len(losses) >= 4 and (
            not np.isfinite(losses).all()
            or np.mean(losses[-quarter:]) > np.mean(losses[:quarter])):
        fail(name, "the training loss did not go down (or became NaN): a learning rate far "
                   "above 1e-4 wrecks the pre-trained weights; check configure's lr and the "
                   "schedule, and that train_step clears the old gradients.")
    if np.ptp(scores) < 1e-6:
        fail(name, "every sentence gets the same score: the model predicts the majority "
                   "class. Balanced batches or the class weight? Has it been trained at all?")
    if auc < 0.5:
        fail(name, f"AUC {auc:.3f} is below chance: the scores rank {positives} LOWEST. Is "
                   "predict_proba returning P(class 1)?")
    differences = {row: bootstrap_auc_difference(t_y, test_scores[label], test_scores[row])
                   for row in row_names[target]}
    for row, (diff, low, high) in differences.items():
        print(f"AUC({label}) - AUC({row}) = {diff:+.3f}, 95% bootstrap interval "
              f"[{low:+.3f}, {high:+.3f}]")
    lows = [low for _, low, _ in differences.values()]
    if beyond_interval:
        if len(row_names[target]) == 1 and record:
            bootstrap_verdict(f"the {label} ranks {positives} better than the {target}", t_y,
                              test_scores[label], baseline=(target, test_scores[target]),
                              difference=differences[target])
        expect(min(lows) > 0, name,
               f"ROC-AUC {auc:.3f} vs the {target}'s {target_auc:.3f}: the 95% interval of the "
               f"difference reaches {min(lows):+.3f}, so another test set of this size could "
               "reverse it. Train for the recipe's steps, and check the learning rate, the "
               "warm-up and the balanced batches.")
        passed(name, f"ROC-AUC {auc:.3f} vs {target_auc:.3f}, ahead beyond the 95% bootstrap "
                     f"interval (its lower end {min(lows):+.3f}); F1 {rows[label]['all'][1]:.3f}")
        return rows
    if record:
        claim(f"the {label} ranks {positives} better than the {target}", auc,
              baseline=(target, target_aucs), higher_is_better=True, metric="test ROC-AUC")
    margin = f" - {tolerance:g}" if tolerance else ""
    of = f" (mean of {len(target_aucs)} seeds)" if len(target_aucs) > 1 else ""
    expect(auc >= target_auc - tolerance, name,
           f"ROC-AUC {auc:.3f} does not reach the {target}'s {target_auc:.3f}{of}{margin}: "
           "train for more steps (lmcourse.budget), or check the learning rate and the class "
           "balance.")
    passed(name, f"ROC-AUC {auc:.3f} vs {target_auc:.3f}{of}{margin}; F1 "
                 f"{rows[label]['all'][1]:.3f}")
    return rows


# ---- the distilled student against its teacher ---------------------------------------------

def _scores(name: str, who: str, predict: Predict, texts: list[str]) -> np.ndarray:
    raw = as_float_tensor(attempt(name, predict, texts))
    expect(raw is not None and raw.numel() == len(texts), name,
           f"{who}: predict(texts) should return one score per sentence ({len(texts)} here)")
    return raw.reshape(-1).double().numpy()


def keeps_teacher_quality(student: Predict, teacher: Predict, test: Sequence[tuple],
                          baselines: dict[str, Predict] | None = None,
                          losses: Sequence[float] | None = None, share: float = 0.75,
                          bag_of_words: str | None = None, control: str | None = None,
                          positives: str = "spoilers", units: str = "sentences",
                          record: bool = False) -> dict[str, float]:
    """The student keeps at least ``share`` of the teacher's lift above chance on ``test``
    rows ``(text, label, ...)``, (AUC - 0.5) / (AUC_teacher - 0.5) (a ratio of ROC-AUCs
    would credit a coin with half of any teacher), and, when ``bag_of_words`` names one of
    the ``baselines``, not behind that bag of words beyond the 95% paired bootstrap interval
    of the difference. Prints each model's AUC (``baselines`` too) and its share of the
    teacher's lift, and bootstrap intervals; records verdicts against the bag of words and
    against ``control`` (the same student trained on the labels alone). ``losses`` (one per
    training step) tell an untrained or diverged student. ``positives`` and ``units`` name
    class 1 and the rows in what is printed; by default the check is decided and the bootstrap
    intervals printed without recording claims (a lab reads its verdict from the chapter's
    seeds); ``record=True`` records them. Returns ``{model: AUC}``."""
    name = "student vs teacher"
    texts = [row[0] for row in test]
    y = np.array([int(row[1]) for row in test])
    if losses is not None:
        expect(len(losses) > 0, name,
               "the student was not trained (no loss recorded): make distill_step pass its "
               "check, then run the distillation cell.")
        expect(bool(np.isfinite(losses).all()), name,
               "the training loss became NaN or infinite: the run diverged. Is the learning "
               "rate too high, or is a log of a softmax computed naively?")
    s = _scores(name, "the student", student, texts)
    t = _scores(name, "the teacher", teacher, texts)
    if not np.isfinite(s).all():
        fail(name, "some of the student's scores are NaN or infinite: training diverged.")
    if np.ptp(s) < 1e-9:
        fail(name, "the student gives every sentence the same score: it predicts one class.")
    aucs = {"teacher": metrics.roc_auc(y, t), "student": metrics.roc_auc(y, s)}
    scored = {key: _scores(name, key, fn, texts) for key, fn in (baselines or {}).items()}
    for key in (bag_of_words, control):
        if key is not None and key not in scored:
            raise ValueError(f"{key!r} is not among the baselines {sorted(scored)}")
    aucs |= {key: metrics.roc_auc(y, v) for key, v in scored.items()}
    print(f"{len(y):,} test {units}, {int(y.sum()):,} {positives}")
    if aucs["teacher"] <= 0.5:
        fail(name, f"the teacher's ROC-AUC {aucs['teacher']:.3f} is not above chance: its "
                   "predict(texts) should return P(class 1); a student cannot keep a lift it "
                   "does not have.")
    print(f"{'':30s}{'ROC-AUC':>9s}{'of the teacher’s lift':>23s}")
    for key, auc in aucs.items():
        print(f"{key:30s}{auc:9.3f}{metrics.lift_share(auc, aucs['teacher']):23.0%}")
    diff, low, high = metrics.bootstrap_auc_difference(y, s, t)
    print(f"AUC(student) - AUC(teacher) = {diff:+.3f}, 95% bootstrap interval "
          f"[{low:+.3f}, {high:+.3f}]")
    if aucs["student"] < 0.5:
        fail(name, f"AUC {aucs['student']:.3f} is below chance: the student's scores rank "
                   f"{positives} lowest. Is it scoring P(class 1)?")
    kept = metrics.lift_share(aucs["student"], aucs["teacher"])
    if record:
        claim(f"the distilled student keeps at least {share:.0%} of the teacher's lift above "
              "chance", kept, baseline=("the target", share), higher_is_better=True,
              metric="(test ROC-AUC - 0.5) / (teacher's - 0.5)",
              paper="DistilBERT keeps 97% of BERT's GLUE score (Sanh et al. 2019; a score, not "
                    "a lift)")
    expect(kept >= share, name,
           f"the student's ROC-AUC {aucs['student']:.3f} keeps {kept:.0%} of the teacher's lift "
           f"above chance ({aucs['teacher']:.3f} - 0.5), below {share:.0%}: train for more "
           "steps, or check the learning rate, the temperature and that the student starts "
           "from the teacher's layers.")
    if control is not None:
        if record:
            bootstrap_verdict(f"the distilled student ranks {positives} better than the "
                              f"{control}", y, s, baseline=(control, scored[control]),
                              resamples=500)
        else:
            diff, low, high = metrics.bootstrap_auc_difference(y, s, scored[control])
            print(f"AUC(student) - AUC({control}) = {diff:+.3f}, 95% bootstrap interval "
                  f"[{low:+.3f}, {high:+.3f}]")
    behind = ""
    if bag_of_words is not None:
        diff, low, high = metrics.bootstrap_auc_difference(y, s, scored[bag_of_words])
        if record:
            bootstrap_verdict(f"the distilled student ranks {positives} better than the "
                              f"{bag_of_words}", y, s,
                              baseline=(bag_of_words, scored[bag_of_words]),
                              difference=(diff, low, high))
        else:
            print(f"AUC(student) - AUC({bag_of_words}) = {diff:+.3f}, 95% bootstrap interval "
                  f"[{low:+.3f}, {high:+.3f}]")
        expect(high >= 0, name,
               f"the student is behind the {bag_of_words} beyond the bootstrap interval "
               f"({diff:+.3f}, interval [{low:+.3f}, {high:+.3f}]): a 3-layer transformer "
               "that a model with one weight per word beats is not worth its cost. Train "
               "for more steps, or check the temperature and the loss weights.")
        behind = f"; not behind the {bag_of_words} (interval [{low:+.3f}, {high:+.3f}])"
    passed(name, f"ROC-AUC {aucs['student']:.3f} keeps {kept:.0%} of the teacher's lift above "
                 f"chance ({aucs['teacher']:.3f} - 0.5; at least {share:.0%} asked){behind}")
    return aucs
