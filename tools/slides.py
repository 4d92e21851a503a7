"""reveal.js slide decks of the chapters that work offline.

    python -m tools.slides                      # every chapter -> _build/slides/NN_name.slides.html
    python -m tools.slides chapters/02_rnn_bptt.ipynb --out /tmp/decks

nbconvert's slides exporter links reveal.js, MathJax, require.js, jQuery, mermaid and the
widget renderer from CDNs. Here reveal.js 4.0.2, MathJax 2.7.7 (trimmed to what the
``TeX-AMS_CHTML-full`` configuration loads), require.js and jQuery come from npm
(``site/reveal/package.json``) and are copied beside the decks; a small template
(``site/reveal/template``) drops mermaid and the widget manager. Each cell's
``slideshow.slide_type`` (filled in by ``tools/nbtools.py``) makes the slides.

Speaker notes live apart from the notebooks, in ``instructor/notes/<chapter>.md``: the
chapters are what students open, and the instructor's voice ("ask the room", "draw it on
the board") does not belong there. Each note is anchored to the first line of the cell it
follows and becomes a ``notes`` cell of the deck (press ``s`` in a deck).
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import time
from pathlib import Path

import nbformat

from tools.prose_numbers import DETAILS as FOLDED  # what a reader opens on purpose

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "site" / "reveal"
MODULES = HERE / "node_modules"
TEMPLATE_DIR = HERE / "template"
NOTES = ROOT / "instructor" / "notes"
ANCHOR = "## after: "
VENDOR = "vendor"

#: npm package -> the parts of it a deck loads (files or folders, relative to the package).
VENDOR_FILES: dict[str, list[str]] = {
    "reveal.js": ["LICENSE", "dist/reveal.css", "dist/reveal.js", "dist/theme/white.css",
                  "dist/theme/fonts/source-sans-pro", "plugin/notes/notes.js"],
    "mathjax": ["LICENSE", "MathJax.js", "config/TeX-AMS_CHTML-full.js", "config/Safe.js",
                "extensions", "jax/input/TeX", "jax/element", "jax/output/CommonHTML",
                "jax/output/PreviewHTML", "fonts/HTML-CSS/TeX/woff"],
    "requirejs": ["require.js"],
    "jquery": ["LICENSE.txt", "dist/jquery.min.js"],
}


def missing_modules() -> str | None:
    """A message saying how to install the vendored JavaScript, or None when it is there."""
    absent = [p for p in VENDOR_FILES if not (MODULES / p / "package.json").exists()]
    if absent:
        return (f"{', '.join(absent)} not installed under {MODULES.relative_to(ROOT)}: "
                "run `make slides` (or `cd site/reveal && npm ci --ignore-scripts`)")
    return None


def copy_vendor(out: Path) -> Path:
    """Copy the trimmed JavaScript libraries to ``out/vendor`` (once) and return that folder."""
    problem = missing_modules()
    if problem:
        raise FileNotFoundError(problem)
    target = out / VENDOR
    for package, parts in VENDOR_FILES.items():
        for part in parts:
            src, dest = MODULES / package / part, target / package / part
            if not src.exists():
                continue  # optional files such as a LICENSE another version names differently
            if src.is_dir():
                shutil.copytree(src, dest, dirs_exist_ok=True)
            else:
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest)
    return target


def exporter():
    """nbconvert's SlidesExporter pointed at the local copies, with the course template."""
    from nbconvert import SlidesExporter
    from traitlets.config import Config

    c = Config()
    c.SlidesExporter.reveal_url_prefix = f"{VENDOR}/reveal.js"
    c.SlidesExporter.reveal_theme = "white"
    c.SlidesExporter.reveal_transition = "none"
    c.SlidesExporter.reveal_scroll = True
    c.HTMLExporter.mathjax_url = (f"{VENDOR}/mathjax/MathJax.js"
                                  "?config=TeX-AMS_CHTML-full,Safe")
    c.HTMLExporter.require_js_url = f"{VENDOR}/requirejs/require.js"
    c.HTMLExporter.jquery_url = f"{VENDOR}/jquery/dist/jquery.min.js"
    c.TemplateExporter.extra_template_basedirs = [str(TEMPLATE_DIR)]
    c.TemplateExporter.template_name = "lmcourse"
    return SlidesExporter(config=c)


