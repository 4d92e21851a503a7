"""The claims ledger: ``lmcourse.course.claims.verdict`` decides, prints and records a
verdict; ``python -m benchmarks.claims`` (``make claims``) collects the recorded claims of
the committed notebooks into ``benchmarks/claims.json`` and the site page ``claims.md``."""

from __future__ import annotations

import json
import math
import re

import nbformat
import numpy as np
import pytest
import torch

from benchmarks import claims as ledger
from lmcourse.course import claims, verdict_tables
from lmcourse.course.claims import MIME, verdict
from tools import nbtools
from tools.nbtools import ROOT

# ---- the decision rule ---------------------------------------------------------------------


@pytest.mark.parametrize("ours, base, higher, expected", [
    ([0.9, 0.91, 0.92], [0.8, 0.85, 0.88], True, "ahead"),     # worst of ours > best base
    ([0.9, 0.91, 0.92], [0.8, 0.85, 0.9], True, "level"),    # a tie at the edge
    ([0.7, 0.75, 0.78], [0.8, 0.85, 0.88], True, "behind"),
    ([0.7, 0.9, 0.78], [0.8, 0.85, 0.88], True, "level"),    # seeds overlap
    ([4.1, 4.2, 4.3], 4.0, False, "behind"),                 # lower is better
    ([3.9, 3.8, 3.95], 4.0, False, "ahead"),
    ([3.9, 4.1, 3.95], 4.0, False, "level"),                 # straddles one figure
    (5.0, 5.0, False, "level"),
])
def test_every_seed_rule(ours, base, higher, expected):
    assert claims.decide(ours, base, higher_is_better=higher) == expected


def test_spreads_rule_compares_the_gap_with_the_spreads_added():
    # means 0.91 vs 0.90, half ranges 0.01 + 0.005: gap 0.01 within 0.015
    assert claims.decide([0.9, 0.91, 0.92], [0.895, 0.9, 0.905], higher_is_better=True,
                         rule="spreads") == "level"
    # same spreads, gap 0.05 > 0.015, both directions
    assert claims.decide([0.95, 0.96, 0.97], [0.905, 0.91, 0.915], higher_is_better=True,
                         rule="spreads") == "ahead"
    assert claims.decide([0.95, 0.96, 0.97], [0.905, 0.91, 0.915], higher_is_better=False,
                         rule="spreads") == "behind"
    # the two rules disagree when the mean is not the mid-range: seeds 0, 0, 3 vs 0.5
    # (every seed: 0 < 0.5 overlaps; spreads: mean 1 - 0.5 = 0.5 < half range 1.5)
    assert claims.decide([0, 0, 3], 0.5, higher_is_better=True) == "level"
    assert claims.decide([0, 0, 3], -1.0, higher_is_better=True) == "ahead"
    assert claims.decide([0, 0, 3], -1.0, higher_is_better=True,
                         rule="spreads") == "ahead"   # gap 2 > 1.5
    assert claims.decide([0, 0, 3], -0.4, higher_is_better=True,
                         rule="spreads") == "level"  # gap 1.4 < 1.5, yet 0 > -0.4


def test_paired_seeds_rule_compares_seed_with_seed(capsys):
    # the distillation figures: every paired gain positive, the seeds overlap
    distilled, labels_only = [0.915, 0.929, 0.897], [0.900, 0.900, 0.890]
    assert claims.decide(distilled, labels_only, higher_is_better=True) == "level"
    assert claims.decide(distilled, labels_only, higher_is_better=True,
                         rule="paired seeds") == "ahead"
    assert claims.decide(labels_only, distilled, higher_is_better=True,
                         rule="paired seeds") == "behind"
    assert claims.decide([1.0, 2.0, 3.0], [0.9, 2.1, 2.9], higher_is_better=False,
                         rule="paired seeds") == "level"
    assert claims.decide([2.0, 3.0], [2.5, 3.5], higher_is_better=False,
                         rule="paired seeds") == "ahead"  # lower is better
    with pytest.raises(ValueError, match="same seeds"):
        claims.decide([1.0, 2.0, 3.0], [1.0, 2.0], higher_is_better=True, rule="paired seeds")
    with pytest.raises(ValueError, match="same seeds"):
        claims.decide([1.0, 2.0], 0.5, higher_is_better=True, rule="paired seeds")
    ahead = verdict("distilling beats labels alone", distilled, rule="paired seeds",
                    baseline=("labels only", labels_only), higher_is_better=True)
    assert ahead.rule == "paired seeds" and ahead.verdict == "supported"  # no paper: our words
    assert "every paired difference favours ours" in ahead.line
    assert "+0.015, +0.029, +0.007" in ahead.line
    mixed = verdict("x beats y", [1.0, 2.0], rule="paired seeds", baseline=("y", [1.5, 1.5]),
                    higher_is_better=True)
    assert "disagree in sign" in mixed.line and "every pair of seeds" in mixed.takeaway
    capsys.readouterr()


