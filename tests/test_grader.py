"""The autograder (``make grader``, issues 58 and 74): otter-grader bundles built from the labs.

What must hold:

- every lab builds: a student notebook, one otter test file per check cell, and a
  Gradescope zip that carries the course and its pinned requirements;
- every solution gets full marks, and a copy with one typical mistake (the ones the lab's
  checks name: a missing 1/√d, the mask the wrong way round, the temperature on one side
  only, ...) gets partial marks, with the check's own message as feedback;
- the grader's checks are its own: a notebook that rewrites `check` gets nothing, a scratch
  `check = ...` costs nothing (through a zip);
- own work is judged on what a function uses (defaults, closures, class attributes, its own
  helpers, what it reads through a module), and a borrowed helper costs only the checks that
  grade it; "pass exercise N first" only when the graded code calls exercise N's function;
- a named mistake is named right (√E is not "d"), feedback never shows otter's harness line,
  and each lab's "How this lab is graded" cell states the grader's points and chain.

Grading a whole notebook through otter takes as long as the lab runs, so the planted
submissions go through the real zips of the fast labs (01, 05, 08, and 09 cut short by its
own failure); for every lab, otter's own test files from its bundle run on the namespace of
the lab's cells up to its closing result (the closing results are the labs' nbval runs' and
``make grader VERIFY=1``'s to show).
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import zipfile
from pathlib import Path

import matplotlib
import nbformat
import pytest
from otter.test_files import ExceptionTestFile

from lmcourse.checks import CheckFailed
from lmcourse.checks.own_work import borrowed, require_own_work
from tools import grader

matplotlib.use("Agg")

#: one planted mistake per lab: (the solution's line, the wrong line, the question it
#: fails, words of the check's message that name the mistake)
PLANTED = {
    "01": ("self.grad += other.data * out.grad", "self.grad += out.grad",
           "q01_autograd_ops", "in a * b"),
    "02": ("h @ W_hh.T + b_hh)", "h @ W_hh.T)", "q01_rnn_step", "b_hh"),
    "03": ("return 2 * tp / (2 * tp + fp + fn) if tp else 0.0",
           "return tp / (tp + fp) if tp else 0.0", "q04_f1", "precision"),
    "04": ("p = counts.astype(np.float64) ** 0.75", "p = counts.astype(np.float64)",
           "q05_noise_distribution", "0.75"),
    "05": ("scores = q @ k.transpose(-2, -1) / math.sqrt(d)", "scores = q @ k.transpose(-2, -1)",
           "q01_attention", "1/√d"),
    "06": ("out.append(torch.softmax(logits, dim=-1)[:, 1].cpu())",
           "out.append(torch.softmax(logits, dim=-1)[:, 0].cpu())", "q04_predict_proba",
           "class 0"),
    "07": ("log_p = F.log_softmax(student_logits / T, dim=-1)",
           "log_p = F.log_softmax(student_logits, dim=-1)", "q02_distillation_loss",
           "no temperature on the student"),
    "08": ("counts[pair] += count", "counts[pair] += 1", "q01_pair_counts",
           "counted each word once"),
    "09": ("allowed = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()",
           "allowed = torch.ones(T, T, dtype=torch.bool, device=x.device).triu()",
           "q01_causal_self_attention", "future"),
}


@pytest.fixture(scope="module")
def bundles(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("grader")
    assert grader.main(["--out", str(out)]) == 0
    return out


def planted(lab: str) -> nbformat.NotebookNode:
    """Lab ``lab``'s solution with its :data:`PLANTED` mistake."""
    right, wrong, *_ = PLANTED[lab]
    nb = nbformat.read(grader.solutions([lab])[0], as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code" and right in c.source]
    assert len(cells) == 1, f"lab {lab}: the planted line must be in exactly one cell"
    cells[0].source = cells[0].source.replace(right, wrong)
    return nb


def otter_scores(tests: Path, env: dict, questions: list[str]) -> dict:
    """Each question's (score, possible, feedback), by otter's own test-file runner."""
    scores = {}
    for name in questions:
        test = ExceptionTestFile.from_file(str(tests / f"{name}.py"))
        with contextlib.redirect_stdout(io.StringIO()):
            test.run(env)
        scores[name] = (test.score, test.possible, test.summary())
    return scores


def exercise_questions(bundles: Path, lab: str) -> tuple[Path, list[str]]:
    entry = next(e for e in json.loads((bundles / "points.json").read_text())
                 if e["lab"][:2] == lab)
    return (bundles / entry["lab"] / "tests",
            [c["question"] for c in entry["checks"] if c["exercise"] is not None])


def test_every_lab_has_a_student_notebook_tests_and_a_gradescope_zip(bundles):
    entries = json.loads((bundles / "points.json").read_text())
    assert [e["lab"][:2] for e in entries] == [f"{n:02d}" for n in range(1, 10)]
    for entry in entries:
        lab = entry["lab"]
        solution = nbformat.read(grader.SOLUTIONS / f"{lab}.ipynb", as_version=4)
        tagged = [c for c in solution.cells if "check" in c.metadata.get("tags", [])]
        assert len(entry["checks"]) == len(tagged) >= 4
        student = nbformat.read(bundles / "student" / f"{lab}.ipynb", as_version=4)
        assert "BEGIN SOLUTION" not in nbformat.writes(student)
        assert student.cells[-1].source.startswith("## Handing in")
        with zipfile.ZipFile(bundles / f"{lab}-autograder.zip") as bundle:
            names = set(bundle.namelist())
            assert {f"tests/{c['question']}.py" for c in entry["checks"]} <= names
            assert {"run_autograder", "setup.sh", "environment.yml",
                    "files/course/pyproject.toml",
                    "files/course/lmcourse/checks/own_work.py"} <= names
            environment = bundle.read("environment.yml").decode()
        assert "-e /autograder/source/files/course" in environment
        assert "otter-grader" in environment and "torch==" in environment
    page = (bundles / "points.md").read_text()
    assert all(f"`{c['question']}`" in page for e in entries for c in e["checks"])


def test_a_relative_output_folder_works_as_make_grader_gives_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert grader.main(["--out", "_build/grader", "08"]) == 0
    assert (tmp_path / "_build" / "grader" / "08_bpe-autograder.zip").exists()


@pytest.mark.parametrize("lab", sorted(PLANTED))
def test_a_solution_gets_full_marks_and_a_planted_mistake_partial_with_its_message(
        bundles, lab):
    tests, questions = exercise_questions(bundles, lab)
    solution = nbformat.read(grader.solutions([lab])[0], as_version=4)
    full = otter_scores(tests, grader.exercises_namespace(solution), questions)
    assert all(score == possible for score, possible, _ in full.values()), {
        q: s[2] for q, s in full.items() if s[0] < s[1]}

    *_, failing, says = PLANTED[lab]
    partial = otter_scores(tests, grader.exercises_namespace(planted(lab)), questions)
    got, possible = (sum(s[i] for s in partial.values()) for i in (0, 1))
    assert 0 < got < possible
    score, _, feedback = partial[failing]
    assert score == 0 and "CheckFailed" in feedback and says in feedback, feedback
    assert "Traceback" not in feedback


def _with(nb: nbformat.NotebookNode, *cells: str, replace: tuple[str, str] | None = None
          ) -> nbformat.NotebookNode:
    """A copy of ``nb`` with one line replaced (in the one cell that has it) and cells added."""
    nb = nbformat.reads(nbformat.writes(nb), as_version=4)
    if replace:
        found = [c for c in nb.cells if c.cell_type == "code" and replace[0] in c.source]
        assert len(found) == 1, replace[0]
        found[0].source = found[0].source.replace(*replace)
    nb.cells += [nbformat.v4.new_code_cell(c) for c in cells]
    return nb


def _graded(bundles: Path, lab: str, nb: nbformat.NotebookNode, tmp_path: Path) -> dict:
    """Grade ``nb`` through lab ``lab``'s Gradescope zip: {question: (score, feedback)}."""
    path = grader.solutions([lab])[0]
    submission = tmp_path / f"{lab}-{len(list(tmp_path.iterdir()))}.ipynb"
    nbformat.write(nb, submission)
    found = grader.grade(submission, bundles / f"{path.stem}-autograder.zip")
    for _, _, feedback in found.values():  # the check's words, never otter's harness line
        assert "Error at line" not in feedback and "Traceback" not in feedback, feedback
    return {q: (s[0], s[2]) for q, s in found.items()}


def _score(found: dict) -> list[float]:
    return [found[q][0] for q in sorted(found)]


def test_the_zip_grades_a_whole_notebook_as_gradescope_would(bundles, tmp_path):
    solution = nbformat.read(grader.solutions(["05"])[0], as_version=4)
    full = _graded(bundles, "05", solution, tmp_path)
    assert _score(full) == [1] * 6, full
    assert "max |yours - torch" in full["q01_attention"][1]  # a pass shows the measured figure
    partial = _graded(bundles, "05", planted("05"), tmp_path)
    assert partial["q01_attention"][0] == 0 and "1/√d" in partial["q01_attention"][1]
    assert 0 < sum(_score(partial)) < 6


def test_a_notebook_that_rewrites_the_checks_gets_nothing(bundles, tmp_path):
    from tools.nbtools import student_copy

    stubs = student_copy(nbformat.read(grader.solutions(["05"])[0], as_version=4))
    tamper = _with(stubs, "import lmcourse.checks as course_checks\n"
                          "for name in dir(check):\n"
                          "    if not name.startswith('_'):\n"
                          "        setattr(check, name, lambda *a, **k: None)\n"
                          "course_checks.requires = lambda *a, **k: None")
    assert _score(_graded(bundles, "05", tamper, tmp_path)) == [0] * 6


def test_a_name_clash_costs_nothing_a_default_argument_borrow_loses_its_checks_only(
        bundles, tmp_path):
    """Lab 05, three things at once: a scratch ``check``; ``attention`` that hands its work
    to the course's through a default argument (graded by q01 and q03); and a wrong
    ``padding_mask`` that ``causal_self_attention`` never calls (q06 must not blame it)."""
    solution = nbformat.read(grader.solutions(["05"])[0], as_version=4)
    nb = _with(solution,
               "import lmcourse.models.attention\n"
               "def attention(q, k, v, mask=None,\n"
               "              _impl=lmcourse.models.attention.scaled_dot_product_attention):\n"
               "    return _impl(q, k, v, mask)",
               "check = torch.ones(3)",
               replace=("torch.arange(max_len)[None, :] < lengths[:, None]",
                        "torch.arange(max_len)[None, :] <= lengths[:, None]"))
    found = _graded(bundles, "05", nb, tmp_path)
    assert _score(found) == [0, 0, 0, 1, 1, 1], found
    assert "default" in found["q01_attention"][1] and "not your own" in found["q01_attention"][1]
    assert "padding" in found["q02_masks"][1]


def test_one_borrowed_helper_loses_only_its_own_check(bundles, tmp_path):
    """Lab 01: ``topological_order`` imported from the course (``Value.backward`` calls it)
    costs exercise 2's points and nothing else."""
    solution = nbformat.read(grader.solutions(["01"])[0], as_version=4)
    nb = _with(solution, "from lmcourse.autograd import topological_order")
    found = _graded(bundles, "01", nb, tmp_path)
    lost = {q for q, (score, _) in found.items() if score == 0}
    assert lost == {"q02_autograd_topological_order"}, found
    assert "not your own code" in found["q02_autograd_topological_order"][1]


def test_a_wrong_helper_the_graded_function_never_calls_is_not_blamed(bundles, tmp_path):
    """Lab 08: a wrong ``pair_counts`` costs exercise 1, not exercise 3 when the student's
    ``learn_bpe`` counts its pairs itself."""
    solution = nbformat.read(grader.solutions(["08"])[0], as_version=4)
    inline = ("counts = Counter()\n"
              "        for symbols, count in segmentation.items():\n"
              "            for pair in zip(symbols[:-1], symbols[1:], strict=False):\n"
              "                counts[pair] += count")
    nb = _with(solution, replace=("counts = pair_counts(segmentation)", inline))
    nb = _with(nb, replace=("counts[pair] += count\n    return counts",
                            "counts[pair] += 1\n    return counts"))
    found = _graded(bundles, "08", nb, tmp_path)
    assert _score(found) == [0, 1, 1, 1], found
    assert "pass exercise" not in found["q03_learn_bpe"][1]

def test_scaling_by_the_models_width_is_named_as_such_through_the_zip(bundles, tmp_path):
    """Lab 09: a student who divides the scores by √E (the model's width) is told so, not
    "you divided the scores by d" (at E = 16 with 4 heads the two were the same number);
    the checks that build on exercise 1 say to pass it first."""
    solution = nbformat.read(grader.solutions(["09"])[0], as_version=4)
    nb = _with(solution, replace=("/ math.sqrt(E // self.num_heads)", "/ math.sqrt(E)"))
    found = _graded(bundles, "09", nb, tmp_path)
    first = found["q01_causal_self_attention"]
    assert first[0] == 0 and "√E" in first[1] and "divided the scores by d" not in first[1]
    assert found["q02_block"][0] == 0 and "pass exercise 1 first" in found["q02_block"][1]


def test_causal_self_attention_runs_only_the_half_of_exercise_2_it_calls(bundles):
    """Lab 05: a wrong ``causal_mask``, which ``causal_self_attention`` calls, sends its
    check back to exercise 2; a wrong ``padding_mask``, which it does not, does not."""
    tests, questions = exercise_questions(bundles, "05")
    solution = nbformat.read(grader.solutions(["05"])[0], as_version=4)
    causal = _with(solution, replace=("torch.ones(T, T, dtype=torch.bool).tril()",
                                      "torch.ones(T, T, dtype=torch.bool).triu()"))
    padding = _with(solution, replace=("torch.arange(max_len)[None, :] < lengths[:, None]",
                                       "torch.arange(max_len)[None, :] <= lengths[:, None]"))
    wrong_causal = otter_scores(tests, grader.exercises_namespace(causal), questions)
    assert wrong_causal["q06_causal_self_attention"][0] == 0
    assert "pass exercise 2 first" in wrong_causal["q06_causal_self_attention"][2]
    wrong_padding = otter_scores(tests, grader.exercises_namespace(padding), questions)
    assert wrong_padding["q06_causal_self_attention"][0] == 1


# ---- the graded code is the student's own ---------------------------------------------------

def test_an_answer_imported_subclassed_or_wrapped_from_the_course_is_refused():
    from lmcourse.models import attention as course_attention
    from lmcourse.tokenizers import bpe as course_bpe

    def own(q, k, v):
        return q @ k.transpose(-2, -1) @ v

    def wrapper(q, k, v, mask=None):
        return course_attention.scaled_dot_product_attention(q, k, v, mask)

    given_helper = course_bpe.train_bpe

    def uses_given_helper(words, n):
        return given_helper(words, n)

    class Subclass(course_attention.MultiHeadAttention):
        pass

    assert borrowed(own) is None
    assert "imported from `lmcourse.models.attention`" in borrowed(
        course_attention.scaled_dot_product_attention)
    assert "uses `course_attention.scaled_dot_product_attention`" in borrowed(wrapper)
    assert "subclasses" in borrowed(Subclass)
    assert "imported from" in borrowed(functools.partial(course_bpe.train_bpe))
    # a helper the lab's own cells import is the lab's, not the answer ...
    assert borrowed(uses_given_helper, allowed=["given_helper"]) is None
    assert "calls `given_helper`" in borrowed(uses_given_helper)
    # ... but a course module never is: any answer is one attribute away
    assert "uses `course_bpe.train_bpe`" in borrowed(lambda w: course_bpe.train_bpe(w, 3),
                                                    allowed=["course_bpe"])


def test_own_work_follows_attributes_imports_and_helpers_and_spares_the_course_utilities():
    import lmcourse

    def uses_a_utility(x):
        return x.to(lmcourse.device())  # the course's top-level helpers answer no exercise

    def imports_the_answer(q, k, v):
        from lmcourse.models.attention import scaled_dot_product_attention
        return scaled_dot_product_attention(q, k, v)

    def helper(q, k, v):
        return imports_the_answer(q, k, v)

    def through_a_helper(q, k, v):
        return helper(q, k, v)

    class Attribute:
        impl = staticmethod(lmcourse.models.attention.scaled_dot_product_attention)

        def __call__(self, q, k, v):
            return self.impl(q, k, v)

    assert borrowed(uses_a_utility) is None
    assert "uses `lmcourse.models.attention.scaled_dot_product_attention`" in borrowed(
        imports_the_answer)
    assert "scaled_dot_product_attention" in borrowed(through_a_helper)
    assert borrowed(through_a_helper, elsewhere=["helper"]) is None  # its own check's
    assert "class attribute `Attribute.impl`" in borrowed(Attribute)


class _Classifier:
    """A notebook's class whose method reads an attribute named like a global."""

    def __init__(self, encoder):
        self.encoder = encoder

    def forward(self, ids):
        return self.encoder(ids)


def test_an_attribute_named_like_a_course_global_is_not_a_borrowing(monkeypatch):
    from lmcourse.models.attention import MultiHeadAttention

    monkeypatch.setitem(globals(), "encoder", MultiHeadAttention)  # lab 06 has one
    assert borrowed(_Classifier) is None
    monkeypatch.setitem(globals(), "encoder", MultiHeadAttention(8, 2))  # an instance: data
    assert borrowed(_Classifier) is None


def test_own_work_skips_data_and_names_what_is_missing():
    require_own_work({"ids": [1, 2]}, ["ids"])  # data the check is given, not code
    with pytest.raises(CheckFailed, match="`merge` is not defined"):
        require_own_work({}, ["merge"])


def test_a_submission_that_imports_the_answer_gets_no_points_for_it(bundles):
    tests, questions = exercise_questions(bundles, "08")
    nb = nbformat.read(grader.solutions(["08"])[0], as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(
        "from lmcourse.tokenizers.bpe import _merge as merge"))
    scores = otter_scores(tests, grader.exercises_namespace(nb), questions)
    assert scores["q02_merge"][0] == 0
    assert "not your own code" in scores["q02_merge"][2]


def test_the_grading_plugin_sets_one_thread_skips_the_notebooks_closing_run_and_words_feedback(
        monkeypatch):
    """What the zips' otter plugin does: one torch thread for the kernel it is about to
    start, the closing check cell left to the grader (it trains once, not twice), and the
    check's own words in place of otter's harness line."""
    from types import SimpleNamespace

    from lmcourse.checks.grading import GradingPlugin

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    closing = "runs = check.beats_lstm(TinyGPT, recall_loss, pairs, steps)"
    plugin = GradingPlugin.__new__(GradingPlugin)
    plugin.plugin_config = {"closing": [closing]}
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell(closing.replace(", ", ",\n    "))])  # reformatted: same code
    nb = plugin.before_execution(nb)
    assert os.environ["OMP_NUM_THREADS"] == "1"
    assert nb.cells[0].source == "x = 1" and "beats_lstm" not in nb.cells[1].source

    def result(passed, message, said):
        body = SimpleNamespace(lmcourse_feedback=said)
        return SimpleNamespace(passed=passed, message=message, test_case=SimpleNamespace(
            body=body, success_message=None))
    good = result(True, "✅ Test case passed", "✅ attention: passed (max error 1e-16)")
    bad = result(False, "❌ Test case failed\nError at line 60 in test q01:\n  grading.grade(env)"
                        "\nCheckFailed: ❌ attention: the weights do not sum to 1",
                 "❌ attention: the weights do not sum to 1")
    plugin.after_grading(SimpleNamespace(results={"q01": SimpleNamespace(
        test_case_results=[good, bad])}))
    assert good.test_case.success_message == "✅ attention: passed (max error 1e-16)"
    assert bad.message == "❌ attention: the weights do not sum to 1"
    from lmcourse.checks.grading import feedback  # a test that said nothing: otter's, trimmed

    trimmed = feedback("❌ Test case failed\nError at line 60 in test q01:\n  grade(env)\n"
                       "RuntimeError: the course's files differ", object())
    assert trimmed == "❌ Test case failed\nRuntimeError: the course's files differ"


