"""Worked answers, and the spread of every figure they quote from a run.

A chapter's worked answer (``<details><summary>Worked answer to exercise N</summary>``)
holds code and prose; the prose quotes figures the code prints. Many of those figures come
from training a small model for seconds, and their last digits move with the processor, the
thread count and the seed. So each such answer is measured here over seeds and threads and
its printed figures recorded in ``tests/worked_answer_spreads.json``; the test
(``tests/test_worked_answers.py``) checks each quoted figure, and what the answer prints on
the machine that runs the test, against that measured interval
(:class:`lmcourse.course.spread.Interval`), never against a guessed tolerance.

    python -m tools.worked_answers --list            # answers that quote a run's figures
    python -m tools.worked_answers                    # measure the stale or missing ones
    python -m tools.worked_answers 11_deberta-ex3     # measure these (also --all)

A seed is shifted by adding the shift to every literal seed the code sets
(``manual_seed(x)``, ``seed_everything(x)``, ``default_rng(x)``, ``seed=x``, except on a
line marked ``# fixed seed``): seeds 0, 1, 2 of every draw the answer makes, on one torch
thread (as ``make test`` runs them),
and seed 0 on two threads as well.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tools.prose_numbers import printed_text, quoted_numbers

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"
SPREADS = ROOT / "tests" / "worked_answer_spreads.json"
DETAILS = re.compile(r"<details><summary>Worked answer to exercise (\d+)</summary>(.*?)</details>",
                     re.S)
CODE = re.compile(r"```python\n(.*?)```", re.S)
DECIMAL = re.compile(r"\d+\.\d+")
SEED_CALL = re.compile(r"\b(manual_seed|seed_everything|default_rng|random\.seed)\(([^()\n]+)\)")
SEED_KEYWORD = re.compile(r"\bseed=(\d+)\b")
FIXED = "# fixed seed"
#: (seed shift, torch threads) of every repeat; the first is the run the test compares with
REPEATS = ((0, 1), (1, 1), (2, 1), (0, 2))


def worked_answer_blocks(path: Path) -> list[tuple[str, str]]:
    """``(exercise number, markdown body)`` of each worked answer in a chapter."""
    nb = json.loads(Path(path).read_text())
    return [found for cell in nb["cells"] if cell["cell_type"] == "markdown"
            for found in DETAILS.findall("".join(cell["source"]))]


def answers() -> dict[str, tuple[Path, str, str]]:
    """``{"<chapter>-ex<N>": (path, N, body)}`` for every worked answer that has code."""
    return {f"{p.stem}-ex{n}": (p, n, body) for p in sorted(CHAPTERS.glob("*.ipynb"))
            for n, body in worked_answer_blocks(p) if CODE.search(body)}


def code_of(body: str) -> str:
    return "\n".join(CODE.findall(body))


def code_digest(body: str) -> str:
    return hashlib.sha256(code_of(body).encode()).hexdigest()[:16]


@functools.cache
def chapter_printed(path: Path) -> str:
    """What a chapter's cells show (read once per chapter, not once per answer)."""
    return printed_text(json.loads(Path(path).read_text()))


def run_quoted(path: Path, body: str) -> list[tuple[str, str]]:
    """``(number, sentence)`` the answer's prose quotes that neither its code nor a cell of
    its chapter shows: figures only a run of the answer can print."""
    fixed = code_of(body) + chapter_printed(path)
    return [(n, s) for n, s in quoted_numbers(body) if n not in fixed]


def seed_shifted(code: str, shift: int) -> str:
    """The code with ``shift`` added to every literal seed it sets (0 leaves it as it is),
    except on lines marked ``# fixed seed`` (a seed that must match another function's, such
    as a widget's, for the answer to rebuild its number)."""
    if not shift:
        return code
    lines = []
    for line in code.split("\n"):
        if FIXED not in line:
            line = SEED_CALL.sub(lambda m: f"{m[1]}(({m[2]}) + {shift})", line)
            line = SEED_KEYWORD.sub(lambda m: f"seed={int(m[1]) + shift}", line)
        lines.append(line)
    return "\n".join(lines)


