"""reveal.js slide decks of the chapters that work offline.

    python -m tools.slides                      # every chapter -> _build/slides/NN_name.slides.html
    python -m tools.slides chapters/02_rnn_bptt.ipynb --out /tmp/decks

nbconvert's slides exporter links reveal.js, MathJax, require.js, jQuery, mermaid and the
widget renderer from CDNs. Here reveal.js 4.0.2, MathJax 2.7.7 (trimmed to what the
``TeX-AMS_CHTML-full`` configuration loads), require.js and jQuery come from npm
(``site/reveal/package.json``) and are copied beside the decks; a small template
(``site/reveal/template``) drops mermaid and the widget manager. Each cell's
``slideshow.slide_type`` (filled in by ``tools/nbtools.py``) makes the slides; cells of type
``notes`` become speaker notes (press ``s`` in a deck).
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "site" / "reveal"
MODULES = HERE / "node_modules"
TEMPLATE_DIR = HERE / "template"
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


REMOTE = re.compile(
    r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)\s*=\s*["']?(?:https?:)?//""", re.I)


def export(notebook: Path, out: Path, exp=None) -> Path:
    """Write ``out/<name>.slides.html`` for one notebook (vendor files must be in ``out``)."""
    exp = exp or exporter()
    nb = nbformat.read(notebook, as_version=4)
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