def test_verdict_returns_the_record_and_prints_its_line_and_takeaway(capsys):
    result = verdict("the LSTM reaches a lower perplexity than the RNN", np.array([5.1, 5.2, 5.3]),
                     baseline=("RNN", torch.tensor([6.0, 6.2, 6.4])), higher_is_better=False,
                     metric="validation perplexity", digits=2, paper="comparable")
    out = capsys.readouterr().out
    assert out.count("\n") == 2 and out.startswith("verdict: reproduced — the LSTM")
    assert out.splitlines()[1].startswith("In plain words: at this scale the claim holds")
    assert ("ours 5.20 ± 0.10 (half range of 3 seeds) vs RNN 6.20 ± 0.20 (half range of "
            "3 seeds)") in out
    assert "validation perplexity, lower is better" in out and "paper: comparable" in out
    assert result.verdict == "reproduced" and result.rule == "every seed"
    assert math.isclose(result.ours, 5.2) and math.isclose(result.spread, 0.1)
    assert result.seeds == 3 and result.per_seed == [5.1, 5.2, 5.3]
    assert result.baseline == {"name": "RNN", "figure": 6.2, "spread": 0.2, "seeds": 3}
    json.dumps(result.record())  # JSON-ready: no NumPy or torch numbers left in it


def test_one_seed_and_an_explicit_verdict(capsys):
    one = verdict("the RNN beats the 6-gram", 5.04, baseline=("6-gram KN", 3.72),
                  higher_is_better=False, digits=2)
    assert one.verdict == "no verdict" and one.rule == "one run"
    assert one.spread is None and one.seeds == 1
    assert "ours 5.04 (1 seed) vs 6-gram KN 3.72" in one.line and "one run" in one.line
    assert "behind by 1.32 in one run" in one.takeaway and "luck" in one.takeaway
    stated = verdict("u.v = PMI - log 5", -1.3, baseline=None, verdict="reproduced",
                     paper=-math.log(5), digits=2, note="within 0.5")
    assert stated.rule == "stated" and stated.baseline is None and stated.verdict == "reproduced"
    assert stated.line.endswith("ours -1.30 (1 seed); paper: -1.61; within 0.5")
    own = verdict("PPMI + SVD scores highest", 0.7, baseline=None, verdict="reproduced")
    assert own.verdict == "supported"  # a stated outcome, worded for a claim no paper made
    assert capsys.readouterr().out.count("verdict:") == 3


@pytest.mark.parametrize("paper, words", [
    ("Chung et al. 2014", ("reproduced", "not reproduced", "no difference")),
    (None, ("supported", "contradicted", "inconclusive")),
])
def test_the_words_say_whose_claim_it_is(paper, words, capsys):
    runs = {"ahead": [0.9, 0.91, 0.92], "behind": [0.7, 0.71, 0.72], "level": [0.7, 0.9, 0.8]}
    for (outcome, ours), word in zip(runs.items(), words, strict=True):
        result = verdict("ours beats the baseline", ours, baseline=("base", [0.8, 0.81, 0.82]),
                         higher_is_better=True, paper=paper)
        assert result.verdict == word == claims.verdict_word(outcome, paper)
        assert result.line.startswith(f"verdict: {word} — ")
    capsys.readouterr()


