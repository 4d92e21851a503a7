"""Static checks of every committed notebook: pairing, metadata, structure, outputs."""

from __future__ import annotations

import re

import jupytext
import nbformat
import pytest

from tools import nbtools, slides
from tools.nbtools import ROOT
from tools.prose_numbers import DETAILS as FOLDED

NOTEBOOKS = nbtools.notebooks()
IDS = [str(p.relative_to(ROOT)) for p in NOTEBOOKS]


def test_there_are_notebooks():
    assert any(p.parent.name == "chapters" for p in NOTEBOOKS)
    assert any(p.parent.name == "solutions" for p in NOTEBOOKS)
    assert not any(p.parent.name == "labs" for p in NOTEBOOKS), (
        "the student copies in labs/ are generated, not executed: not among the notebooks")


def test_every_notebook_is_in_sync_with_its_twin():
    assert nbtools.out_of_sync() == []


def test_out_of_sync_is_detected(tmp_path):
    (tmp_path / "chapters").mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# T"),
                                         nbformat.v4.new_code_cell("x = 1")])
    nbformat.write(nb, tmp_path / "chapters" / "00_t.ipynb")
    assert "no jupytext twin" in nbtools.out_of_sync(tmp_path)[0]
    nb.cells[1].source = "x = 2"
    jupytext.write(nb, tmp_path / "chapters" / "00_t.py", fmt="py:percent")
    nb.cells[1].source = "x = 3"
    nbformat.write(nb, tmp_path / "chapters" / "00_t.ipynb")
    assert "differs" in nbtools.out_of_sync(tmp_path)[0]


def test_copy_prose_keeps_outputs_and_refuses_changed_code(tmp_path):
    (tmp_path / "chapters").mkdir()
    code = nbformat.v4.new_code_cell("print(1)", outputs=[
        nbformat.v4.new_output("stream", name="stdout", text="1\n")])
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# T"), code])
    notebook, twin = tmp_path / "chapters" / "00_t.ipynb", tmp_path / "chapters" / "00_t.py"
    nbformat.write(nbtools.prepare(nb), notebook)
    jupytext.write(nb, twin, fmt="py:percent")
    twin.write_text(twin.read_text().replace("# # T", "# # T\n#\n# More prose."))
    first_id = nbformat.read(notebook, as_version=4).cells[0].id
    assert nbtools.copy_prose(twin) == 1
    copied = nbformat.read(notebook, as_version=4)
    assert copied.cells[0].id == first_id  # an edited cell keeps its id
    assert "More prose." in copied.cells[0].source
    assert copied.cells[1].outputs[0].text == "1\n"
    assert nbtools.out_of_sync(tmp_path) == []
    twin.write_text(twin.read_text().replace("print(1)", "print(2)"))
    with pytest.raises(ValueError, match="code cells differ"):
        nbtools.copy_prose(twin)
    assert "1\n" == nbformat.read(notebook, as_version=4).cells[1].outputs[0].text


@pytest.fixture(params=NOTEBOOKS, ids=IDS)
def notebook(request):
    return request.param, nbformat.read(request.param, as_version=4)


def test_code_cells_are_short(notebook):
    path, nb = notebook
    too_long = nbtools.long_cells(path, nb)
    assert not too_long, (f"{path.name}: split these cells or move the code into lmcourse: "
                          + "; ".join(too_long))


def test_long_cells_are_found_by_their_limit(tmp_path):
    for folder, limit in (("chapters", 30), ("solutions", 20)):
        nb = nbformat.v4.new_notebook(cells=[
            nbformat.v4.new_code_cell("\n".join(["x = 1"] * limit) + "\n\n"),
            nbformat.v4.new_markdown_cell("\n".join(["text"] * 99)),
            nbformat.v4.new_code_cell("\n".join(["y = 2"] * (limit + 1)))])
        path = tmp_path / folder / "01_x.ipynb"
        assert nbtools.long_cells(path, nb) == [
            f"cell 2: {limit + 1} lines > {limit} ('y = 2')"]


