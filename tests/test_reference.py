"""Reference runs: every committed one is checked against the code, and the checks can fail.

The committed references (``reference/<name>/``) are verified cheaply: the recipe in the
file equals the code's, re-training the first steps of seed 0 reproduces the committed
losses, and the committed weights give the committed held-out metric. The machinery is
tested on a tiny fake reference whose files are tampered with in each way.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from lmcourse.course import reference as R
from lmcourse.course.reference import lm_char
from lmcourse.course.reference import scheduling as runs
from lmcourse.course.reference.result import result_path


@pytest.mark.parametrize("name", sorted(R.REFERENCES))
def test_committed_reference_matches_the_code(name):
    done = R.verify(name)
    print(f"{name}: " + "; ".join(done))
    result = R.load(name)
    ref = R.REFERENCES[name]
    assert result.seeds == list(range(len(result.seeds))) == list(ref.seeds)
    assert result.first_steps == ref.first_steps, "the file names the steps make test replays"
    assert len(result.seeds) >= 3 or ref.seeds_why
    for seed in result.seeds:
        steps = [point[0] for point in result.curves[seed]]
        assert steps == sorted(steps)
        if "curve_x" not in result.recipe:  # a training curve: its x is the step
            # (a run stopped between two evaluations says how many steps it trained)
            trained = result.metrics[seed].get("steps_trained", steps[-1])
            assert len(result.train_loss[seed]) == trained >= steps[-1]
    assert result.device and result.torch and result.wall_s > 0 and result.metrics


@pytest.mark.parametrize("name", sorted(R.REFERENCES))
def test_committed_result_round_trips_through_the_typed_result(name):
    text = result_path(name).read_text()
    result = R.load(name)
    assert isinstance(result, R.ReferenceResult) and result.name == name
    assert all(isinstance(s, int) for s in result.metrics)
    assert json.dumps(result.to_json(), indent=1) + "\n" == text


def test_a_result_with_an_unknown_field_is_refused(tiny):
    result = R.load("tiny")
    data = {**result.to_json(), "metric": {}}
    with pytest.raises(ValueError, match=r"fields this version does not know: \['metric'\]"):
        R.ReferenceResult.from_json(data)
    with pytest.raises(KeyError, match="has no metric 'los'"):
        result.values("los")


def test_reference_folder_stays_small():
    total = sum(p.stat().st_size for p in R.reference_dir().rglob("*") if p.is_file())
    # the whole tracked tree travels to a lent GPU, which takes 64 MiB at most
    assert total < 45e6, f"reference/ holds {total / 1e6:.0f} MB: keep it to tens of MB at most"


# ---- the machinery on a tiny fake reference ----------------------------------------------

def _tiny_train(recipe, seed, device, progress=True, stop_after=None):
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        w = torch.zeros(3, requires_grad=True)
        target = torch.randn(3)
        opt = torch.optim.SGD([w], lr=recipe["lr"])
        losses, curve = [], []
        for step in range(1, (stop_after or recipe["steps"]) + 1):
            loss = (w - target).square().sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            curve.append([step, 0.0, loss.item()])
    return R.SeedRun(curve=curve, train_loss=losses, metrics={"loss": losses[-1]},
                     state={"w": w.detach()})


def _tiny_evaluate(recipe, state):
    return "norm", round(float(state["w"].float().norm()), 4)


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    monkeypatch.setenv("LMCOURSE_REFERENCE_DIR", str(tmp_path))
    ref = R.Reference(name="tiny", title="tiny", recipe={"lr": 0.1, "steps": 6},
                      train=_tiny_train, evaluate=_tiny_evaluate, baselines=lambda r: {},
                      seconds_per_seed=0.1, first_steps=3)
    monkeypatch.setitem(R.REFERENCES, "tiny", ref)
    R.run("tiny", progress=False, device=torch.device("cpu"))
    return ref, tmp_path / "tiny"


def test_a_fresh_reference_verifies(tiny):
    done = R.verify("tiny")
    assert done[0] == "recipe matches" and "first 3 steps reproduced" in done[1]
    result = R.load("tiny")
    assert result.seeds == [0, 1, 2] and set(result.curves) == {0, 1, 2}
    assert result.device.startswith("cpu") and result.command == "make reference NAME=tiny"
    assert result.code_hash and result.created  # a new run records its code and its date


def test_a_changed_recipe_is_stale_and_names_the_command(tiny, monkeypatch):
    ref, _ = tiny
    monkeypatch.setattr(ref, "recipe", {"lr": 0.2, "steps": 6})
    with pytest.raises(R.StaleReference, match=r"differs .*\['lr'\].*make reference NAME=tiny"):
        R.verify("tiny")


def test_first_steps_that_do_not_reproduce_fail(tiny):
    _, folder = tiny
    result = R.load("tiny")
    result.train_loss[0][1] *= 1.01
    result.save()
    with pytest.raises(R.StaleReference, match="first 3 steps"):
        R.verify("tiny", metric=False)


def test_live_run_trains_the_first_steps_and_refuses_a_stale_reference(tiny, capsys,
                                                                      monkeypatch, tmp_path):
    _, folder = tiny
    monkeypatch.setenv("LMCOURSE_CACHE", str(tmp_path / "cache"))  # the harness log goes here
    from lmcourse.course.harness import log_path

    run = R.live_run("tiny", 4, device=torch.device("cpu"))
    out = capsys.readouterr().out
    assert len(run.train_loss) == 4 and "4 of 6 steps" in out
    assert "nan s" not in out  # a run that reports no training time is timed here
    # the replayed-steps comparison is machinery: in the harness log, not the student's view
    assert "relative difference" not in out and "reproduced" not in out
    assert "first 3 losses" in log_path().read_text()
    result = R.load("tiny")
    result.train_loss[0][2] *= 1.01
    result.save()
    with pytest.raises(R.StaleReference, match="make reference NAME=tiny"):
        R.live_run("tiny", 4, device=torch.device("cpu"))


def test_weights_that_do_not_give_the_metric_fail(tiny):
    _, folder = tiny
    from safetensors.torch import save_file
    save_file({"w": torch.ones(3).half()}, folder / "seed0.safetensors")
    with pytest.raises(R.StaleReference, match="committed weights give norm"):
        R.verify("tiny", first_steps=False)


def test_picked_seeds_are_refused(tiny):
    _, folder = tiny
    result = R.load("tiny")
    result.seeds = [0, 2, 5]
    result.save()
    with pytest.raises(R.StaleReference, match=r"seeds \[0, 2, 5\] are not the declared"):
        R.verify("tiny", first_steps=False, metric=False)


def test_a_reference_with_fewer_than_three_seeds_must_say_why(tiny):
    ref = R.REFERENCES["tiny"]
    with pytest.raises(ValueError, match="declare seeds_why"):
        dataclasses.replace(ref, seeds=(0,))
    with pytest.raises(ValueError, match="never picked"):
        dataclasses.replace(ref, seeds=(1, 2, 3))
    assert dataclasses.replace(ref, seeds=(0,), seeds_why="one point of a trend").seeds == (0,)


def test_a_missing_reference_says_how_to_make_it(tmp_path, monkeypatch):
    monkeypatch.setenv("LMCOURSE_REFERENCE_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="make reference NAME=lm-char-lstm"):
        R.load("lm-char-lstm")


@pytest.mark.parametrize("name", sorted(lm_char.RECIPES))
def test_lm_char_learning_rate_warms_up_then_decays(name):
    recipe = lm_char.RECIPES[name]
    lrs = [lm_char.learning_rate(s, recipe) for s in range(1, recipe["steps"] + 1)]
    peak = lrs.index(max(lrs)) + 1
    assert peak == recipe["warmup_steps"] and max(lrs) == pytest.approx(recipe["lr"])
    assert lrs[-1] == pytest.approx(0.1 * recipe["lr"])
    assert all(a >= b for a, b in zip(lrs[peak - 1:], lrs[peak:], strict=False))


def test_describe_reports_finals_and_crossings(tiny):
    text = R.describe("tiny", metric="loss", baselines={})
    assert text.startswith("tiny (3 seeds") and "make reference" not in text
    assert R.crossing([[1, 0.5, 9.0], [2, 1.0, 3.0], [3, 1.5, 2.0]], 4.0) == (2, 1.0)
    assert R.crossing([[1, 0.5, 9.0]], 4.0) is None


# ---- the character LM references' own pieces ------------------------------------------------

class _PositionModel(torch.nn.Module):
    """A stateless 2-token 'model' whose confidence in token 0 grows with the position in its
    window: logits ``[i, 0]`` at position ``i``, so more context means a lower loss."""

    def __init__(self):
        super().__init__()
        self.dummy = torch.nn.Parameter(torch.zeros(1))

    def forward(self, x, state=None):
        pos = torch.arange(x.shape[1], dtype=torch.float32)
        logits = torch.stack([pos, torch.zeros_like(pos)], dim=-1)
        return logits.expand(x.shape[0], -1, -1) + 0 * self.dummy, None


def _expected(n_tokens, context, stride):
    """Target ``j`` (predicting token ``j``, 1..n-1) is scored once: by the first window if
    ``j <= context``, else by the window whose last ``stride`` targets hold it, or (after the
    last full window) by the window that ends at the last token."""
    import math
    last_start = max(range(0, n_tokens - context, stride))
    positions = []
    for j in range(1, n_tokens):
        if j <= context:
            start = 0
        elif j <= last_start + context:
            start = math.ceil((j - context) / stride) * stride
        else:
            start = n_tokens - 1 - context
        positions.append(j - start - 1)  # its position inside that window
    nll = [math.log1p(math.exp(-p)) for p in positions]
    return math.exp(sum(nll) / len(nll))


@pytest.mark.parametrize("n_tokens", [129, 300, 517])
def test_windowed_perplexity_scores_each_token_once_with_its_context(n_tokens):
    from lmcourse.course.reference.lm_char import windowed_perplexity
    ids = [0] * n_tokens
    got = windowed_perplexity(_PositionModel(), ids, context=128, stride=64)
    assert got == pytest.approx(_expected(n_tokens, 128, 64), rel=1e-6)
    # non-overlapping windows see less context on average: a higher perplexity
    assert windowed_perplexity(_PositionModel(), ids, 128, 128) >= got
    with pytest.raises(ValueError, match="stride"):
        windowed_perplexity(_PositionModel(), ids, 128, 0)


def test_tuning_split_is_cut_from_the_training_text():
    from lmcourse.course.reference.lm_char import char_split
    train, held_out, v = char_split("verdict")
    tune_train, tune_val, v2 = char_split("tuning")
    # the tuning split is the last whole articles of the training text, about as long as
    # the held-out text (articles run to a few thousand characters)
    assert v == v2 and abs(len(tune_val) - len(held_out)) < 3_000
    assert tune_train + tune_val == train  # none of the verdict's held-out text
    with pytest.raises(ValueError, match="verdict"):
        char_split("test")


def test_lm_char_references_are_matched_in_size_and_budget():
    """The comparison's premise: equal parameters (within 7%) and equal tokens."""
    counts = {name: lm_char.parameter_count(r) for name, r in lm_char.RECIPES.items()}
    assert max(counts.values()) / min(counts.values()) < 1.07, counts
    budgets = {(r["steps"], r["batch"], r["bptt"]) for r in lm_char.RECIPES.values()}
    assert len(budgets) == 1, budgets


