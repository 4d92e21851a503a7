"""The claims ledger: every verdict a notebook prints is also recorded.

A notebook that compares a result with a baseline (a network with the best n-gram, one
cell with another, a distilled student with its labels-only twin) ends the comparison
with one call::

    from lmcourse.course.claims import verdict

    verdict("the LSTM reaches a lower validation perplexity than the plain RNN",
            val_ppl["lstm"], baseline=("RNN", val_ppl["rnn"]), higher_is_better=False,
            metric="validation perplexity", digits=2)

It computes the mean and the spread (half the range, as ``lmcourse.metrics.mean_spread``)
of the per-seed values, decides the verdict, prints one line that starts with
``verdict:`` and, in a notebook, records the claim in the cell's output as a MIME bundle:
``text/plain`` (the same line, what JupyterLab, the site and nbval show) and
``application/vnd.lmcourse.claim+json`` (the record). ``make claims`` collects the records
of the committed, executed notebooks into ``benchmarks/claims.json`` and the site's page
``claims.md`` without running anything.

**The verdict words.** A claim is stated so that it says which side should win
("the LSTM reaches a lower perplexity than the RNN"); the verdict says what the run found,
in words that say whose claim it is. A claim a paper made (``paper=`` names it) is

- ``reproduced``: ours is ahead of the baseline by more than the seeds scatter;
- ``not reproduced``: the baseline is ahead by more than the seeds scatter;
- ``no difference``: neither is: the seeds overlap (or the figures tie).

A claim of the course's own (no paper made it: "the RNN beats the tuned n-gram") is
``supported``, ``contradicted`` or ``inconclusive`` on the same three outcomes. A figure
from **one run** (one seed) has no spread to judge a gap against, and a **live run** of a
notebook's minute (``live=True``) is a demonstration, not the experiment: both print their
figures with ``no verdict``, and the full runs over seeds give the verdict.

**The rule** (``rule=``) says what "more than the seeds scatter" means:

- ``"every seed"`` (the default): every seed of ours is on the winning side of every seed
  of the baseline (a baseline without seeds, such as an n-gram model, is one figure):
  ours' worst run beats the baseline's best, or the other way round; anything in
  between is ``no difference``. With one seed on each side this is a plain comparison, and
  the line says "1 seed": there is no spread to test the gap against.
- ``"spreads"``: the gap between the means exceeds the two spreads added together.
- ``"paired seeds"``: for two arms that share their seeds and data (a distilled student
  and its labels-only twin, a model and its ablation), seed *i* of ours is compared with
  seed *i* of the baseline: every paired difference on the winning side is ``reproduced``
  (or ``not reproduced``), mixed signs are ``no difference``. The seeds' shared luck (the
  same initial weights, the same batches) cancels in each difference, so a small gain that
  every pair shows is not lost in the spread between seeds.
- ``"paired bootstrap"`` (:func:`bootstrap_verdict`): one run of each side scored on the
  same test examples; the 95% interval of the difference, from resampling those examples,
  lies above 0 (ahead), below 0 (behind) or contains it (no difference).

A comparison that is not against a number (a qualitative check, a threshold decided by
the notebook) passes ``verdict=`` explicitly; the record says ``rule: "stated"``.

**One table per experiment.** Several verdicts of one experiment (one claim per model,
size or seed count) read better as one table than as rows of lines::

    from lmcourse.course.verdict_tables import verdict_table

    with verdict_table("Pre-training objectives against the masked LM (3 seeds each)"):
        for arm in arms:
            verdict(...)

(:mod:`lmcourse.course.verdict_tables`) shows a single table (claim, ours ± spread and
seeds, baseline, verdict, why) and records every claim, as the separate lines would
(``application/vnd.lmcourse.claims+json``).
"""

from __future__ import annotations

import numbers
from dataclasses import asdict, dataclass
from typing import Any

from lmcourse.course.verdict_rules import (
    AHEAD,
    BEHIND,
    LEVEL,
    NO_VERDICT,
    NO_VERDICT_RULES,
    OUTCOMES,
    OWN_VERDICTS,
    PAPER_VERDICTS,
    RULES,
    SEED_RULES,
    VERDICTS,
    _baseline_figure,
    _figure,
    _half_range,
    _mean,
    _number,
    _outcome,
    _reason,
    _round,
    _values,
    decide,
    format_number,
    verdict_word,
)