def test_a_live_run_prints_its_figures_with_no_verdict(capsys):
    live = verdict("the LSTM beats the RNN", [5.0, 5.1, 5.2], baseline=("RNN", [6.0, 6.1, 6.2]),
                   higher_is_better=False, live=True, paper="Chung et al. 2014")
    assert live.verdict == "no verdict" and live.rule == "live run"
    assert "the full runs over seeds give the verdict" in live.line
    assert "ahead by 1.000 in this live run" in live.takeaway
    with pytest.raises(ValueError, match="not both"):
        verdict("x", 1.0, baseline=None, verdict="supported", live=True)
    capsys.readouterr()


def test_a_diverged_figure_is_named_not_subtracted(capsys):
    result = verdict("clipping beats no clipping", [5.1, 5.2, 5.3],
                     baseline=("no clipping", [6372449.6, 6372450.0, 6372450.4]),
                     higher_is_better=False, metric="validation perplexity", digits=2)
    assert "no clipping diverged" in result.takeaway and "6372" not in result.takeaway
    capsys.readouterr()


@pytest.mark.parametrize("kwargs, error, match", [
    ({"verdict": "reproducd"}, ValueError, "unknown verdict 'reproducd'"),
    ({"verdict": "no verdict"}, ValueError, "unknown verdict 'no verdict'"),
    ({"ours": []}, ValueError, "ours is empty"),
    ({"ours": [1.0, float("nan")]}, ValueError, r"ours\[1\] is nan"),
    ({"baseline": ("KN", float("inf"))}, ValueError, "baseline 'KN' is inf"),
    ({"ours": "0.9"}, TypeError, "one number per seed"),
    ({"higher_is_better": None}, ValueError, "higher_is_better=True or False"),
    ({"baseline": None}, ValueError, "nothing to decide"),
    ({"baseline": "KN"}, TypeError, r"baseline must be \(name, figure\)"),
    ({"rule": "median"}, ValueError, "unknown rule 'median'"),
    ({"verdict": "reproduced", "rule": "spreads"}, ValueError, "not both"),
    ({"claim": " "}, ValueError, "statement"),
    ({"paper": float("nan")}, ValueError, "paper is nan"),
    ({"digits": -1}, ValueError, "number of decimals"),
])
def test_bad_inputs_are_refused_with_a_clear_error(kwargs, error, match):
    args = {"claim": "ours beats KN", "ours": [0.9, 0.91], "baseline": ("KN", 0.8),
            "higher_is_better": True, "show": False}
    with pytest.raises(error, match=match):
        verdict(**{**args, **kwargs})


# ---- the record in a notebook's outputs ----------------------------------------------------


def test_in_ipython_the_claim_is_displayed_as_a_mime_bundle(monkeypatch, capsys):
    shown = []
    monkeypatch.setattr("IPython.get_ipython", lambda: object())
    monkeypatch.setattr("IPython.display.display", lambda obj, raw=False: shown.append((obj, raw)))
    result = verdict("ours beats KN", [0.9, 0.91], baseline=("KN", 0.8), higher_is_better=True)
    assert capsys.readouterr().out == result.takeaway + "\n"  # the line is displayed
    [(data, raw)] = shown
    assert raw is True and set(data) == {"text/plain", MIME}
    assert data["text/plain"] == result.line and data[MIME] == result.record()


def test_recorded_claims_are_read_back_from_an_executed_notebook():
    result = verdict("ours beats KN", [0.9, 0.91], baseline=("KN", 0.8), higher_is_better=True,
                     show=False)
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# t"),
        nbformat.v4.new_code_cell("x", outputs=[
            nbformat.v4.new_output("stream", text="hello\n"),
            nbformat.v4.new_output("display_data", data=claims.bundle(result))])])
    nb = nbformat.reads(nbformat.writes(nb), as_version=4)  # through JSON, as committed
    assert claims.recorded(nb) == [result.record()]


