"""Numbers in a chapter's prose that no cell of the chapter prints.

A decimal typed into a markdown cell is a claim about a run; if no cell's source or output
of the same notebook shows it, it cannot be checked and drifts when the run changes. This
lists them (``python -m tools.prose_numbers [notebook ...]``), per notebook, with the line
they sit on. Not counted: code (fenced blocks and inline backticks: a worked answer's code
is checked by running it), maths (``$...$``: a hand derivation, checkable by reading), and
lines that cite where a figure comes from (an author "et al.", a year, a paper, a table,
an arXiv number).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NUMBER = re.compile(r"(?<![\w.])\d+\.\d+(?!\w|\.\d)")
CITES = re.compile(r"et al\.|\(\d{4}\)|\b(?:19|20)\d\d\b|\bpaper|\breports?\b|published|"
                   r"Table \d|model card|arXiv", re.IGNORECASE)
FENCE = re.compile(r"```.*?```", re.DOTALL)
INLINE = re.compile(r"`[^`]*`|\$\$.*?\$\$|\$[^$]*\$", re.DOTALL)


def _printed(nb: dict) -> str:
    """Everything the notebook's code cells say: their source and every text output."""
    parts = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        parts.append("".join(cell["source"]))
        for out in cell.get("outputs", []):
            parts.append("".join(out.get("text", "")))
            for kind, value in out.get("data", {}).items():
                if kind.startswith("text/") or kind.endswith("json"):
                    parts.append(value if isinstance(value, str) else
                                 "".join(value) if isinstance(value, list) else json.dumps(value))
    return "\n".join(parts)


def unprinted(path: Path) -> list[tuple[str, str]]:
    """``(number, line)`` for each decimal in ``path``'s prose that no cell prints."""
    nb = json.loads(path.read_text())
    printed, found = _printed(nb), []
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        text = INLINE.sub(" ", FENCE.sub(" ", "".join(cell["source"])))
        for line in text.splitlines():
            if CITES.search(line):
                continue
            found += [(n, line.strip()) for n in NUMBER.findall(line) if n not in printed]
    return found


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((ROOT / "chapters").glob("*.ipynb"))
    total = 0
    for path in paths:
        rows = unprinted(path)
        total += len(rows)
        for number, line in rows:
            print(f"{path.name}: {number}  | {line[:110]}")
    print(f"{total} number(s) in prose that no cell prints")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