def test_kernelspec_is_portable(notebook):
    path, nb = notebook
    assert nb.metadata["kernelspec"]["name"] == "python3", (
        f"{path.name}: kernelspec must be 'python3' so it runs anywhere (NoSuchKernel otherwise)")


def test_title_cell_and_slide_metadata(notebook):
    path, nb = notebook
    first = nb.cells[0]
    assert first.cell_type == "markdown" and re.match(r"# \S", first.source), (
        f"{path.name}: the first cell must be a markdown title '# ...'")
    missing = [i for i, c in enumerate(nb.cells) if "slide_type" not in c.metadata.get(
        "slideshow", {})]
    assert not missing, f"{path.name}: cells {missing} have no slideshow.slide_type"
    assert first.metadata["slideshow"]["slide_type"] == "slide"


def test_executed_with_outputs(notebook):
    path, nb = notebook
    code = [c for c in nb.cells if c.cell_type == "code"]
    unexecuted = [i for i, c in enumerate(code) if c.execution_count is None]
    assert not unexecuted, f"{path.name}: code cells {unexecuted} were never executed"
    counts = [c.execution_count for c in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"{path.name}: not executed top to bottom in a fresh kernel; rebuild it with nbtools")
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{path.name}: committed outputs contain errors"


def test_chapter_structure(notebook):
    path, nb = notebook
    if path.parent.name != "chapters":
        pytest.skip("labs have their own structure")
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for heading in ("Summary", "Exercises", "References"):
        assert re.search(rf"^#+ .*{heading}", text, re.M), f"{path.name}: no '{heading}' section"
    assert sum(c.cell_type == "markdown" for c in nb.cells) >= 15, f"{path.name}: too little prose"
    images = sum("image/png" in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))
    assert images >= 2, f"{path.name}: a chapter needs at least two figures"
    assert any("# NBVAL_CHECK_OUTPUT" in c.source for c in nb.cells), (
        f"{path.name}: no cell is output-checked by nbval")
    assert slides.speaker_notes(path.stem), (
        f"{path.name}: an instructor presents it as slides; give it speaker notes in "
        f"instructor/notes/{path.stem}.md (see tools/slides.py)")


def test_outputs_stay_small(notebook):
    path, _ = notebook
    size = path.stat().st_size
    assert size < 3_000_000, f"{path.name} is {size / 1e6:.1f} MB; keep outputs small"


def test_committed_notebooks_hold_no_live_widget_views(notebook):
    """An unexecuted (untrusted) notebook cannot draw a widget view: JupyterLab would show its
    text repr. Each widget cell keeps only the static figure the widget displays first."""
    path, nb = notebook
    assert "widgets" not in nb.metadata, f"{path.name}: stored widget state"
    views = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"
             for o in c.outputs if nbtools.WIDGET_VIEW in o.get("data", {})]
    assert not views, f"{path.name}: widget views in cells {views}; rebuild with nbtools"


def test_drop_widget_views_keeps_the_static_figure():
    figure = nbformat.v4.new_output("display_data", data={"image/png": "iVBOR", "text/plain":
                                                          "<Figure>"})
    view = nbformat.v4.new_output("display_data", data={
        nbtools.WIDGET_VIEW: {"model_id": "abc"}, "text/plain": "VBox(children=(...))"})
    cell = nbformat.v4.new_code_cell("widget()", outputs=[figure, view])
    nb = nbformat.v4.new_notebook(cells=[cell], metadata={"widgets": {"state": {}}})
    nbtools.drop_widget_views(nb)
    assert nb.cells[0].outputs == [figure] and "widgets" not in nb.metadata


def test_drop_widget_views_keeps_a_widgets_own_fallback_figure():
    both = nbformat.v4.new_output("display_data", data={
        nbtools.WIDGET_VIEW: {"model_id": "abc"}, "image/png": "iVBOR", "text/plain": "(w)"})
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("w()", outputs=[both])])
    nbtools.drop_widget_views(nb)
    assert nb.cells[0].outputs[0]["data"] == {"image/png": "iVBOR", "text/plain": "(w)"}


