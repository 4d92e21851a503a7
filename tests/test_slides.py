"""Slides (``make slides``): reveal.js decks that work offline, with speaker notes.

One real chapter is exported into a temporary folder with the vendored JavaScript, opened
in headless Chromium (network refused beyond 127.0.0.1) and stepped through to its last
slide.
"""

from __future__ import annotations

import nbformat
import pytest
from headless import Browser, serve  # noqa: E402

from tools import slides
from tools.nbtools import ROOT

CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))


@pytest.fixture(scope="module")
def deck_dir(tmp_path_factory):
    problem = slides.missing_modules()
    if problem:
        pytest.skip(problem)
    out = tmp_path_factory.mktemp("slides")
    slides.copy_vendor(out)
    return out


def _tiny_notebook():
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    cells = [md("# Title slide\n\nWith maths: $e^{i\\pi} + 1 = 0$"),
             md("Say this aloud: the speaker note."),
             md("## Second slide"),
             code("print(6 * 7)"),
             md("### A sub-slide"),
             md("<details><summary>Run card: 3 s on a CPU</summary></details>")]
    kinds = ["slide", "notes", "slide", "-", "subslide", "skip"]
    for cell, kind in zip(cells, kinds, strict=True):
        cell.metadata["slideshow"] = {"slide_type": kind}
    cells[3].outputs = [nbformat.v4.new_output("stream", name="stdout", text="42\n")]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    return nb


def test_remote_references_are_detected():
    assert slides.REMOTE.search('<script src="https://unpkg.com/reveal.js/dist/reveal.js">')
    assert slides.REMOTE.search("<link rel=stylesheet href='//cdn.example.org/a.css'>")
    assert not slides.REMOTE.search('<script src="vendor/requirejs/require.js">')


@pytest.mark.slow
def test_tiny_deck_has_slides_notes_and_local_scripts(deck_dir, tmp_path):
    path = tmp_path / "tiny.ipynb"
    nbformat.write(_tiny_notebook(), path)
    html = slides.export(path, deck_dir).read_text()
    assert html.count('<aside class="notes">') == 1 and "the speaker note" in html
    assert "vendor/reveal.js/dist/reveal.js" in html and "vendor/mathjax/MathJax.js" in html
    assert "mermaid" not in html and "unpkg.com" not in html
    assert "Run card" not in html  # a run card is for readers, not for the talk
    assert not slides.REMOTE.findall(html)


def _reveal(page):
    """The deck's Reveal object (the stock template loads it with require.js)."""
    page.wait_for_selector(".reveal.ready", timeout=30_000)
    page.evaluate("""new Promise(done => require(['vendor/reveal.js/dist/reveal.js'],
                                                  R => { window.R = R; done(); }))""")


@pytest.mark.slow
def test_chapter_deck_steps_through_offline(deck_dir):
    if not CHAPTERS:
        pytest.skip("no chapters yet")
    chapter = CHAPTERS[0]
    target = slides.export(chapter, deck_dir)
    browser = Browser()
    try:
        with serve(deck_dir) as url:
            page = browser.page(1280, 800)
            page.goto(f"{url}/{target.name}", wait_until="load")
            _reveal(page)
            total = page.evaluate("R.getTotalSlides()")
            assert total >= 5, f"{chapter.name}: only {total} slides"
            hashes = [page.evaluate("location.hash")]
            page.keyboard.press("ArrowRight")  # what a presenter does
            page.wait_for_function("location.hash !== '#/' && location.hash !== ''")
            hashes.append(page.evaluate("location.hash"))
            while not page.evaluate("R.isLastSlide()"):
                page.evaluate("R.next()")
                hashes.append(page.evaluate("location.hash"))
                assert len(hashes) < 10 * total, "R.next() never reaches the last slide"
            visited = len(set(hashes))
            assert visited >= total, f"visited {visited} of {total} slides: {hashes}"
            page.wait_for_function(
                "document.querySelectorAll('.MathJax_CHTML').length > 0", timeout=30_000)
            page.close()
        assert not browser.errors, f"JavaScript errors: {browser.errors}"
        assert not browser.failed, f"failed requests: {browser.failed[:10]}"
        assert not browser.remote_hosts(), f"requests left 127.0.0.1: {browser.remote_hosts()}"
    finally:
        browser.close()


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_every_speaker_note_lands_after_one_cell(chapter):
    """A note whose anchor no longer matches exactly one cell (the cell was edited or
    moved) fails here, naming the notes file, instead of vanishing from the deck."""
    nb = nbformat.read(chapter, as_version=4)
    before = len(nb.cells)
    notes = slides.speaker_notes(chapter.stem)
    deck = slides.with_speaker_notes(nb, chapter.stem)
    assert len(deck.cells) == before + len(notes)
    for anchor, text in notes:
        at = next(i for i, c in enumerate(deck.cells) if c.source.strip().startswith(anchor))
        following = deck.cells[at + 1:at + 1 + len(notes)]
        assert any(c.source == text and c.metadata["slideshow"]["slide_type"] == "notes"
                   for c in following)


def test_a_note_whose_cell_is_gone_is_an_error(tmp_path):
    (tmp_path / "tiny.md").write_text("# notes\n\n## after: no such cell\n\nsay this\n")
    with pytest.raises(ValueError, match="matches 0 cells"):
        slides.with_speaker_notes(_tiny_notebook(), "tiny", notes_dir=tmp_path)
    (tmp_path / "tiny.md").write_text("## after: ## Second slide\n\nsay this\n")
    deck = slides.with_speaker_notes(_tiny_notebook(), "tiny", notes_dir=tmp_path)
    assert [c.source for c in deck.cells][3] == "say this"


def test_a_deck_leaves_the_folded_blocks_out():
    md = nbformat.v4.new_markdown_cell
    nb = nbformat.v4.new_notebook(cells=[
        md("## A result\n\nWhat it shows.\n\n<details><summary>How we know</summary>\n\n"
           "`make reference NAME=x`\n</details>"),
        md("<details><summary>Worked answer</summary>the answer</details>")])
    talk = slides.for_the_talk(nb)
    assert talk.cells[0].source == "## A result\n\nWhat it shows."
    assert talk.cells[1].metadata["slideshow"]["slide_type"] == "skip"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_a_chapter_deck_carries_its_results_tables_and_not_its_provenance(chapter):
    """Issue 57, item 8: the deck shows the path and every results table; the provenance
    ("How we know"), hints and worked answers stay on the page."""
    from lmcourse.course.claims import MIME_TABLE

    nb = nbformat.read(chapter, as_version=4)
    tables = sum(MIME_TABLE in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))
    shown = [c for c in slides.for_the_talk(nb).cells
             if c.metadata.get("slideshow", {}).get("slide_type") != "skip"]
    assert not [c.source[:60] for c in shown if c.cell_type == "markdown"
                and "<details>" in c.source]
    assert sum(MIME_TABLE in o.get("data", {}) for c in shown
               for o in c.get("outputs", [])) == tables