@pytest.mark.parametrize("lab", sorted(PLANTED))
def test_each_lab_states_its_points_and_chain_as_the_grader_has_them(bundles, lab):
    """The student's "How this lab is graded" cell is what the grader does: its points
    (points.json) and, for each check, the earlier exercises whose checks a correct solution
    makes it run first (``python -m tools.grader --write-cells`` rewrites it)."""
    path = grader.solutions([lab])[0]
    nb = nbformat.read(path, as_version=4)
    cells = [c for c in nb.cells if grader.GRADING_TAG in c.metadata.get("tags", [])]
    assert len(cells) == 1, f"{path.name}: no grading cell (python -m tools.grader --write-cells)"
    entry = next(e for e in json.loads((bundles / "points.json").read_text())
                 if e["lab"] == path.stem)
    assert cells[0].source == grader.grading_markdown(entry, grader.chains(path)), (
        f"{path.name}'s grading cell is stale: run python -m tools.grader --write-cells")
    checks, _ = grader.lab_checks(nb, path.stem)
    tagged = [c for c in nb.cells if grader.CHECK_TAG in c.metadata.get("tags", [])]
    assert [c.source.splitlines()[-1] for c in tagged] == [
        grader.question_line(check) for check in checks]  # each check cell names its question
    student = nbformat.read(grader.ROOT / "labs" / path.name, as_version=4)
    assert any(c.source == cells[0].source for c in student.cells)