def test_each_widget_cell_shows_one_figure(notebook):
    """A widget cell's committed output is its one fallback figure, never a static figure
    plus a live copy (what a student saw twice after running it)."""
    path, nb = notebook
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or not re.search(r"\w+_widget\(", cell.source):
            continue
        figures = [o for o in cell.outputs if "image/png" in o.get("data", {})]
        fallbacks = [o for o in cell.outputs if o.get("data", {}).get("text/plain", "")
                     .startswith("(an interactive widget")]
        assert len(fallbacks) == 1 and len(figures) <= 1 and (
            not figures or figures == fallbacks), (
            f"{path.name} cell {i}: {len(figures)} figures, {len(fallbacks)} widget fallbacks; "
            "a widget shows its static figure as its own fallback (box_with_figure)")


def test_committed_html_outputs_load_nothing_remote(notebook):
    """HTML outputs (bertviz's views in chapter 09) must draw offline: no script, style or
    data that a browser would fetch from another host."""
    from lmcourse.viz.bertviz_offline import remote_references

    path, nb = notebook
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            html = out.get("data", {}).get("text/html")
            if html:
                text = "".join(html) if isinstance(html, list) else html
                assert remote_references(text) == [], f"{path.name}, cell {i}"


def test_execute_starts_a_fresh_kernel_once_when_a_reply_never_comes(monkeypatch, tmp_path):
    """A lost kernel reply (the run sits idle until the cell timeout) is retried once in a
    fresh kernel; an error raised by a cell is not retried."""
    import nbclient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    runs = []

    class Flaky:
        def __init__(self, nb, **kwargs):
            self.nb, self.kwargs = nb, kwargs

        def execute(self):
            runs.append(self.kwargs["timeout"])
            if len(runs) == 1:
                raise CellTimeoutError("no reply")
            self.nb.cells[0].outputs = [nbformat.v4.new_output("stream", text="ran\n")]

    monkeypatch.setattr(nbclient, "NotebookClient", Flaky)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('ran')")])
    nbtools.execute(nb, tmp_path)
    assert len(runs) == 2 and nb.cells[0].outputs[0]["text"] == "ran\n"

    class Broken(Flaky):
        def execute(self):
            runs.append(0)
            raise CellExecutionError("a cell raised", "ValueError", "bad")

    runs.clear()
    monkeypatch.setattr(nbclient, "NotebookClient", Broken)
    with pytest.raises(CellExecutionError):
        nbtools.execute(nb, tmp_path)
    assert len(runs) == 1


# The instructor's voice: phrases that address a teacher, not the student reading the cell,
# or send the student to lecture material they do not have.
INSTRUCTOR_VOICE = re.compile(r"\bask the (?:room|class)\b|\bon the board\b|speaker notes|"
                              r"\bbefore class\b|\blive demo\b|\blecture\b|\bthe slides\b",
                              re.I)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_students_read_no_instructor_notes(path):
    """Speaker notes live in instructor/notes/ (the slide decks insert them); a notebook a
    student opens has no ``notes`` cell and no line that speaks to the teacher."""
    nb = nbformat.read(path, as_version=4)
    notes = [i for i, c in enumerate(nb.cells)
             if c.metadata.get("slideshow", {}).get("slide_type") == "notes"]
    assert not notes, (f"{path.name}: cells {notes} are speaker notes; move them to "
                       f"instructor/notes/{path.stem}.md (or make them a student prompt)")
    voice = [f"cell {i}: {m.group(0)!r}" for i, c in enumerate(nb.cells)
             if c.cell_type == "markdown" for m in [INSTRUCTOR_VOICE.search(c.source)] if m]
    assert not voice, f"{path.name}: the instructor's voice in {voice}"


def _labels() -> dict[tuple[str, str], tuple[str, str]]:
    """``{("chapter" | "lab", "4b"): (file name, all its cells' text)}`` from each notebook's
    title line ("# 4b · ..." or "# Lab 02 · ..."), leading zeros dropped."""
    out = {}
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        m = re.match(r"# (?:Lab )?(\w+) ·", nb.cells[0].source)
        assert m, f"{path.name}: the first cell's title is not '# NN · ...'"
        kind = "lab" if path.parent.name == "solutions" else "chapter"
        out[(kind, m.group(1).lower().lstrip("0"))] = (
            path.name, "\n".join(c.source for c in nb.cells))
    return out