def run_answer(label: str, body: str, shift: int = 0) -> str:
    """Run every code block of one worked answer in a fresh namespace; its stdout."""
    stdout, namespace = io.StringIO(), {}
    with contextlib.redirect_stdout(stdout):
        for code in CODE.findall(body):
            exec(compile(seed_shifted(code, shift), f"{label} worked answer", "exec"),
                 namespace)
    return stdout.getvalue()


def decimals(printed: str) -> list[str]:
    return DECIMAL.findall(printed)


# ---- measuring ----------------------------------------------------------------------------

def _repeat(key: str, shift: int, threads: int) -> dict:
    """One repeat in a fresh interpreter (the thread count is fixed at start-up)."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
           "TQDM_DISABLE": "1", "TOKENIZERS_PARALLELISM": "false"}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "tools.worked_answers", "--repeat", key,
                           str(shift)], cwd=ROOT, env=env, capture_output=True, text=True)
    record = {"shift": shift, "threads": threads,
              "seconds": round(time.perf_counter() - start, 1)}
    if done.returncode:
        record["error"] = " | ".join(done.stderr.strip().splitlines()[-3:]) or "(no message)"
    else:
        record["printed"] = json.loads(done.stdout.strip().splitlines()[-1])
    return record


def measure(key: str) -> dict:
    """Every repeat of one answer: the one-thread ones two at a time, then the others."""
    path, _, body = answers()[key]
    one = [r for r in REPEATS if r[1] == 1]
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(lambda r: _repeat(key, *r), one))
    runs += [_repeat(key, *r) for r in REPEATS if r[1] != 1]
    import torch

    from lmcourse.course.speed import cpu_model
    return {"code": code_digest(body), "cpu": cpu_model(), "torch": torch.__version__,
            "date": datetime.date.today().isoformat(), "runs": runs}


def load_spreads(path: Path = SPREADS) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def save_spreads(spreads: dict, path: Path = SPREADS) -> None:
    """Atomic: a measurement interrupted half way keeps the file as it was."""
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(dict(sorted(spreads.items())), indent=1) + "\n")
    tmp.replace(path)


def needs_spread() -> list[str]:
    """Answers whose prose quotes figures only a run prints."""
    return [key for key, (path, _, body) in answers().items() if run_quoted(path, body)]


def stale(spreads: dict) -> list[str]:
    """Answers that need measuring: none recorded, or their code changed since."""
    found = answers()
    return [k for k in needs_spread()
            if k not in spreads or spreads[k]["code"] != code_digest(found[k][2])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("keys", nargs="*", help="answers to measure, e.g. 11_deberta-ex3")
    parser.add_argument("--all", action="store_true", help="measure every answer that needs it")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--repeat", nargs=2, metavar=("KEY", "SHIFT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.repeat:
        key, shift = args.repeat
        _, _, body = answers()[key]
        print(json.dumps(decimals(run_answer(key, body, int(shift)))))
        return 0
    spreads = load_spreads()
    if args.list:
        todo = set(stale(spreads))
        for key in needs_spread():
            print(f"{key:<34} {'to measure' if key in todo else 'measured'}")
        return 0
    keys = args.keys or (needs_spread() if args.all else stale(spreads))
    unknown = sorted(set(keys) - set(answers()))
    if unknown:
        parser.error(f"no worked answer named {unknown}; see --list")
    for i, key in enumerate(keys, 1):
        start = time.perf_counter()
        spreads[key] = measure(key)
        save_spreads(spreads)
        errors = [r for r in spreads[key]["runs"] if "error" in r]
        print(f"[{i}/{len(keys)}] {key}: {time.perf_counter() - start:.0f} s"
              + "".join(f"\n    seed +{r['shift']}, {r['threads']} thread(s) FAILED: "
                        f"{r['error']}" for r in errors), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
