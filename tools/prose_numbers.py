"""Numbers in a chapter's prose that no cell of the chapter prints.

A decimal typed into a markdown cell is a claim about a run; if no cell's source or output
of the same notebook shows it, it cannot be checked and drifts when the run changes. This
lists them (``python -m tools.prose_numbers [notebook ...]``), per notebook, with the
sentence they sit in. Not counted: code (fenced blocks and inline backticks), maths
(``$...$``: a hand derivation, checkable by reading), and sentences that cite where their
figures come from (an author "et al.", a year, a paper, a table, an arXiv number), and
version numbers (PyTorch 2.5, SQuAD 2.0). Numbers inside a folded worked answer
(``<details>``) are listed apart: what checks them is the answer's own code, whose printout
``tests/test_worked_answers.py`` can compare them with.
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
VERSIONED = re.compile(r"(?:PyTorch|SQuAD|Python|CUDA|transformers|torch)\s*$")
DETAILS = re.compile(r"<details>.*?</details>", re.DOTALL)
SENTENCE = re.compile(r"(?<=[.!?])(?<!\bal\.)(?<!\be\.g\.)(?<!\bi\.e\.)\s+(?=[A-Z*(|$-])")
INLINE = re.compile(r"`[^`]*`|\$\$.*?\$\$|\$[^$]*\$", re.DOTALL)


def printed_text(nb: dict) -> str:
    """Everything the notebook's code cells say: their source and every text output."""
    parts = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        parts.append("".join(cell["source"]))
        for out in cell.get("outputs", []):
            parts.append("".join(out.get("text", "")))
            for kind, value in out.get("data", {}).items():
                if kind.endswith("json"):
                    parts.append(value if isinstance(value, str) else json.dumps(value))
                elif kind.startswith("text/"):
                    parts.append(value if isinstance(value, str) else "".join(value))
    return "\n".join(parts)


def quoted_numbers(markdown: str) -> list[tuple[str, str]]:
    """``(number, sentence)`` for each decimal a piece of markdown quotes as a run's figure:
    outside code and maths, in a sentence that cites no source, not a version number."""
    text = INLINE.sub(" ", FENCE.sub(" ", markdown))
    found = []
    for paragraph in re.split(r"\n\s*\n", text):
        for sentence in SENTENCE.split(" ".join(paragraph.split())):
            if not CITES.search(sentence):
                found += [(m.group(), sentence) for m in NUMBER.finditer(sentence)
                          if not VERSIONED.search(sentence[:m.start()])]
    return found


def unprinted(path: Path, answers: bool = False) -> list[tuple[str, str]]:
    """``(number, line)`` for each decimal in ``path``'s prose that no cell prints; with
    ``answers``, in its worked answers instead."""
    nb = json.loads(path.read_text())
    printed, found = printed_text(nb), []
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        source = "".join(cell["source"])
        source = "\n".join(DETAILS.findall(source)) if answers else DETAILS.sub(" ", source)
        found += [(n, s) for n, s in quoted_numbers(source) if n not in printed]
    return found


def main(argv: list[str]) -> int:
    answers = "--answers" in argv
    paths = [Path(a) for a in argv if a != "--answers"] or sorted(
        (ROOT / "chapters").glob("*.ipynb"))
    total = 0
    for path in paths:
        rows = unprinted(path, answers)
        total += len(rows)
        for number, line in rows:
            print(f"{path.name}: {number}  | {line[:110]}")
    print(f"{total} number(s) in {'worked answers' if answers else 'prose'} that no cell "
          "prints")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