def test_compare_and_crossover_read_every_reference(tiny):
    import matplotlib
    matplotlib.use("Agg")
    from lmcourse.course.reference.figures import crossover_figure, x_values

    result = R.load("tiny")
    text = R.compare({"tiny": "tiny"}, metric="loss")
    lines = text.splitlines()
    assert lines[0] == "(3 seeds: mean ± half range)"  # the table names its spread
    assert lines[1].startswith("model") and lines[2].startswith("tiny")
    with pytest.raises(ValueError, match="parameter count"):
        x_values(result, 0, "flops")
    with pytest.raises(ValueError, match="x must be one of"):
        x_values(result, 0, "minutes")
    assert x_values(result, 0, "step") == [p[0] for p in result.curves[0]]
    for seed in result.metrics:
        result.metrics[seed]["parameters"] = 3
    result.recipe.update(batch=2, bptt=5)
    assert x_values(result, 0, "flops")[:2] == [6 * 3 * 1 * 10, 6 * 3 * 2 * 10]
    fig = crossover_figure({"tiny": result}, {})
    assert len(fig.axes) == 2


# ---- bilm-lee: chapter 05's data, its tuning split, the epoch re-cutting ------------------

def test_bilm_lee_split_is_the_lee_windows_and_tuning_stays_inside_training():
    from lmcourse.course.reference.bilm_lee import lee_windows
    verdict_, tuning = lee_windows("verdict"), lee_windows("tuning")
    n, split = len(verdict_["windows"]), verdict_["train"][1]
    assert verdict_["held_out"] == (split, n) and 0.85 < split / n < 0.92
    # the held-out windows start at an article's first word: the article split's cut
    ids, width = verdict_["ids"], verdict_["windows"].shape[1]
    starts = [i for i in range(1, len(ids) - width) if
              torch.equal(ids[i:i + width], verdict_["windows"][split])]
    assert starts and starts[0] >= 0.9 * len(ids)
    assert torch.equal(verdict_["windows"][:split].flatten(), ids[:split * width])
    assert tuning["held_out"][1] * width <= starts[0]  # none of the verdict's windows
    assert tuning["train"][1] == tuning["held_out"][0]
    targets = verdict_["targets"]
    assert int(targets.max()) < verdict_["vocab_size"]
    rare = verdict_["windows"] >= verdict_["vocab_size"]
    assert rare.any() and bool((targets[rare] == 0).all())
    with pytest.raises(ValueError, match="verdict"):
        lee_windows("test")