__all__ = ["COLLECTING", "MIME", "MIME_TABLE", "NO_VERDICT", "NO_VERDICT_RULES", "OUTCOMES",
           "OWN_VERDICTS", "PAPER_VERDICTS", "RULES", "SEED_RULES", "VERDICTS", "Claim",
           "bootstrap_verdict", "bundle", "decide", "format_number", "in_ipython", "recorded",
           "verdict", "verdict_word"]

#: the MIME type of a recorded claim in a notebook's outputs
MIME = "application/vnd.lmcourse.claim+json"
#: the MIME type of a table of claims (a list of records)
MIME_TABLE = "application/vnd.lmcourse.claims+json"


@dataclass(frozen=True)
class Claim:
    """One verdict, as printed and recorded. ``ours``/``spread`` are the mean and half the
    range of ``per_seed``; ``baseline`` is ``None`` or a dict with ``name``, ``figure``
    (its mean), ``spread`` and ``seeds``."""

    claim: str
    verdict: str
    ours: float
    spread: float | None
    seeds: int
    per_seed: list[float]
    baseline: dict | None
    paper: float | str | None
    higher_is_better: bool | None
    rule: str
    metric: str | None
    note: str | None
    digits: int
    line: str
    tuning: dict | None = None

    def _ipython_display_(self) -> None:
        """Nothing: ``verdict`` has already displayed the line, so a verdict that ends a
        notebook cell is not shown a second time as this object's repr."""

    def record(self) -> dict:
        """The JSON record (what the notebook's output carries)."""
        return asdict(self)

    @property
    def figure(self) -> str:
        """Ours as printed: ``mean ± half range (half range of n seeds)``, or ``value (1
        seed)``."""
        return _figure(self.per_seed, self.digits)

    @property
    def why(self) -> str:
        """What the line says after the figures: the reason, the paper's figure, the note."""
        head = f"verdict: {self.verdict} — {self.claim}; "
        rest = self.line[len(head):] if self.line.startswith(head) else self.line
        return "; ".join(rest.split("; ")[1:])

    @property
    def takeaway(self) -> str:
        """The verdict as one plain sentence, printed under its line ("" when there is no
        baseline to compare with). A diverged figure is named, not subtracted."""
        if self.baseline is None or self.higher_is_better is None:
            return ""
        base = self.baseline["figure"]
        diff = self.ours - base
        ahead = diff > 0 if self.higher_is_better else diff < 0
        unit = f" {self.metric}" if self.metric else ""
        if max(abs(self.ours), abs(base)) >= 1e5:  # a diverged run: the gap means nothing
            by = f"far ({'ours' if abs(self.ours) >= abs(base) else self.baseline['name']} " \
                 "diverged)"
            signed = by
        else:
            by = f"by {abs(diff):.{self.digits}f}{unit}"
            signed = f"{diff:+.{self.digits}f}{unit}"
        runs = f"over {self.seeds} seeds" if self.seeds > 1 else "in one run"
        side = "ahead" if ahead else "behind"
        if self.rule == "live run":
            return (f"In plain words: {side} {by} in this live run, a demonstration; the "
                    "full runs over seeds give the verdict.")
        if self.rule == "one run":
            return (f"In plain words: {side} {by} in one run, which cannot tell a real gap "
                    "from the luck of one seed.")
        outcome = _outcome(self.verdict)
        if outcome == AHEAD:
            return f"In plain words: at this scale the claim holds, ahead {by} {runs}."
        if outcome == BEHIND:
            side = "ahead, but not by enough," if ahead else "behind"
            return f"In plain words: at this scale the claim does not hold: {side} {by} {runs}."
        if self.rule == "paired seeds":
            return (f"In plain words: no winner at this scale: the mean difference, {signed}, "
                    "is not on one side in every pair of seeds.")
        within = ("the paired bootstrap interval" if self.rule == "paired bootstrap"
                  else "the seeds' spread" if self.seeds > 1 else "what one run can tell")
        return f"In plain words: no winner at this scale: the difference, {signed}, is within " \
               f"{within}."


# ---- the call a notebook makes ------------------------------------------------------------

