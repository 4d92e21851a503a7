"""Reference runs: every committed one is checked against the code, and the checks can fail.

The committed references (``reference/<name>/``) are verified cheaply: the recipe in the
file equals the code's, re-training the first steps of seed 0 reproduces the committed
losses, and the committed weights give the committed held-out metric. The machinery is
tested on a tiny fake reference whose files are tampered with in each way.
"""

from __future__ import annotations

import json

import pytest
import torch

from lmcourse.course import reference as R
from lmcourse.course.references import lm_char  # noqa: F401  (registers the course's runs)


@pytest.mark.parametrize("name", sorted(R.REFERENCES))
def test_committed_reference_matches_the_code(name):
    done = R.verify(name)
    print(f"{name}: " + "; ".join(done))
    result = R.load(name)
    assert len(result["seeds"]) >= 3 and result["seeds"] == list(range(len(result["seeds"])))
    for seed in map(str, result["seeds"]):
        steps = [point[0] for point in result["curves"][seed]]
        assert steps == sorted(steps) and len(result["train_loss"][seed]) == steps[-1]
    for key in ("recipe", "device", "torch", "wall_s", "curves", "metrics"):
        assert key in result


def test_reference_folder_stays_small():
    total = sum(p.stat().st_size for p in R.reference_dir().rglob("*") if p.is_file())
    assert total < 40e6, f"reference/ holds {total / 1e6:.0f} MB: keep it to tens of MB at most"


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
    assert result["seeds"] == [0, 1, 2] and set(result["curves"]) == {"0", "1", "2"}
    assert result["device"].startswith("cpu") and result["command"] == "make reference NAME=tiny"


def test_a_changed_recipe_is_stale_and_names_the_command(tiny, monkeypatch):
    ref, _ = tiny
    monkeypatch.setattr(ref, "recipe", {"lr": 0.2, "steps": 6})
    with pytest.raises(R.StaleReference, match=r"differs .*\['lr'\].*make reference NAME=tiny"):
        R.verify("tiny")


def test_first_steps_that_do_not_reproduce_fail(tiny):
    _, folder = tiny
    result = json.loads((folder / "result.json").read_text())
    result["train_loss"]["0"][1] *= 1.01
    (folder / "result.json").write_text(json.dumps(result))
    with pytest.raises(R.StaleReference, match="first 3 steps"):
        R.verify("tiny", metric=False)


def test_weights_that_do_not_give_the_metric_fail(tiny):
    _, folder = tiny
    from safetensors.torch import save_file
    save_file({"w": torch.ones(3).half()}, folder / "seed0.safetensors")
    with pytest.raises(R.StaleReference, match="committed weights give norm"):
        R.verify("tiny", first_steps=False)


def test_picked_seeds_are_refused(tiny):
    _, folder = tiny
    result = json.loads((folder / "result.json").read_text())
    result["seeds"] = [0, 2, 5]
    (folder / "result.json").write_text(json.dumps(result))
    with pytest.raises(R.StaleReference, match="consecutive from 0"):
        R.verify("tiny", first_steps=False, metric=False)


def test_a_missing_reference_says_how_to_make_it(tmp_path, monkeypatch):
    monkeypatch.setenv("LMCOURSE_REFERENCE_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="make reference NAME=lm-char-lstm"):
        R.load("lm-char-lstm")


def test_lm_char_learning_rate_warms_up_then_decays():
    recipe = lm_char.RECIPE
    lrs = [lm_char.learning_rate(s, recipe) for s in range(1, recipe["steps"] + 1)]
    peak = lrs.index(max(lrs)) + 1
    assert peak == recipe["warmup_steps"] and max(lrs) == pytest.approx(recipe["lr"])
    assert lrs[-1] == pytest.approx(0.1 * recipe["lr"])
    assert all(a >= b for a, b in zip(lrs[peak - 1:], lrs[peak:], strict=False))


def test_describe_reports_finals_and_crossings(tiny):
    text = R.describe("tiny", metric="loss", baselines={})
    assert text.startswith("reference tiny (3 seeds") and "make reference NAME=tiny" in text
    assert R.crossing([[1, 0.5, 9.0], [2, 1.0, 3.0], [3, 1.5, 2.0]], 4.0) == (2, 1.0)
    assert R.crossing([[1, 0.5, 9.0]], 4.0) is None
