"""Every chapter's exercises come with at least one worked answer a student can reveal
(``<details><summary>Worked answer to exercise N</summary>``), and the code in each one
runs as it is written: its asserts compute the answer and check it against the course's
code or PyTorch, so a changed function or a wrong number fails here.

Every figure the answer's prose quotes (``tools.prose_numbers.quoted_numbers``) is either
shown by the answer's code or a cell of its chapter, or printed by a run of the answer. The
answers train small models live, and a run's last digits move with the processor, the
thread count and the seed (0.325 on one CPU, 0.336 on another). So each run-printed figure
has an interval measured over seeds 0-2 and one and two threads
(``python -m tools.worked_answers``, recorded in ``tests/worked_answer_spreads.json``,
:class:`lmcourse.course.spread.Interval`: mean ± 3 s.d. of the repeats): the quoted figure
must lie in the interval of a figure the answer prints, and what the answer prints here must
lie in that same interval. No tolerance is guessed for all."""

from __future__ import annotations

import pytest

from lmcourse.course.spread import Interval, last_digit_unit
from tools.worked_answers import (
    CHAPTERS,
    answers,
    code_digest,
    decimals,
    load_spreads,
    needs_spread,
    run_answer,
    run_quoted,
    stale,
    worked_answer_blocks,
)

ANSWERS = answers()
SPREADS = load_spreads()


@pytest.mark.parametrize("path", sorted(CHAPTERS.glob("*.ipynb")), ids=lambda p: p.stem)
def test_every_chapter_has_a_worked_answer(path):
    assert any("```python" in body for _, body in worked_answer_blocks(path)), (
        f"{path.name}: give at least one exercise a worked answer in a "
        "<details><summary>Worked answer to exercise N</summary> block")


def test_every_run_quoted_figure_has_a_measured_interval():
    missing = stale(SPREADS)
    assert not missing, (
        "these worked answers quote figures a run prints, but no interval measured over "
        "seeds and threads is recorded for their current code; measure them with "
        f"`python -m tools.worked_answers {' '.join(missing)}`")


def intervals(record: dict) -> list[Interval]:
    """One interval per figure the answer prints, over its recorded repeats."""
    runs = [r for r in record["runs"] if "printed" in r]
    broken = [r for r in record["runs"] if "error" in r]
    assert not broken, "the answer fails on " + "; ".join(
        f"seed +{r['shift']} with {r['threads']} thread(s): {r['error']}" for r in broken) + (
        ": what it asserts does not hold on every seed")
    counts = {len(r["printed"]) for r in runs}
    assert len(counts) == 1, f"the repeats print different numbers of figures: {counts}"
    source = (f"seeds +{'/+'.join(str(r['shift']) for r in runs if r['threads'] == 1)} on 1 "
              f"thread, +0 on 2, {record['cpu']}, {record['date']}")
    return [Interval.of([float(r["printed"][i]) for r in runs],
                        last_digit_unit(runs[0]["printed"][i]), source)
            for i in range(counts.pop())]


def unexplained(quoted: list[tuple[str, str]], live: list[str],
                spans: list[Interval]) -> list[str]:
    """Why each quoted figure fails: outside every printed figure's interval, or printed
    here outside the interval of the figure it quotes."""
    problems = []
    if len(live) != len(spans):
        return [f"this run printed {len(live)} figures, the recorded repeats {len(spans)}: "
                "re-measure the answer"]
    for number, sentence in quoted:
        q = float(number)
        fits = [i for i, span in enumerate(spans) if q in span]
        if not fits:
            problems.append(f"{number} lies outside the measured interval of every figure "
                            f"the answer prints (in: {sentence[:100]})")
            continue
        i = min(fits, key=lambda i: abs(spans[i].values[0] - q))
        if float(live[i]) not in spans[i]:
            problems.append(spans[i].miss(float(live[i]), f"quoted {number}: printed here"))
    return problems


def test_quoted_figures_are_checked_against_their_spread():
    spans = [Interval.of([0.891, 0.826, 0.699, 0.895], 0.001)]
    assert not unexplained([("0.935", "")], ["0.899"], spans)
    assert unexplained([("0.935", "")], ["0.40"], spans)[0].startswith(
        "quoted 0.935: printed here 0.4 is")
    assert "outside the measured interval" in unexplained([("0.2", "")], ["0.9"], spans)[0]
    deterministic = [Interval.of([0.0249, 0.0249, 0.0249, 0.0248], 0.0001)]
    assert not unexplained([("0.0249", "")], ["0.0248"], deterministic)
    assert unexplained([("0.0249", "")], ["0.0251"], deterministic)


@pytest.mark.parametrize("key", sorted(ANSWERS))
def test_worked_answer_runs_and_the_numbers_it_quotes_are_within_their_spread(key):
    path, number, body = ANSWERS[key]
    printed = run_answer(key, body)
    quoted = run_quoted(path, body)
    if not quoted:
        return
    record = SPREADS.get(key)
    assert record and record["code"] == code_digest(body), (
        f"{key} quotes {[n for n, _ in quoted]} from a run but has no interval measured for "
        f"its current code: `python -m tools.worked_answers {key}`")
    problems = unexplained(quoted, decimals(printed), intervals(record))
    assert not problems, (
        f"{path.name}, worked answer to exercise {number}: a quoted figure does not hold "
        "within the spread measured over seeds and threads (quote what the runs print, or "
        "re-measure after changing the code):\n  " + "\n  ".join(problems))


@pytest.mark.parametrize("key", sorted(needs_spread()))
def test_quoted_figure_check_can_fail(key):
    """The interval check is not vacuous: a figure far outside every interval is refused."""
    record = SPREADS.get(key)
    if not record or "printed" not in record["runs"][0]:
        pytest.skip(f"{key}: not measured (the test above fails)")
    spans = intervals(record)
    far = max(span.high for span in spans) * 10 + 1
    assert unexplained([(f"{far:.3f}", "")], record["runs"][0]["printed"], spans)
