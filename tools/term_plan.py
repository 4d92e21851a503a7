"""The instructors' term plan, generated from what was measured: ``python -m tools.term_plan``.

    python -m tools.term_plan           # write instructor/term_plan.md
    python -m tools.term_plan --check   # exit 1 when it is stale (tests/test_term_plan.py)

Nothing on the page is typed. For every chapter and lab it reads

- the **order**: the chapters in syllabus order (``../shared/DESIGN.md``'s table, which the
  file names follow), each lab right after the chapter its opening cell names;
- the **prerequisites**: the earlier chapters and labs its prose names ("as chapter 03
  showed", "lab 06's teacher"), less those implied by another one it names (a transitive
  reduction); a forward reference ("chapter 10 shows") is a teaser, not a prerequisite;
- the **reading time**: the words of its prose at :data:`READING_WPM`;
- the **running time**: its run card's measured CPU time (``benchmarks/runcards.json``,
  written by the test run), normalised to the reference machine of
  ``benchmarks/calibration.json`` as the card itself is (:func:`lmcourse.course.speed.normalised`);

and splits the order into 10- and 14-week schedules of even student time (:func:`schedule`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

from lmcourse.course.runcard import CARD_TAG, CARDS, load_cards
from lmcourse.course.speed import CALIBRATION_JSON, normalised, reference_calibration
from tools.nbtools import ROOT, notebooks

PLAN = ROOT / "instructor" / "term_plan.md"
#: words a minute: Carver's (1992) "learning" rate, at which college readers study a text to
#: understand and remember it (their ordinary reading runs at about 300, Brysbaert's 2019
#: meta-analysis finds 238 for non-fiction); a chapter is studied, with maths, not skimmed
READING_WPM = 200
WEEKS = (10, 14)
#: a reference in prose: "chapter 03", "chapters 06 and 6b", "ch. 07", "labs 03-06"
_ID = r"\d{1,2}[a-c]?"
_REF = re.compile(
    rf"\b(chapters?|ch\.|labs?)\s+({_ID}(?:(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+|"
    rf"\s*[/–-]\s*){_ID})*)\b", re.I)
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
_CODE = re.compile(r"```.*?```|`[^`\n]+`", re.S)
_FOLDED = re.compile(r"<details>.*?</details>", re.S)
_TAG = re.compile(r"<[^>]+>")
_WORD = re.compile(r"[^\W_][\w'’.,-]*")
_CHECKS = re.compile(r"^from lmcourse\.checks import (\w+)", re.M)


@dataclass(frozen=True)
class Unit:
    """One chapter or lab: what the plan needs to know about it."""

    key: str            # "02", "4b", "lab 03": how the course's prose names it
    path: str           # relative to the repository root
    title: str
    words: int          # prose a student reads: open markdown, no maths, code or folds
    run_s: float | None  # the run card's CPU time, normalised; None when not measured
    refs: tuple[str, ...]  # keys its prose names, first mention first
    opening: tuple[str, ...]  # keys its first cell names (where a lab belongs)
    checks: str | None  # a lab's lmcourse.checks module

    @property
    def is_lab(self) -> bool:
        return self.key.startswith("lab ")

    @property
    def stem(self) -> str:
        return Path(self.path).stem

    @property
    def reading_min(self) -> float:
        return self.words / READING_WPM

    @property
    def student_min(self) -> float:
        return self.reading_min + (self.run_s or 0.0) / 60


def chapter_keys(paths: list[Path]) -> dict[Path, str]:
    """How the prose names each chapter: the first of a number is ``"04"``, the next ones
    ``"4b"``, ``"4c"`` (file-name order, as the site's syllabus numbers them)."""
    keys, seen = {}, {}
    for path in sorted(paths):
        number = int(re.match(r"\d+", path.name).group(0))
        rank = seen.get(number, 0)
        seen[number] = rank + 1
        keys[path] = f"{number:02d}" if rank == 0 else f"{number}{'abcdefgh'[rank]}"
    return keys


def _normal_id(raw: str) -> str:
    digits, letter = re.fullmatch(r"(\d+)([a-c]?)", raw).groups()
    return f"{int(digits)}{letter}" if letter else f"{int(digits):02d}"


def references(text: str, known: list[str]) -> list[str]:
    """The keys of ``known`` that ``text`` names, first mention first. A range ("chapters
    09-12") names every key of its kind from one end to the other, in ``known``'s order."""
    found: list[str] = []
    for match in _REF.finditer(text):
        lab = match.group(1).lower().startswith("lab")
        kind = [k for k in known if k.startswith("lab ") == lab]
        prefix = "lab " if lab else ""
        parts = re.findall(rf"{_ID}|[–-]", match.group(2))
        keys, dash = [], False
        for part in parts:
            if part in "–-":
                dash = True
                continue
            key = prefix + _normal_id(part)
            if dash and keys and keys[-1] in kind and key in kind:
                first, last = kind.index(keys[-1]), kind.index(key)
                keys.extend(kind[first + 1:last + 1])
            else:
                keys.append(key)
            dash = False
        found.extend(k for k in keys if k in known and k not in found)
    return found


def prose(nb: nbformat.NotebookNode) -> str:
    """Every markdown cell but the run card, as one text."""
    return "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown"
                       and CARD_TAG not in c.metadata.get("tags", []))


def reading_words(text: str) -> int:
    """Words a student reads in order: folded blocks (hints, worked answers, "How we
    know"), maths, code spans and HTML tags are left out."""
    text = _TAG.sub(" ", _CODE.sub(" ", _MATH.sub(" ", _FOLDED.sub(" ", text))))
    return len(_WORD.findall(text))