def test_bilm_lee_n_gram_reads_the_same_words_as_the_bilm():
    """Same protocol on both sides: the n-gram baselines score exactly the words (and as
    many) that ``evaluate_bilm`` scores on the held-out windows, each window alone."""
    from lmcourse.course.reference.bilm_lee import held_out_batches, held_out_rows, lee_windows
    from lmcourse.models.ngram_tuning import NGramCounts
    data = lee_windows()
    batches = held_out_batches(data)
    read = torch.cat([words for _, words in batches])
    assert torch.equal(held_out_rows(data, "fwd"), read)
    assert torch.equal(held_out_rows(data, "bwd"), read.flip(1))
    bilm_scored = sum(words[:, 1:].numel() for _, words in batches)  # as evaluate_bilm counts
    counts = NGramCounts(data["targets"][: data["train"][1]].flatten(), data["vocab_size"], 2)
    assert counts.rows_scorer(held_out_rows(data, "fwd")).scored == bilm_scored


def test_committed_bilm_lee_baselines_are_what_the_code_computes():
    from lmcourse.course.reference import REFERENCES, load
    ref, result = REFERENCES["bilm-lee"], load("bilm-lee")
    assert dict(ref.baselines(ref.recipe)) == pytest.approx(result.baselines)
    assert result.baselines["modified_kn_tuned_fwd_order"] in range(2, 6)