def verdict(claim: str, ours: Any, *, baseline: tuple[str, Any] | None,
            higher_is_better: bool | None = None, verdict: str | None = None,
            rule: str | None = None, paper: float | str | None = None,
            metric: str | None = None, note: str | None = None, digits: int = 3,
            live: bool = False, show: bool = True,
            tuning: tuple[int, int] | None = None) -> Claim:
    """Decide, print and record one claim; returns it.

    claim: what should hold, stated so that it names the side that should win.
    ours: our figure, one per seed (or one number).
    baseline: ``(name, figure)``, the strongest simple baseline on the same data (its
        figure one number or one per seed), or ``None`` when there is no baseline to beat
        (then pass ``verdict=``).
    higher_is_better: whether a larger figure is better (needed to decide).
    verdict: the outcome when the notebook decides (a qualitative check): a paper's word or
        the course's own (either family; the claim's ``paper`` picks the word printed), or
        an outcome of ``OUTCOMES``. Otherwise it is decided by ``rule`` (``"every seed"`` by
        default, ``"spreads"`` or ``"paired seeds"``); one run of ours gets no verdict.
    paper: the published figure or source (a number, or a short text), when a paper made
        the claim: the verdict then reads reproduced / not reproduced / no difference.
    live: a live demonstration run (the notebook's minute), not the experiment: its figures
        are printed with no verdict.
    metric, note: the figure's name, and a last remark printed at the end of the line.
    digits: decimals printed. show: print/display it (False: only return it).
    tuning: ``(ours, baseline)``, how many settings each side was tuned over on the tuning
        data, where the notebook knows: the ledger records it, and a test refuses a claim
        decided for the side that was tuned more.
    """
    if not isinstance(claim, str) or not claim.strip():
        raise ValueError("a claim needs its statement (a non-empty string)")
    values = _values(ours, "ours")
    base_values = None
    if baseline is not None:
        if (not isinstance(baseline, tuple) or len(baseline) != 2
                or not isinstance(baseline[0], str) or not baseline[0].strip()):
            raise TypeError(f"baseline must be (name, figure), e.g. ('5-gram KN', 4.01); "
                            f"got {baseline!r}")
        base_values = _values(baseline[1], f"the figure of baseline {baseline[0]!r}")
    if higher_is_better is not None and not isinstance(higher_is_better, bool):
        raise TypeError("higher_is_better must be True, False or None")
    if isinstance(digits, bool) or not isinstance(digits, int) or digits < 0:
        raise ValueError(f"digits is the number of decimals printed (0 or more), got {digits!r}")
    if tuning is not None and (
            not isinstance(tuning, tuple) or len(tuning) != 2 or baseline is None
            or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in tuning)):
        raise ValueError("tuning is (settings tried for ours, settings tried for the "
                         f"baseline), two counts of at least 1, with a baseline; got {tuning!r}")
    if isinstance(paper, numbers.Real) and not isinstance(paper, bool):
        paper = _number(paper, "paper")
    elif paper is not None and not isinstance(paper, str):
        raise TypeError(f"paper must be a number, a short text or None, got {paper!r}")

    if verdict is not None:
        outcome = _outcome(verdict)
        if rule is not None or live:
            raise ValueError("give either verdict= (the notebook decides) or rule= / live= "
                             "(the numbers decide), not both")
        rule = "stated"
    else:
        if base_values is None:
            raise ValueError("without a baseline there is nothing to decide: pass verdict= "
                             f"(one of {OUTCOMES}, or its word)")
        if higher_is_better is None:
            raise ValueError("to decide the verdict, say whether a larger figure is better "
                             "(higher_is_better=True or False)")
        rule = rule or "every seed"
        outcome = decide(values, base_values, higher_is_better=higher_is_better, rule=rule)
    word = verdict_word(outcome, paper)
    if live:
        word, rule = NO_VERDICT, "live run"
    elif rule in SEED_RULES and len(values) == 1:
        word, rule = NO_VERDICT, "one run"

    what = ", ".join(x for x in (metric, None if higher_is_better is None else
                                 f"{'higher' if higher_is_better else 'lower'} is better") if x)
    parts = [(f"{what}: " if what else "") + f"ours {_figure(values, digits)}"]
    if baseline is not None:
        parts[0] += f" vs {baseline[0]} {_baseline_figure(base_values, digits)}"
    parts.append(_reason(rule, outcome, values, base_values, digits))
    if paper is not None:
        parts.append(f"paper: {format_number(paper, digits)}" if isinstance(paper, float)
                     else f"paper: {paper}")
    parts.append(note or "")
    if tuning is not None:
        parts.append(f"settings tried: ours {tuning[0]}, {baseline[0]} {tuning[1]}")
    line = f"verdict: {word} — {claim.strip()}; " + "; ".join(p for p in parts if p)

    result = Claim(
        claim=claim.strip(), verdict=word, ours=_round(_mean(values)),
        spread=_round(_half_range(values)) if len(values) > 1 else None, seeds=len(values),
        per_seed=[_round(v) for v in values],
        baseline=None if baseline is None else {
            "name": baseline[0], "figure": _round(_mean(base_values)),
            "spread": _round(_half_range(base_values)) if len(base_values) > 1 else None,
            "seeds": len(base_values)},
        paper=paper, higher_is_better=higher_is_better, rule=rule, metric=metric, note=note,
        digits=digits, line=line,
        tuning=None if tuning is None else {"ours": tuning[0], "baseline": tuning[1]})
    if show:
        _show(result)
    return result