def run_seconds(record: dict | None, reference: float | None) -> float | None:
    """A run card's CPU time normalised to the reference machine, as the card shows it."""
    if not record or "cpu" not in record:
        return None
    cpu = record["cpu"]
    return normalised(cpu["wall_s"], cpu.get("calibration_s") or 0.0, reference)


def load_units(root: Path = ROOT, cards: dict | None = None,
               reference: float | None = None) -> list[Unit]:
    """Every chapter and lab, in file order, with what the plan reads from it (``cards``:
    ``benchmarks/runcards.json``'s; ``reference``: the reference machine's calibration)."""
    reference = reference_calibration() if reference is None else reference
    paths = notebooks(root)
    chapters = chapter_keys([p for p in paths if p.parent.name == "chapters"])
    keys = {p: chapters.get(p) or f"lab {p.name[:2]}" for p in paths}
    known = list(keys.values())
    cards = load_cards(CARDS) if cards is None else cards
    units = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        rel = path.relative_to(root).as_posix()
        first = nb.cells[0].source if nb.cells else ""
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        checks = _CHECKS.search(code)
        units.append(Unit(
            key=keys[path], path=rel, title=first.strip().splitlines()[0].lstrip("# ").strip(),
            words=reading_words(prose(nb)), run_s=run_seconds(cards.get(rel), reference),
            refs=tuple(k for k in references(prose(nb), known) if k != keys[path]),
            opening=tuple(k for k in references(first, known) if k != keys[path]),
            checks=checks and checks.group(1)))
    return units


def plan_order(units: list[Unit]) -> list[Unit]:
    """Chapters in syllabus order, each lab right after the last chapter its first cell
    names (else the last chapter it names anywhere), labs of one chapter in number order."""
    chapters = [u for u in units if not u.is_lab]
    order = [c.key for c in chapters]
    after: dict[str, list[Unit]] = {c.key: [] for c in chapters}
    for lab in (u for u in units if u.is_lab):
        named = [k for k in lab.opening if k in after] or [k for k in lab.refs if k in after]
        if not named:
            raise ValueError(f"{lab.path}: its prose names no chapter, so the plan cannot "
                             "place it; say in its first cell which chapter it practises")
        after[max(named, key=order.index)].append(lab)
    return [u for c in chapters for u in (c, *after[c.key])]


def prerequisites(order: list[Unit]) -> dict[str, list[str]]:
    """Each unit's earlier units named in its prose, less those another of them needs
    already (transitively), in plan order."""
    position = {u.key: i for i, u in enumerate(order)}
    needs: dict[str, set[str]] = {}  # everything a unit needs, transitively
    direct: dict[str, list[str]] = {}
    for i, unit in enumerate(order):
        earlier = sorted({k for k in unit.refs if position[k] < i}, key=position.get)
        implied = set().union(*(needs[k] for k in earlier)) if earlier else set()
        direct[unit.key] = [k for k in earlier if k not in implied]
        needs[unit.key] = set(earlier) | implied
    return direct


def schedule(loads: list[float], weeks: int) -> list[int]:
    """Split ``loads`` (in order) into ``weeks`` consecutive, non-empty weeks with the least
    sum of squared week loads (the most even split); returns each week's number of items."""
    n = len(loads)
    if not 1 <= weeks <= n:
        raise ValueError(f"cannot split {n} items into {weeks} non-empty weeks")
    prefix = [0.0]
    for load in loads:
        prefix.append(prefix[-1] + load)
    inf = float("inf")
    best = [[inf] * (n + 1) for _ in range(weeks + 1)]
    cut = [[0] * (n + 1) for _ in range(weeks + 1)]
    best[0][0] = 0.0
    for w in range(1, weeks + 1):
        for end in range(w, n - (weeks - w) + 1):
            for start in range(w - 1, end):
                cost = best[w - 1][start] + (prefix[end] - prefix[start]) ** 2
                if cost < best[w][end]:
                    best[w][end], cut[w][end] = cost, start
    sizes, end = [], n
    for w in range(weeks, 0, -1):
        sizes.append(end - cut[w][end])
        end = cut[w][end]
    return sizes[::-1]


def render(units: list[Unit] | None = None, reference: float | None = None) -> str:
    """The page's markdown."""
    from tools.term_plan_page import page

    units = load_units(reference=reference) if units is None else units
    order = plan_order(units)
    weeks = {k: schedule([u.student_min for u in order], k) for k in WEEKS}
    machine = json.loads(CALIBRATION_JSON.read_text()) if CALIBRATION_JSON.exists() else {}
    return page(order, prerequisites(order), weeks, machine)


def stale(path: Path | None = None, text: str | None = None) -> bool:
    """True when ``path`` (the committed page by default) is not what :func:`render` writes
    now: a run card, a notebook or the tool changed, or the page was edited by hand."""
    path = PLAN if path is None else path
    text = render() if text is None else text
    return not path.exists() or path.read_text(encoding="utf-8") != text


def write(path: Path | None = None, text: str | None = None) -> bool:
    """Write the page atomically (an interrupted write keeps the old one); True if it
    changed."""
    path = PLAN if path is None else path
    text = render() if text is None else text
    if not stale(path, text):
        return False
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report a stale page")
    args = parser.parse_args(argv)
    rel = PLAN.relative_to(ROOT)
    if args.check:
        if stale():
            print(f"{rel} is stale (run cards or notebooks changed, or it was edited by "
                  "hand): run `python -m tools.term_plan`")
            return 1
        print(f"{rel} is up to date")
        return 0
    print(f"{'wrote' if write() else 'unchanged:'} {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