def _fill_in_at_the_committed_setting(baselines: dict):
    """A stand-in for ``bench_fill_in._tuned_fill_in`` that fits only the setting the committed
    tuning chose and reports the committed development scores: the held-out figures are
    recomputed from the counts, the search itself (eight settings or more, minutes of Python) is not
    rerun here. That the choice is the best development score is checked beside it."""
    from lmcourse.course.reference.pretraining_eval import _data
    from lmcourse.models.fill_in_ngram import DISCOUNTS, FillIn

    order = int(baselines["fill_in_ngram_order"])
    discount = DISCOUNTS[int(baselines["fill_in_ngram_discount"])]
    tried = []
    for key, score in baselines.items():
        if key.startswith("fill_in_ngram_dev@"):
            o, d = key.split("@")[1].split("/")
            tried.append((int(o), d if d == "modified" else float(d), score))
    assert baselines[f"fill_in_ngram_dev@{order}/{discount}"] == max(t[2] for t in tried)

    def tuned(sentences, corpus, masks=None):
        c = _data(corpus).corpus
        model = FillIn(order, discount, len(c), c.special_ids, c.sep_id, c.pad_id)
        return model.fit(sentences), tried
    return tuned


@pytest.mark.parametrize("name", ["tiny-bert", "bench-mlm"])
def test_committed_masked_lm_baselines_are_the_tuned_ones_the_code_computes(name, monkeypatch):
    """The masked-token floor, the fill-in n-gram on every kind of blank and the probe's bag
    of words in the committed results are what today's tuned baselines give (a baseline made
    fairer is refreshed, not left stale)."""
    from lmcourse.course.reference import REFERENCES, bench_fill_in, load
    from lmcourse.course.reference import bench_arms as pb
    from lmcourse.models.masked_lm_bench import SMOOTHING
    ref, result = REFERENCES[name], load(name)
    if "fill_in_ngram_order" in result.baselines:
        monkeypatch.setattr(bench_fill_in, "_tuned_fill_in",
                            _fill_in_at_the_committed_setting(result.baselines))
    for cached in (pb.bench_baselines, pb.fill_in_ngram, pb.fill_in_on_blanks):
        cached.cache_clear()
    try:
        assert dict(ref.baselines(ref.recipe)) == pytest.approx(result.baselines)
    finally:
        for cached in (pb.bench_baselines, pb.fill_in_ngram, pb.fill_in_on_blanks):
            cached.cache_clear()
    assert result.baselines["bigram_both_k"] in SMOOTHING