def test_the_site_renders_an_unknown_mime_type_by_its_text():
    """site/render.mjs shows a bundle it has no renderer for by its text/plain."""
    source = (ROOT / "site" / "render.mjs").read_text()
    body = source[source.index("function renderMimeBundle"):]
    body = body[:body.index("\n}\n")]
    assert "'text/plain'" in body and "application/vnd.lmcourse" not in body


# ---- the ledger: benchmarks/claims.json and claims.md ----------------------------------------


def test_ledger_is_in_sync_with_the_committed_notebooks():
    records = ledger.collect()
    assert records, "no notebook records a claim"
    expected_json = ledger.render_json(records)
    assert ledger.CLAIMS_JSON.read_text() == expected_json, (
        "benchmarks/claims.json is stale: run `make claims` (python -m benchmarks.claims)")
    assert ledger.CLAIMS_MD.read_text() == ledger.render_markdown(records), (
        "claims.md is stale: run `make claims` (python -m benchmarks.claims)")
    for r in json.loads(expected_json):
        assert set(r) >= {"notebook", "claim", "paper", "ours", "spread", "seeds", "baseline",
                          "verdict"}
        assert r["verdict"] in claims.VERDICTS
        # "reproduced" and its kin only for a claim a paper made; one run gets no verdict
        words = claims.OWN_VERDICTS if r["paper"] is None else claims.PAPER_VERDICTS
        assert r["verdict"] in (*words, claims.NO_VERDICT), (r["notebook"], r["claim"])
        assert (r["verdict"] == claims.NO_VERDICT) == (r["rule"] in claims.NO_VERDICT_RULES)
        assert r["seeds"] > 1 or r["rule"] not in claims.SEED_RULES, (r["notebook"], r["claim"])


N_GRAM_NAME = re.compile(r"\bKN\b|Kneser|n-gram")


def test_every_n_gram_baseline_in_the_ledger_is_tuned_and_names_its_settings():
    """A claim against a Kneser-Ney or fill-in n-gram names a model whose settings were
    chosen on a tuning split, and says which: "tuned KN (modified Kneser-Ney, order 24)",
    "bigram KN, discount tuned (Kneser-Ney, order 2, D = 0.9)"."""
    untuned = [f"{r['notebook']}: {r['baseline']['name']}"
               for r in json.loads(ledger.CLAIMS_JSON.read_text())
               if r["baseline"] and N_GRAM_NAME.search(r["baseline"]["name"])
               and not ("tuned" in r["baseline"]["name"] and "order" in r["baseline"]["name"])]
    assert not untuned, f"n-gram baselines without tuned settings in the ledger: {untuned}"


BAG_OF_WORDS_NAME = re.compile(r"bag[ -]of[ -]words", re.I)


def test_every_bag_of_words_baseline_in_the_ledger_is_tuned():
    """A claim against a bag of words names one whose settings (penalty, features, steps)
    were chosen on held-out labelled data, and says so: "tuned bag of words"."""
    untuned = [f"{r['notebook']}: {r['baseline']['name']}"
               for r in json.loads(ledger.CLAIMS_JSON.read_text())
               if r["baseline"] and BAG_OF_WORDS_NAME.search(r["baseline"]["name"])
               and "tuned" not in r["baseline"]["name"]]
    assert not untuned, f"bag-of-words baselines not named as tuned in the ledger: {untuned}"


TWO_SIDED_BIGRAM = re.compile(r"bigram,? \(?both sides")


def test_every_two_sided_bigram_guess_in_the_ledger_names_its_tuned_smoothing():
    """The masked-token floor "bigram, both sides" has its add-k chosen on held-out training
    sentences and says which: "bigram, both sides (add-k tuned, k = 0.001)"."""
    untuned = [f"{r['notebook']}: {r['baseline']['name']}"
               for r in json.loads(ledger.CLAIMS_JSON.read_text())
               if r["baseline"] and TWO_SIDED_BIGRAM.search(r["baseline"]["name"])
               and not re.search(r"tuned, k = [\d.e-]+", r["baseline"]["name"])]
    assert not untuned, f"two-sided bigram guesses without their tuned smoothing: {untuned}"