_REFERENCE = re.compile(r"\b(chapter|lab)s? (\d+[a-c]?)\b", re.I)
# "chapter 06's `name`" and "`name` (chapter 06)": the named thing must be in that notebook
_NAMED = [re.compile(r"\b(?P<kind>chapter|lab) (?P<n>\d+[a-c]?)'s `(?P<name>[^`(]+)", re.I),
          re.compile(r"`(?P<name>[A-Za-z_][\w.]*)(?:\(\))?`,? \((?P<kind>chapter|lab) "
                     r"(?P<n>\d+[a-c]?)\)", re.I)]


def test_cross_references_resolve():
    """Every 'chapter N' / 'lab N' names a notebook that exists, and a name quoted with it
    (chapter 06's `MultiHeadAttention`) is in that notebook: chapters get split and moved,
    and a pointer into the wrong part sends the student to the wrong place."""
    labels, bad = _labels(), []
    for path in NOTEBOOKS:
        for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
            for m in _REFERENCE.finditer(cell.source):
                if (m.group(1).lower(), m.group(2).lower().lstrip("0")) not in labels:
                    bad.append(f"{path.name} cell {i}: {m.group(0)!r} names no notebook")
            for pattern in _NAMED:
                for m in pattern.finditer(cell.source):
                    target = labels.get((m["kind"].lower(), m["n"].lower().lstrip("0")))
                    name = m["name"].strip().rsplit(".", 1)[-1]
                    if target and name not in target[1]:
                        bad.append(f"{path.name} cell {i}: {m.group(0)!r}, but {name} is not "
                                   f"in {target[0]}")
    assert not bad, "\n".join(bad)


# ---- what the student's view shows: the lesson, not the machinery ---------------------------

HARNESS_CHATTER = re.compile(r"torch threads|Intel\(R\)|AMD EPYC|Xeon|steps trained here|"
                             r"cached run \d", re.I)