def test_bilm_lee_epochs_recut_the_training_stream_only():
    from lmcourse.course.reference.bilm_lee import RECIPE, as_targets, epoch_batches, lee_windows
    data = lee_windows("verdict")
    width = RECIPE["window"]
    stream = data["ids"][: data["train"][1] * width]
    g = torch.Generator().manual_seed(0)
    seen = []
    for _ in range(3):
        batches = epoch_batches(data, RECIPE, g)
        words = torch.cat([w for _, w in batches])
        seen.append(words)
        assert words.shape[1] == width and len(words) >= data["train"][1] - 1
        # each window is a stretch of the training stream, as softmax targets
        first = batches[0][1][0]
        hits = [i for i in range(len(stream) - width)
                if torch.equal(as_targets(stream[i:i + width], data["vocab_size"]), first)]
        assert hits, "a window that is not in the training stream"
    assert not all(torch.equal(seen[0][:5], s[:5]) for s in seen[1:])  # re-cut, re-shuffled


def test_bilm_lee_learning_rate_warms_up_then_decays():
    from lmcourse.course.reference.bilm_lee import RECIPE, learning_rate
    lrs = [learning_rate(s, 1000, RECIPE) for s in range(1, 1001)]
    peak = RECIPE["warmup_steps"] - 1
    assert lrs[peak] == pytest.approx(RECIPE["lr"])
    assert all(a < b for a, b in zip(lrs[:peak], lrs[1:peak + 1], strict=True))
    assert all(a >= b for a, b in zip(lrs[peak:], lrs[peak + 1:], strict=False))
    assert lrs[-1] == pytest.approx(0.05 * RECIPE["lr"])


def test_schedule_is_longest_first_and_reports_the_makespan():
    workers, wall = runs.schedule({"a": 50, "b": 40, "c": 30, "d": 20, "e": 10}, jobs=2)
    assert workers == [["a", "d", "e"], ["b", "c"]]     # 80 and 70
    assert wall == 80
    assert runs.schedule({"a": 5, "b": 5}, jobs=1)[1] == 10
    assert runs.schedule({"a": 5}, jobs=4)[1] == 5
    with pytest.raises(ValueError, match="at least 1"):
        runs.schedule({"a": 5}, jobs=0)