def bootstrap_verdict(claim: str, labels: Any, ours: Any, *, baseline: tuple[str, Any],
                      paper: float | str | None = None, note: str | None = None,
                      digits: int = 3, resamples: int = 1000, seed: int = 0,
                      difference: tuple[float, float, float] | None = None,
                      show: bool = True) -> Claim:
    """Decide "ours ranks the positives better than the baseline" from one run of each,
    scored on the same examples: ``ours`` and ``baseline = (name, scores)`` are scores for
    ``labels``; the verdict reads the 95% interval of ``ROC-AUC(ours) - ROC-AUC(baseline)``
    over ``resamples`` bootstrap resamples of the examples
    (:func:`lmcourse.metrics.bootstrap_auc_difference`): above 0 ours is ahead, below 0
    behind, otherwise level (worded as :func:`verdict_word` says). ``difference``: that
    ``(difference, low, high)`` when the caller has already computed it. Records ROC-AUCs,
    not scores."""
    from lmcourse.metrics import bootstrap_auc_difference, roc_auc

    name, base_scores = baseline
    diff, low, high = difference or bootstrap_auc_difference(labels, ours, base_scores,
                                                             n=resamples, seed=seed)
    outcome = AHEAD if low > 0 else BEHIND if high < 0 else LEVEL
    n = len(_values(labels, "labels"))
    why = (f"difference {diff:+.{digits}f}, 95% paired bootstrap interval "
           f"[{low:+.{digits}f}, {high:+.{digits}f}] over {n:,} examples")
    result = verdict(claim, roc_auc(labels, ours), baseline=(name, roc_auc(labels, base_scores)),
                     higher_is_better=True, verdict=outcome, paper=paper, metric="test ROC-AUC",
                     note=why if note is None else f"{why}; {note}", digits=digits, show=False)
    result = Claim(**{**result.record(), "rule": "paired bootstrap"})
    if show:
        _show(result)
    return result


def bundle(claim: Claim) -> dict:
    """The MIME bundle a notebook displays: the line as text, the record as JSON."""
    return {"text/plain": claim.line, MIME: claim.record()}


def _show(claim: Claim) -> None:
    """In IPython, display the bundle (the output keeps the record); otherwise print. Inside
    an open table (:data:`COLLECTING`), collect it for the table instead."""
    if COLLECTING:
        COLLECTING[-1].append(claim)
        return
    if in_ipython():
        from IPython.display import display

        display(bundle(claim), raw=True)
    else:
        print(claim.line)
    if claim.takeaway:
        print(claim.takeaway)


def in_ipython() -> bool:
    """Whether the code runs in an IPython kernel (a notebook), where bundles display."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency of the notebooks only
        return False
    return get_ipython() is not None


#: the open tables of :mod:`lmcourse.course.verdict_tables`, innermost last: while one is
#: open, a verdict goes into it instead of being displayed
COLLECTING: list[list[Claim]] = []


# ---- reading them back ------------------------------------------------------------------

def recorded(nb: Any) -> list[dict]:
    """The claims recorded in an executed notebook (an ``nbformat`` node or its JSON
    dict), in the order its cells printed them."""
    found = []
    for cell in nb["cells"]:
        if cell.get("cell_type") != "code":
            continue
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if data.get(MIME) is not None:
                found.append(dict(data[MIME]))
            found += [dict(record) for record in data.get(MIME_TABLE) or []]
    return found