def _calls_verdict(nb) -> bool:
    return any(c.cell_type == "code" and re.search(r"(?<![\w.])verdict\(", c.source)
               for c in nb.cells)


def test_every_notebook_that_calls_verdict_has_recorded_claims():
    missing = []
    for path in nbtools.notebooks():
        nb = nbformat.read(path, as_version=4)
        if _calls_verdict(nb) and not claims.recorded(nb):
            missing.append(path.relative_to(ROOT).as_posix())
    assert not missing, (f"{missing} call verdict( but carry no recorded claim: rebuild them "
                         "(python -m tools.nbtools build <twin>.py)")


def test_markdown_rows_link_each_claim_to_its_notebook():
    records = [{"notebook": "chapters/02_rnn_bptt.ipynb", "claim": "a | b", "paper": None,
                "ours": 5.04, "spread": None, "seeds": 1, "per_seed": [5.04],
                "baseline": {"name": "6-gram KN", "figure": 3.72, "spread": None, "seeds": 1},
                "verdict": "not reproduced", "metric": "perplexity", "rule": "every seed",
                "higher_is_better": False, "digits": 2}]
    page = ledger.render_markdown(records)
    row = next(line for line in page.splitlines() if "02_rnn_bptt" in line)
    assert "[02](chapters/02_rnn_bptt.ipynb)" in row
    assert r"a \| b" in row and "5.04 (1 seed)" in row and "6-gram KN 3.72" in row
    assert "not reproduced" in row


def test_bootstrap_verdict_reads_the_interval_of_the_difference(capsys):
    from lmcourse.course.claims import bootstrap_verdict

    g = torch.Generator().manual_seed(0)
    labels = (torch.rand(400, generator=g) < 0.2).long()
    good = labels + 0.8 * torch.rand(400, generator=g)  # ranks every positive first
    noise = torch.rand(400, generator=g)
    ahead = bootstrap_verdict("good beats noise", labels, good, baseline=("noise", noise),
                              paper="a paper's claim")
    assert ahead.verdict == "reproduced" and ahead.rule == "paired bootstrap"
    assert ahead.ours == 1.0 and "95% paired bootstrap interval" in ahead.line
    behind = bootstrap_verdict("noise beats good", labels, noise, baseline=("good", good))
    assert behind.verdict == "contradicted"  # one run, yet a verdict: the examples resample
    tie = bootstrap_verdict("noise beats itself", labels, noise, baseline=("noise", noise))
    assert tie.verdict == "inconclusive"
    assert "verdict: reproduced" in capsys.readouterr().out
    with pytest.raises(ValueError, match="bootstrap_verdict"):
        claims.decide(1.0, 0.5, higher_is_better=True, rule="paired bootstrap")


def test_every_verdict_prints_a_plain_takeaway(capsys):
    from lmcourse.course.claims import verdict

    ahead = verdict("the LSTM beats the 5-gram", [1.2, 1.25, 1.22], baseline=("5-gram", 1.4),
                    higher_is_better=False, metric="bits per character")
    assert ahead.takeaway == ("In plain words: at this scale the claim holds, ahead by 0.177 "
                              "bits per character over 3 seeds.")
    behind = verdict("ours beats the bigram", [0.70, 0.71], baseline=("bigram", 0.745),
                     higher_is_better=True, metric="accuracy")
    assert "does not hold: behind by 0.040 accuracy over 2 seeds" in behind.takeaway
    level = verdict("ours beats the bag of words", [0.80, 0.90], baseline=("bag", [0.82, 0.86]),
                    higher_is_better=True)
    assert level.takeaway == ("In plain words: no winner at this scale: the difference, "
                              "+0.010, is within the seeds' spread.")
    stated = verdict("it looks right", 1.0, baseline=None, verdict="reproduced")
    assert stated.takeaway == ""
    out = capsys.readouterr().out
    assert ahead.takeaway in out and behind.takeaway in out and "In plain words" in out
    assert "takeaway" not in ahead.record()  # the ledger's records keep their fields


# ---- one table per experiment ----------------------------------------------------------------