def test_select_takes_globs_keeps_order_and_names_a_miss():
    bench = runs.select(["bench-*"])
    assert bench and all(n.startswith("bench-") for n in bench)
    assert runs.select(["tiny-bert", "bench-mlm", "tiny-bert"]) == ["tiny-bert", "bench-mlm"]
    assert runs.select([]) == sorted(R.REFERENCES)
    with pytest.raises(KeyError, match="no reference matches 'bnech-\\*'"):
        runs.select(["bnech-*"])


def test_expected_seconds_prefers_the_measured_wall_time(tiny):
    seconds, how = runs.expected_seconds("tiny")      # the fixture has run it
    assert how == "measured, CPU"
    assert seconds == R.load("tiny").wall_s
    result_path("tiny").unlink()
    seconds, how = runs.expected_seconds("tiny")
    assert how == "estimated" and seconds == R.REFERENCES["tiny"].seconds_per_seed * 3


def test_run_parallel_gives_each_run_one_thread_and_counts_failures(tiny, tmp_path,
                                                                    monkeypatch, capsys):
    import subprocess
    calls = []

    def fake_call(argv, stdout, stderr, env, cwd):
        calls.append((argv[-1], env["OMP_NUM_THREADS"], env["TQDM_DISABLE"]))
        return 0 if argv[-1] == "tiny" else 3

    monkeypatch.setitem(R.REFERENCES, "tiny2", R.REFERENCES["tiny"])
    monkeypatch.setattr(subprocess, "call", fake_call)
    failed = runs.run_parallel(["tiny", "tiny2"], jobs=2, log_dir=tmp_path / "logs")
    assert failed == 1
    assert sorted(calls) == [("tiny", "1", "1"), ("tiny2", "1", "1")]
    out = capsys.readouterr().out
    assert "2 reference runs in 2 processes of 1 thread" in out
    assert "tiny2: FAILED (exit 3" in out and "1 written, 1 failed" in out


def test_data_scaling_figure_draws_each_size_and_the_baselines_there():
    import copy

    import matplotlib.pyplot as plt

    from lmcourse.course.reference.figures import plot_data_scaling
    from lmcourse.course.reference.lm_scale import (
        CONVERGED,
        by_model,
        converged_lines,
        scale_table,
    )

    small = R.load("lm-scale-lstm-300k")
    big = copy.deepcopy(small)
    big.metrics[0] |= {"train_chars": 2_400_000, "held_out_ppl": 5.0}
    big.baselines["modified_kn_tuned"] = 5.5
    runs = by_model([big, small])
    assert [r.values("train_chars")[0] for r in runs["LSTM"]] == [300_000, 2_400_000]
    fig, ax = plt.subplots()
    plot_data_scaling(ax, runs, {"modified_kn_tuned": "tuned KN"})
    network, baseline = ax.lines[0], ax.lines[-1]
    assert list(network.get_ydata()) == [small.metrics[0]["held_out_ppl"], 5.0]
    assert list(baseline.get_ydata()) == [small.baselines["modified_kn_tuned"], 5.5]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["300K", "2.4M"]
    plt.close(fig)
    assert "2,400,000" in scale_table(runs) and "order" in scale_table(runs)
    uncapped = copy.deepcopy(big)
    uncapped.recipe |= CONVERGED
    assert by_model([big, small, uncapped]) == runs  # a converged run is not a figure point
    assert by_model([big, small, uncapped], converged=True) == {"LSTM": [uncapped]}
    uncapped.metrics[0] |= {"held_out_ppl": 4.5, "best_step": 9000, "steps": 10000}
    (line,) = converged_lines(runs, by_model([uncapped], converged=True))
    assert "LSTM without the 5,000-step cap" in line and "4.500 at best step 9,000 of 10,000" \
        in line and "against 5.000 with the cap (1 seed)" in line and "KN 5.500" in line
    three = copy.deepcopy(big)
    three.seeds = [0, 1, 2]
    three.metrics = {s: {**big.metrics[0], "held_out_ppl": 4.9 + s / 10} for s in range(3)}
    (line,) = converged_lines({"LSTM": [three]}, by_model([uncapped], converged=True))
    assert "against 5.000 with the cap (3 seeds; seed 0 alone 4.900)" in line