def _output_text(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        parts.append(out.get("text", ""))
        for kind in ("text/plain", "text/html", "text/markdown"):
            parts.append(out.get("data", {}).get(kind, ""))
    return "\n".join(p if isinstance(p, str) else "".join(p) for p in parts)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_outputs_show_no_harness_chatter(path):
    """Cache checks, the processor's model and thread counts go to the harness log
    (lmcourse.course.harness.note); reference runs keep their machine in result.json."""
    nb = nbformat.read(path, as_version=4)
    found = [f"cell {i}: {m.group(0)!r}" for i, c in enumerate(nb.cells)
             if c.cell_type == "code" for m in [HARNESS_CHATTER.search(_output_text(c))] if m]
    assert not found, (f"{path.name} shows the harness's details {found}: log them with "
                       "lmcourse.course.harness.note instead of printing them")


CHAPTERS = [p for p in NOTEBOOKS if p.parent.name == "chapters"]


#: what the course's machinery is called when it leaks into a lesson: its commands, its
#: committed runs and their replays, its caches and the machines it borrowed
HARNESS_TALK = re.compile(
    r"make (?:reference|test|teacher)\b|committed (?:runs?|with the course|reference)|"
    r"reference runs?\b|replay(?:ed|s)? (?:its|each|every|the) (?:run|first)|"
    r"first \d+ (?:steps|losses) (?:of|against)|live run of|tools/|`reference/|"
    r"course(?:'s)? cache|cached run|lent GPU|\blease\b", re.I)
HARNESS_TALK_ALLOWED = 10


def harness_talk(markdown: str) -> list[str]:
    """The harness mentions in a markdown cell's student-visible text (folded blocks such
    as *How we know* and worked answers are where provenance belongs)."""
    return HARNESS_TALK.findall(FOLDED.sub("", markdown))


def test_harness_talk_is_found_outside_folded_blocks_only():
    assert harness_talk("trained by `make reference NAME=x`, a reference run")
    assert not harness_talk("<details><summary>How we know</summary>make reference</details>")
    assert not harness_talk("the states are cached for the backward pass")


def test_the_lessons_keep_the_harness_folded():
    """Issue 57: at most ten harness mentions in all that the chapters show a student: the
    prose outside folded blocks and what the code cells print."""
    found = {}
    for path in CHAPTERS:
        nb = nbformat.read(path, as_version=4)
        hits = [h for c in nb.cells if c.cell_type == "markdown" for h in harness_talk(c.source)]
        hits += [h for c in nb.cells if c.cell_type == "code"
                 for h in HARNESS_TALK.findall(_output_text(c))]
        if hits:
            found[path.name] = hits
    total = sum(map(len, found.values()))
    assert total <= HARNESS_TALK_ALLOWED, (
        f"{total} harness mentions in what the chapters show (at most "
        f"{HARNESS_TALK_ALLOWED}); move them into the chapter's folded *How we know* "
        f"block, or out of what the cells print: {found}")


LABS = [p for p in NOTEBOOKS if p.parent.name == "solutions"]
#: a run time typed into prose ("runs in about 40 s", "(about 75 s)"): it drifts from what
#: the run card measures on another machine
TYPED_TIME = re.compile(r"\babout \d+(?:\.\d+)? ?(?:s|seconds)\b|\(about \d+ ?s\)", re.I)


def test_a_typed_run_time_is_found():
    assert TYPED_TIME.search("The whole lab runs in about 40 s on a laptop CPU.")
    assert not TYPED_TIME.search("runs in about a minute; its run card gives the time")


@pytest.mark.parametrize("path", LABS, ids=[p.stem for p in LABS])
def test_a_labs_stated_time_is_its_run_cards(path):
    """Issue 57: a lab's opening says roughly how long it runs and sends the student to
    its run card for the measured time, instead of typing a figure that drifts."""
    nb = nbformat.read(path, as_version=4)
    opening = nb.cells[0].source
    found = TYPED_TIME.findall(opening)
    assert not found, f"{path.name}: its opening types a run time {found}; point to the run card"
    assert "run card" in " ".join(opening.split()), (
        f"{path.name}: its opening should point to its run card")


#: the course's switches and words that a lab's student cells must not show (issue 57, item 7)
LAB_SWITCHES = re.compile(r"record=False|NBVAL_CHECK_OUTPUT|\bledger\b|make teacher", re.I)


def lab_student_problems(nb: nbformat.NotebookNode) -> list[str]:
    """What in a lab's student copy speaks to the maintainer instead of the student: the
    harness's switches, harness talk outside folded blocks, or a first code cell that does
    not open the lesson."""
    found = [f"cell {i}: {m!r}" for i, c in enumerate(nb.cells)
             for m in LAB_SWITCHES.findall(" ".join(c.source.split()))]
    found += [f"cell {i}: {m!r}" for i, c in enumerate(nb.cells) if c.cell_type == "markdown"
              for m in harness_talk(c.source)]
    first = next((c.source for c in nb.cells if c.cell_type == "code"), "")
    found += [f"first code cell: {p}" for p in opening_cell_problems(first)]
    return found


def test_a_lab_cell_that_speaks_to_the_maintainer_is_found():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("run `make\nteacher` first; the ledger records it"),
        nbformat.v4.new_code_cell("from lmcourse.course import reference\ncheck(x, record=False)")])
    problems = " ".join(lab_student_problems(nb))
    for word in ("make teacher", "ledger", "record=False", "lmcourse.course"):
        assert word in problems, word
    assert not lab_student_problems(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import torch")]))


@pytest.mark.parametrize("path", LABS, ids=[p.stem for p in LABS])
def test_a_labs_student_cells_speak_to_the_student(path):
    """Issue 57, item 7: what a student opens carries no harness switch, no ledger and no
    harness talk in its visible prose, and its first code cell opens the lesson."""
    problems = lab_student_problems(nbformat.read(nbtools.student_path(path), as_version=4))
    assert not problems, f"{nbtools.student_path(path).name}: {problems}"


def _verdicts(cell) -> list[str]:
    from lmcourse.course.claims import MIME, MIME_TABLE

    found = []
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        rows = ([data[MIME]] if MIME in data else []) + list(data.get(MIME_TABLE, []))
        found += [row.get("verdict", "") for row in rows]
    return found


@pytest.mark.parametrize("path", LABS, ids=[p.stem for p in LABS])
def test_a_passed_check_is_not_followed_by_a_verdict_against_it(path):
    """Issue 57, item 7: a student who just read ✅ must not read, in that cell or the next,
    a verdict that the claim failed (the one-run figures print no verdict)."""
    code = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    pairs = zip(code, code[1:] + [{}], strict=True)
    bad = [f"code cell {i + 1}: {v}" for i, (c, after) in enumerate(pairs)
           if "✅" in _output_text(c)
           for v in _verdicts(c) + _verdicts(after) if v in ("contradicted", "not reproduced")]
    assert not bad, f"{path.name}: {bad}"


CHAPTER_WORDS = 4000


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_a_chapter_is_read_in_a_sitting(path):
    """Issue 57: at most 4,000 words of prose (folded worked answers and provenance aside,
    as the term plan counts them); split a longer chapter at a seam."""
    from tools.term_plan import reading_words

    nb = nbformat.read(path, as_version=4)
    words = sum(reading_words(c.source) for c in nb.cells if c.cell_type == "markdown")
    assert words <= CHAPTER_WORDS, (f"{path.name}: {words:,} words of prose (at most "
                                    f"{CHAPTER_WORDS:,}); split it at a seam or fold the "
                                    "provenance into a *How we know* block")


def test_the_word_count_leaves_folded_blocks_out():
    from tools.term_plan import reading_words

    assert reading_words("one two three") == 3
    assert reading_words("one <details><summary>x</summary>two three</details>") == 1


FIRST_CELL_LINES = 15


def opening_cell_problems(source: str) -> list[str]:
    """What keeps a chapter's first code cell from opening the lesson: more than
    :data:`FIRST_CELL_LINES` lines, or the course's harness (``lmcourse.course``) imported
    before the student has read a line of the lesson."""
    problems = []
    if len(source.strip().splitlines()) > FIRST_CELL_LINES:
        problems.append(f"{len(source.strip().splitlines())} lines (at most {FIRST_CELL_LINES})")
    if re.search(r"^\s*(from|import)\s+lmcourse\.course\b", source, re.M):
        problems.append("it imports lmcourse.course: import a harness helper in the cell "
                        "that first uses it")
    return problems


def test_the_opening_cell_check_can_fail():
    assert opening_cell_problems("import torch\n") == []
    assert opening_cell_problems("from lmcourse.course import reference\n")
    assert opening_cell_problems("\n".join(f"x{i} = {i}" for i in range(16)))


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_the_lesson_opens_the_chapter(path):
    """Issue 57: the first code cell is short and imports no harness; model code and
    harness helpers come in where the chapter uses them."""
    nb = nbformat.read(path, as_version=4)
    first = next(c.source for c in nb.cells if c.cell_type == "code")
    problems = opening_cell_problems(first)
    assert not problems, f"{path.name}: its first code cell has " + "; ".join(problems)


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_an_experiment_shows_its_verdicts_as_one_table(path):
    """Three or more verdicts in one cell read as a table (verdict_tables.verdict_table), not as a
    row of verdict lines."""
    from lmcourse.course.claims import MIME

    nb = nbformat.read(path, as_version=4)
    rows = [f"cell {i}: {n} verdict lines" for i, c in enumerate(nb.cells)
            if c.cell_type == "code"
            for n in [sum(MIME in out.get("data", {}) for out in c.get("outputs", []))]
            if n >= 3]
    assert not rows, (f"{path.name}: {rows}; wrap the cell's verdicts in "
                      "`with verdict_table(title):`")


GENERATED_DATA = re.compile(r"goodreads|minilm_review_corpus|spoiler_teacher|spoiler_data")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_a_notebook_on_the_generated_reviews_says_they_are_generated(path):
    """The spoiler sample is written from templates: a reader must not take a verdict on it
    for one about real text."""
    nb = nbformat.read(path, as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    if GENERATED_DATA.search(code):
        assert re.search(r"\bgenerated\b", prose, re.I), (
            f"{path.name} reads the generated Goodreads-style reviews but its prose never "
            "says they are generated (written from templates, not by people)")