def test_verdicts_inside_a_table_are_shown_once_as_one_table_and_all_recorded(monkeypatch,
                                                                              capsys):
    shown = []
    monkeypatch.setattr("IPython.get_ipython", lambda: object())
    monkeypatch.setattr("IPython.display.display", lambda obj, raw=False: shown.append(obj))
    with verdict_tables.verdict_table("Two <sizes>") as rows:
        a = verdict("small beats KN", [0.9, 0.91], baseline=("KN", 0.8), higher_is_better=True,
                    metric="accuracy")
        b = verdict("large beats KN", [0.7, 0.95], baseline=("KN", 0.8), higher_is_better=True,
                    metric="accuracy")
    assert rows == [a, b] and capsys.readouterr().out == ""  # no lines, no takeaways
    [data] = shown
    assert data[claims.MIME_TABLE] == [a.record(), b.record()]
    page = data["text/html"]
    assert page.count("<tr>") == 3 and "Two &lt;sizes&gt;" in page
    assert "<b>supported</b>" in page and "<b>inconclusive</b>" in page
    assert "accuracy, higher is better" in page and "0.905 ± 0.005 (half range of 2 seeds)" in page
    assert data["text/plain"].splitlines()[1:] == [a.line, b.line]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x", outputs=[
        nbformat.v4.new_output("display_data", data=data)])])
    nb = nbformat.reads(nbformat.writes(nb), as_version=4)
    assert claims.recorded(nb) == [a.record(), b.record()]


def test_a_table_outside_ipython_prints_its_lines_and_an_error_shows_nothing(capsys):
    with verdict_tables.verdict_table("t"):
        line = verdict("x beats KN", 1.0, baseline=("KN", 0.5), higher_is_better=True).line
    assert capsys.readouterr().out == f"t\n{line}\n"
    with pytest.raises(RuntimeError), verdict_tables.verdict_table("t"):
        verdict("x beats KN", 1.0, baseline=("KN", 0.5), higher_is_better=True)
        raise RuntimeError("the run failed")
    assert capsys.readouterr().out == ""
    assert not claims.COLLECTING  # the table was closed



#: verdicts that go against our side: a claim our side lost stands even when it was tuned
#: more (the imbalance only helped the loser); one run decides nothing
AGAINST_OURS = {"contradicted", "not reproduced", claims.NO_VERDICT}


def tuned_more_problems(records: list[dict]) -> list[str]:
    """Issue 56: claims decided for a side that was tuned over more settings than its
    rival, where the ledger records both counts (``tuning``)."""
    return [f"{r['claim']}: ours {r['tuning']['ours']} settings, baseline "
            f"{r['tuning']['baseline']}" for r in records
            if r.get("tuning") and r["tuning"]["baseline"] < r["tuning"]["ours"]
            and r["verdict"] not in AGAINST_OURS]


def test_a_claim_decided_for_the_side_tuned_more_is_found():
    def row(verdict, ours, base):
        return {"claim": "x", "verdict": verdict, "tuning": {"ours": ours, "baseline": base}}
    assert tuned_more_problems([row("supported", 8, 4)])
    assert tuned_more_problems([row("no difference", 8, 4)])
    assert not tuned_more_problems([row("not reproduced", 8, 4), row("supported", 4, 4),
                                    row("reproduced", 2, 36), {"claim": "y", "verdict": "x"}])


def test_no_claim_is_decided_for_the_side_tuned_more():
    """A baseline gets at least its model's tuning budget wherever the ledger can tell."""
    records = json.loads(ledger.CLAIMS_JSON.read_text())
    assert any(r.get("tuning") for r in records), "no ledger row records its tuning budget"
    problems = tuned_more_problems(records)
    assert not problems, f"decided for the side tuned on more settings: {problems}"


def test_a_verdict_records_and_prints_its_tuning_budget():
    c = claims.verdict("x beats y", [1.0, 1.1, 1.2], baseline=("y", [0.5, 0.6, 0.7]),
                       higher_is_better=True, tuning=(2, 36), show=False)
    assert c.tuning == {"ours": 2, "baseline": 36} and "settings tried: ours 2, y 36" in c.line
    with pytest.raises(ValueError, match="tuning is"):
        claims.verdict("x", [1.0], baseline=("y", 0.5), higher_is_better=True, tuning=(0, 3),
                       show=False)