class _SittingEnds(Exception):
    pass


def test_a_run_longer_than_a_sitting_resumes_from_its_finished_seeds(tmp_path, monkeypatch):
    """A reference that keeps no weights writes each finished seed under seeds/ (small,
    committable); run again, it trains only the missing seeds, for the same recipe only,
    and the final result equals an uninterrupted run's."""
    monkeypatch.setenv("LMCOURSE_REFERENCE_DIR", str(tmp_path))
    trained, sittings = [], {"ended": False}

    def train(recipe, seed, device, progress=True, stop_after=None):
        trained.append(seed)
        if seed == 2 and not sittings["ended"]:
            sittings["ended"] = True
            raise _SittingEnds  # the machine is shut down during seed 2
        return _tiny_train(recipe, seed, device, progress, stop_after)

    ref = R.Reference(name="long", title="long", recipe={"lr": 0.1, "steps": 6}, train=train,
                      evaluate=_tiny_evaluate, baselines=lambda r: {}, seconds_per_seed=0.1,
                      first_steps=3, keep_weights=())
    monkeypatch.setitem(R.REFERENCES, "long", ref)
    with pytest.raises(_SittingEnds):
        R.run("long", progress=False, device=torch.device("cpu"))
    assert sorted(p.name for p in (tmp_path / "long" / "seeds").iterdir()) == [
        "seed0.json", "seed1.json"]
    assert not result_path("long").exists()
    result = R.run("long", progress=False, device=torch.device("cpu"))
    assert trained == [0, 1, 2, 2] and result.seeds == [0, 1, 2]
    assert not (tmp_path / "long" / "seeds").exists()
    trained.clear()
    monkeypatch.setattr(ref, "recipe", {"lr": 0.2, "steps": 6})
    result_path("long").unlink()
    R.run("long", progress=False, device=torch.device("cpu"))
    assert trained == [0, 1, 2]  # nothing kept from another recipe


def test_seeds_trained_on_another_machine_keep_its_device(tmp_path, monkeypatch):
    """A seed trained elsewhere (a GPU) and assembled here records the device it ran on."""
    from lmcourse.course.reference.running import save_finished_seed

    monkeypatch.setenv("LMCOURSE_REFERENCE_DIR", str(tmp_path))
    ref = R.Reference(name="elsewhere", title="elsewhere", recipe={"lr": 0.1, "steps": 6},
                      train=_tiny_train, evaluate=_tiny_evaluate, baselines=lambda r: {},
                      seconds_per_seed=0.1, first_steps=3, keep_weights=(), seeds=(0, 1),
                      seeds_why="a test of the machinery")
    monkeypatch.setitem(R.REFERENCES, "elsewhere", ref)
    monkeypatch.setattr("lmcourse.course.reference.running._device_name",
                        lambda device: f"{device.type}: the recorded device")
    save_finished_seed(ref, 0, _tiny_train(ref.recipe, 0, "cpu"), 1.0, torch.device("meta"))
    result = R.run("elsewhere", progress=False, device=torch.device("cpu"))
    assert result.device == "cpu: the recorded device; meta: the recorded device"


