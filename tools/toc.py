"""The site's table of contents in ``myst.yml``, generated from the notebooks that exist.

    python -m tools.toc           # rewrite the toc block of myst.yml
    python -m tools.toc --check   # exit 1 (and say what differs) when myst.yml is stale

Chapters go under the part their number belongs to (``PARTS``), labs under "Labs", both in
file-name order, so a new notebook cannot be left out of the site: ``tests/test_site.py``
fails until the toc lists it. A lab's page is its executed solution
(``labs/solutions/``); the student copy in ``labs/`` is offered for download there. The
pages of ``PAGES`` that exist (the claims ledger, written by ``make claims``, and the
changelog) follow the landing page, before the parts.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MYST = ROOT / "myst.yml"

#: (part title, chapter numbers) in syllabus order; the labs follow in their own part.
PARTS: list[tuple[str, range]] = [
    ("Foundations", range(1, 2)),
    ("Recurrent models", range(2, 4)),
    ("Embeddings", range(4, 6)),
    ("Attention & transformers", range(6, 9)),
    ("BERT and beyond", range(9, 12)),
    ("Efficiency", range(12, 14)),
]
LABS = "Labs"
#: pages (not notebooks) listed right after index.md, when they exist: the claims ledger
#: and the changelog
PAGES = ["claims.md", "runs.md", "CHANGELOG.md"]


def chapter_number(path: Path) -> int:
    match = re.match(r"(\d+)_", path.name)
    if not match:
        raise ValueError(f"{path}: notebook names start with their number, e.g. 01_backprop.ipynb")
    return int(match.group(1))


def expected_toc(root: Path = ROOT) -> list[tuple[str, list[str]]]:
    """[(part, [notebook paths relative to root])] for every notebook that exists."""
    chapters = sorted((root / "chapters").glob("*.ipynb"))
    labs = sorted((root / "labs" / "solutions").glob("*.ipynb"))
    parts = []
    placed: set[Path] = set()
    for title, numbers in PARTS:
        files = [p for p in chapters if chapter_number(p) in numbers]
        placed.update(files)
        if files:
            parts.append((title, [p.relative_to(root).as_posix() for p in files]))
    unplaced = [p.name for p in chapters if p not in placed]
    if unplaced:
        raise ValueError(f"chapters {unplaced} belong to no part: add their numbers to PARTS")
    if labs:
        parts.append((LABS, [p.relative_to(root).as_posix() for p in labs]))
    return parts


def expected_pages(root: Path = ROOT) -> list[str]:
    """The ``PAGES`` that exist under ``root``."""
    return [page for page in PAGES if (root / page).exists()]


def toc_yaml(parts: list[tuple[str, list[str]]], pages: list[str] = ()) -> str:
    """The ``toc:`` block as it sits under ``project:`` in myst.yml."""
    lines = ["  toc:", "    - file: index.md"]
    lines.extend(f"    - file: {page}" for page in pages)
    for title, files in parts:
        lines.append(f'    - title: "{title}"')
        lines.append("      children:")
        lines.extend(f"        - file: {f}" for f in files)
    return "\n".join(lines) + "\n"


_TOC_BLOCK = re.compile(r"^  toc:\n(?:    .*\n|\s*\n)*", re.M)


def current_toc_block(text: str) -> str:
    match = _TOC_BLOCK.search(text)
    if not match:
        raise ValueError("myst.yml has no '  toc:' block under project:")
    return match.group(0)


def updated(text: str, root: Path = ROOT) -> str:
    return text.replace(current_toc_block(text),
                        toc_yaml(expected_toc(root), expected_pages(root)), 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report a stale toc")
    args = parser.parse_args(argv)
    text = MYST.read_text()
    new = updated(text)
    if args.check:
        if new != text:
            print("myst.yml's toc does not list the notebooks that exist; run `make toc`")
            return 1
        print("myst.yml's toc is up to date")
        return 0
    if new != text:
        MYST.write_text(new)
        print("myst.yml: toc rewritten")
    else:
        print("myst.yml: toc already up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