def speaker_notes(stem: str, notes_dir: Path = NOTES) -> list[tuple[str, str]]:
    """``(anchor, note)`` pairs of ``notes_dir/<stem>.md``: each ``## after: <first line of a
    cell>`` heading and the text under it (none when the chapter has no notes file)."""
    path = notes_dir / f"{stem}.md"
    if not path.exists():
        return []
    pairs: list[tuple[str, list[str]]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith(ANCHOR):
            pairs.append((line[len(ANCHOR):].strip(), []))
        elif pairs:
            pairs[-1][1].append(line)
    return [(anchor, "\n".join(text).strip()) for anchor, text in pairs]


def _first_line(cell: nbformat.NotebookNode) -> str:
    lines = cell.source.strip().splitlines()
    return lines[0].strip() if lines else ""


def with_speaker_notes(nb: nbformat.NotebookNode, stem: str, notes_dir: Path = NOTES
                       ) -> nbformat.NotebookNode:
    """``nb`` with each speaker note of ``stem`` inserted as a ``notes`` cell after the one
    cell whose first line is its anchor (several notes after one cell keep their order). A
    note whose anchor matches no cell, or several, is an error naming the file to fix."""
    after: dict[int, list[str]] = {}
    for anchor, text in speaker_notes(stem, notes_dir):
        hits = [i for i, cell in enumerate(nb.cells) if _first_line(cell) == anchor]
        if len(hits) != 1:
            raise ValueError(f"{notes_dir / (stem + '.md')}: the note after {anchor!r} matches "
                             f"{len(hits)} cells of {stem}; quote the first line of exactly "
                             "one cell (it may have been edited or moved)")
        after.setdefault(hits[0], []).append(text)
    cells = []
    for i, cell in enumerate(nb.cells):
        cells.append(cell)
        for text in after.get(i, []):
            note = nbformat.v4.new_markdown_cell(text)
            note.metadata["slideshow"] = {"slide_type": "notes"}
            cells.append(note)
    nb.cells = cells
    return nb




def for_the_talk(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` as a deck shows it: the lesson's path and its results tables, without the
    folded blocks of its markdown cells (provenance, hints, worked answers), which are
    for a reader's second look, not for the room. A cell that was only a folded block
    becomes a skipped slide."""
    for cell in nb.cells:
        if cell.cell_type != "markdown" or "<details>" not in cell.source:
            continue
        cell.source = re.sub(r"\n{3,}", "\n\n", FOLDED.sub("\n", cell.source)).strip()
        if not cell.source:
            cell.metadata["slideshow"] = {"slide_type": "skip"}
    return nb


REMOTE = re.compile(
    r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)\s*=\s*["']?(?:https?:)?//""", re.I)


def export(notebook: Path, out: Path, exp=None) -> Path:
    """Write ``out/<name>.slides.html`` for one notebook (vendor files must be in ``out``)."""
    exp = exp or exporter()
    nb = with_speaker_notes(for_the_talk(nbformat.read(notebook, as_version=4)), notebook.stem)
    body, _ = exp.from_notebook_node(nb, resources={"metadata": {"name": notebook.stem}})
    remote = REMOTE.findall(body)
    if remote:
        raise RuntimeError(f"{notebook.name}: the deck still loads remote files: {remote[:3]}")
    target = out / f"{notebook.stem}.slides.html"
    target.write_text(body, encoding="utf-8")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path,
                        help="notebooks to export (default: every chapter)")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "slides")
    args = parser.parse_args(argv)
    notebooks = args.notebooks or sorted((ROOT / "chapters").glob("*.ipynb"))
    args.out.mkdir(parents=True, exist_ok=True)
    copy_vendor(args.out)
    exp = exporter()
    for nb in notebooks:
        start = time.perf_counter()
        target = export(nb, args.out, exp)
        print(f"{target}  ({time.perf_counter() - start:.1f} s)")
    print(f"{len(notebooks)} deck(s) in {args.out}; open one in a browser, press 's' for notes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