# ---- summaries that agree with the ledger (issue 57, item 4) --------------------------------

#: a verdict word as a summary states it, longest first ("not reproduced" before "reproduced")
_WORDS = "|".join(re.escape(w) for w in sorted(ledger.WORDS, key=len, reverse=True))
BOLD_VERDICT = re.compile(rf"\*\*({_WORDS})\*\*")
#: a stated verdict and the ledger row it comes from: ``**supported**<!-- ledger: words of
#: the claim -->`` (the comment is invisible to the reader; the word is what they read)
CITED = re.compile(rf"\*\*({_WORDS})\*\*\s*<!--\s*ledger:\s*(.+?)\s*-->", re.S)
#: how many of a notebook's decided claims its summary states, at least
SUMMARY_CITES = 2


def summary_of(nb: nbformat.NotebookNode) -> str:
    """The markdown of a chapter's summary: from its ``## Summary`` heading to the next
    second-level heading."""
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    match = re.search(r"^## Summary\b.*?(?=^## |\Z)", text, re.M | re.S)
    return match.group(0) if match else ""


def summary_problems(summary: str, rows: list[dict]) -> list[str]:
    """Where a summary disagrees with its notebook's ledger ``rows``: a stated verdict that
    is not its row's, a verdict word with no row named, a row named ambiguously, or a
    summary that states none of the claims its notebook decided."""
    cited = [(word, " ".join(key.split())) for word, key in CITED.findall(summary)]
    problems = []
    if len(BOLD_VERDICT.findall(summary)) != len(cited):
        problems.append("a bold verdict word names no ledger row: write "
                        "**word**<!-- ledger: words of the claim -->")
    for word, key in cited:
        matches = [r for r in rows if key in r["claim"]]
        if len(matches) != 1:
            problems.append(f"{key!r} matches {len(matches)} of the notebook's ledger rows, "
                            "not one")
        elif matches[0]["verdict"] != word:
            problems.append(f"the summary says {word} where the ledger says "
                            f"{matches[0]['verdict']}: {matches[0]['claim']}")
    decided = [r for r in rows if r["verdict"] != claims.NO_VERDICT]
    if len(cited) < min(SUMMARY_CITES, len(decided)):
        problems.append(f"states {len(cited)} of the {len(decided)} claims the notebook "
                        f"decided (at least {min(SUMMARY_CITES, len(decided))})")
    return problems


def test_a_summary_that_disagrees_with_the_ledger_is_found():
    rows = [{"claim": "the LSTM beats the RNN", "verdict": "supported"},
            {"claim": "the GRU beats the RNN", "verdict": "contradicted"}]
    good = ("- Gates help: **supported**<!-- ledger: the LSTM beats --> for the LSTM, "
            "**contradicted** <!-- ledger: the GRU\n beats --> for the GRU.")
    assert summary_problems(good, rows) == []
    assert summary_problems(good.replace("**contradicted**", "**supported**"), rows)
    assert summary_problems("the LSTM wins (**supported**)", rows)
    assert summary_problems("**supported**<!-- ledger: beats the RNN -->", rows)
    assert summary_problems("Nothing is stated here.", rows)


CHAPTER_NOTEBOOKS = sorted((ROOT / "chapters").glob("*.ipynb"))


@pytest.mark.parametrize("path", CHAPTER_NOTEBOOKS, ids=[p.stem for p in CHAPTER_NOTEBOOKS])
def test_a_chapters_summary_agrees_with_its_ledger_rows(path):
    records = json.loads(ledger.CLAIMS_JSON.read_text())
    rows = [r for r in records if r["notebook"] == path.relative_to(ROOT).as_posix()]
    problems = summary_problems(summary_of(nbformat.read(path, as_version=4)), rows)
    assert not problems, f"{path.name}'s summary: {problems}"