def test_a_kept_seed_trained_elsewhere_brings_its_weights(tmp_path, monkeypatch):
    """A seed whose weights the reference keeps is assembled from its finished record and
    fp16 weights without training again; without the weights it is trained again."""
    from lmcourse.course.reference.running import save_finished_seed

    monkeypatch.setenv("LMCOURSE_REFERENCE_DIR", str(tmp_path))
    trained = []

    def train(recipe, seed, device, progress=True, stop_after=None):
        trained.append(seed)
        return _tiny_train(recipe, seed, device, progress, stop_after)

    ref = R.Reference(name="kept", title="kept", recipe={"lr": 0.1, "steps": 6}, train=train,
                      evaluate=_tiny_evaluate, baselines=lambda r: {}, seconds_per_seed=0.1,
                      first_steps=3)
    monkeypatch.setitem(R.REFERENCES, "kept", ref)
    elsewhere = _tiny_train(ref.recipe, 0, "cpu")
    save_finished_seed(ref, 0, elsewhere, 1.0, torch.device("cpu"))
    assert (tmp_path / "kept" / "seeds" / "seed0.safetensors").exists()
    result = R.run("kept", progress=False, device=torch.device("cpu"))
    assert trained == [1, 2] and result.seeds == [0, 1, 2]
    assert torch.equal(R.load_weights("kept", 0)["w"], elsewhere.state["w"].half())
    result_path("kept").unlink()
    save_finished_seed(ref, 0, elsewhere, 1.0, torch.device("cpu"))
    (tmp_path / "kept" / "seeds" / "seed0.safetensors").unlink()
    trained.clear()
    R.run("kept", progress=False, device=torch.device("cpu"))
    assert trained == [0, 1, 2]  # no weights kept with seed 0: it is trained again


def test_a_seed_trained_on_a_gpu_is_checked_against_its_cpu_replay(tmp_path, monkeypatch):
    """A GPU draws other dropout masks, so its seed 0 cannot be replayed on a CPU: the result
    records a CPU replay of the first steps when it is assembled, and the checks read that."""
    import json

    from lmcourse.course.reference.running import _canonical, save_finished_seed

    monkeypatch.setenv("LMCOURSE_REFERENCE_DIR", str(tmp_path))
    ref = R.Reference(name="tiny", title="tiny", recipe={"lr": 0.1, "steps": 6},
                      train=_tiny_train, evaluate=_tiny_evaluate, baselines=lambda r: {},
                      seconds_per_seed=0.1, first_steps=3)
    monkeypatch.setitem(R.REFERENCES, "tiny", ref)
    cpu = _tiny_train(ref.recipe, 0, torch.device("cpu"))
    gpu = R.SeedRun(cpu.curve, [x * 1.05 for x in cpu.train_loss], cpu.metrics, cpu.state)
    save_finished_seed(ref, 0, gpu, 1.0, torch.device("cpu"))
    record = tmp_path / "tiny" / "seeds" / "seed0.json"
    data = json.loads(record.read_text())
    assert data["recipe"] == _canonical(ref.recipe)
    record.write_text(json.dumps({**data, "device": "cuda: NVIDIA H200"}))
    R.run("tiny", progress=False, device=torch.device("cpu"))
    result = R.load("tiny")
    assert result.train_loss[0][:3] == [round(x, 6) for x in gpu.train_loss[:3]]
    assert result.cpu_replay["device"].startswith("cpu")
    assert result.first_losses() == [round(x, 6) for x in cpu.train_loss[:3]]
    assert "first 3 steps reproduced" in R.verify("tiny")[1]
    result.cpu_replay["train_loss"][1] *= 1.01
    result.save()
    with pytest.raises(R.StaleReference, match="first 3 steps"):
        R.verify("tiny", metric=False)


@pytest.mark.parametrize("name", ["lm-char-rnn", "lm-char-gru", "lm-char-lstm",
                                  "lm-char-transformer", "bilm-lee"])
def test_the_lee_n_grams_were_tuned_on_a_grid_that_reaches_past_their_best(name):
    """A tuned order at the top of its grid may not be the best: the grid must go further."""
    from lmcourse.models.ngram_tuning import CHAR_ORDERS, WORD_ORDERS

    grid = max(WORD_ORDERS) if name == "bilm-lee" else max(CHAR_ORDERS)
    orders = {k: v for k, v in R.load(name).baselines.items() if k.endswith("_order")}
    assert orders and all(order < grid for order in orders.values()), (orders, grid)
