"""Goodreads spoiler reviews: read them, split them, download the full data set.

Wan, Misra, Nakashole & McAuley (2019, "Fine-grained spoiler detection from large-scale
review corpora") released 1,378,033 English Goodreads reviews in which the reviewers
themselves had marked which sentences give the plot away. The file is JSON lines, one
review per line::

    {"user_id": "8842281e1d1347389f2ab93d60773d4d", "timestamp": "2017-08-30",
     "review_sentences": [[0, "This is a special book."], [1, "Luna dies."], ...],
     "rating": 5, "has_spoiler": true, "book_id": "18245960",
     "review_id": "dfdbb7b0eb5a7e4c26d59a937e2e5feb"}

``review_sentences`` holds ``[label, sentence]`` pairs, label 1 for a spoiler sentence;
``has_spoiler`` is the review-level label. :func:`load_reviews` reads that schema, plain
or gzipped, and says exactly which line is wrong when one is. The course ships a
*generated* sample in the same schema (:func:`sample_path`, made by
``data/make_goodreads_sample.py``; :func:`heldout_phrasing` marks the half of its test
reviews written in held-out words); :func:`download_reviews` fetches the real file.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import site
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from lmcourse.data.download import DownloadError, download

__all__ = [
    "FIELDS",
    "GOODREADS_SPOILER_SHA256",
    "GOODREADS_SPOILER_URL",
    "HELDOUT_WORDS",
    "DownloadError",
    "MalformedReviewError",
    "SAMPLE_ENV",
    "Review",
    "Reviews",
    "Split",
    "distinct_sentences",
    "download_reviews",
    "heldout_phrasing",
    "load_reviews",
    "review_texts",
    "sample_path",
    "sentences",
    "split_of",
    "split_reviews",
    "summary",
]

#: The fields of one review, in the order the original file writes them.
FIELDS = ("user_id", "timestamp", "review_sentences", "rating", "has_spoiler", "book_id",
          "review_id")

#: Where the UCSD Book Graph project publishes the full spoiler data set (about 1.3M
#: reviews; a gzipped file of several hundred MB).
GOODREADS_SPOILER_URL = ("https://datarepo.eng.ucsd.edu/mcauley_group/gdrive/goodreads/"
                         "goodreads_reviews_spoiler.json.gz")

#: SHA-256 of that file. The publishers do not list one and this course has not pinned
#: one, so it is ``None``: pass the digest you trust as ``sha256=...``, or download once
#: with ``allow_unverified=True``, note the digest it reports, and pin it from then on.
GOODREADS_SPOILER_SHA256: str | None = None

_GZIP_MAGIC = b"\x1f\x8b"


# ---- one review -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Review:
    """One review; ``sentences`` holds ``(label, text)`` pairs, label 1 = spoiler."""

    review_id: str
    user_id: str
    book_id: str
    timestamp: str
    rating: int
    has_spoiler: bool
    sentences: tuple[tuple[int, str], ...]

    @property
    def labels(self) -> list[int]:
        return [label for label, _ in self.sentences]

    @property
    def texts(self) -> list[str]:
        return [text for _, text in self.sentences]

    @property
    def text(self) -> str:
        """The whole review, its sentences joined by spaces."""
        return " ".join(self.texts)

    def to_json(self) -> dict[str, Any]:
        """The review as a dict in the original schema and field order."""
        return {"user_id": self.user_id, "timestamp": self.timestamp,
                "review_sentences": [[label, text] for label, text in self.sentences],
                "rating": self.rating, "has_spoiler": self.has_spoiler,
                "book_id": self.book_id, "review_id": self.review_id}


class Reviews(list):
    """The reviews read from ``path`` (a plain ``list`` of :class:`Review`), plus what was
    left out: ``skipped`` malformed lines, at ``skipped_lines`` (1-based), each for the
    reason in ``problems``."""

    def __init__(self, items: Iterable[Review] = (), path: Path | None = None):
        super().__init__(items)
        self.path = path
        self.skipped_lines: list[int] = []
        self.problems: list[str] = []

    @property
    def skipped(self) -> int:
        return len(self.skipped_lines)

    def __repr__(self) -> str:
        where = f" from {self.path.name}" if self.path else ""
        return f"<Reviews: {len(self)} reviews{where}, {self.skipped} malformed lines skipped>"


class MalformedReviewError(ValueError):
    """A line of a reviews file does not follow the schema; names the file and line."""

    def __init__(self, path: Path | str, line: int, reason: str):
        self.path, self.line, self.reason = Path(path), line, reason
        super().__init__(f"{path}, line {line}: {reason} (pass skip_malformed=True to skip "
                         "such lines and count them)")


def _parse(record: Any) -> Review:
    """Validate one decoded JSON value against the schema; ``ValueError`` says what is wrong."""
    if not isinstance(record, dict):
        raise ValueError(f"expected a JSON object, got {type(record).__name__}")
    missing = [f for f in FIELDS if f not in record]
    if missing:
        raise ValueError(f"missing field(s) {', '.join(map(repr, missing))}")
    for field in ("user_id", "timestamp", "book_id", "review_id"):
        if not isinstance(record[field], str) or not record[field]:
            raise ValueError(f"field {field!r} must be a non-empty string, got "
                             f"{record[field]!r}")
    rating = record["rating"]
    if isinstance(rating, bool) or not isinstance(rating, int) or not 0 <= rating <= 5:
        raise ValueError(f"field 'rating' must be an integer from 0 to 5, got {rating!r}")
    if not isinstance(record["has_spoiler"], bool):
        raise ValueError(f"field 'has_spoiler' must be true or false, got "
                         f"{record['has_spoiler']!r}")
    pairs = record["review_sentences"]
    if not isinstance(pairs, list):
        raise ValueError(f"field 'review_sentences' must be a list of [label, sentence] "
                         f"pairs, got {type(pairs).__name__}")
    sents = []
    for i, pair in enumerate(pairs):
        if not (isinstance(pair, list) and len(pair) == 2):
            raise ValueError(f"review_sentences[{i}] must be a [label, sentence] pair, got "
                             f"{pair!r:.80}")
        label, text = pair
        if isinstance(label, bool) or not isinstance(label, int) or label not in (0, 1):
            raise ValueError(f"review_sentences[{i}]: the label must be 0 or 1, got {label!r}")
        if not isinstance(text, str):
            raise ValueError(f"review_sentences[{i}]: the sentence must be a string, got "
                             f"{type(text).__name__}")
        sents.append((label, text))
    return Review(review_id=record["review_id"], user_id=record["user_id"],
                  book_id=record["book_id"], timestamp=record["timestamp"], rating=rating,
                  has_spoiler=record["has_spoiler"], sentences=tuple(sents))


def _open_binary(path: Path) -> io.BufferedIOBase:
    """Open plain or gzipped bytes; gzip is recognised by its magic bytes, not the name."""
    with open(path, "rb") as f:
        magic = f.read(2)
    return gzip.open(path, "rb") if magic == _GZIP_MAGIC else open(path, "rb")


def load_reviews(path: str | os.PathLike, *, skip_malformed: bool = False,
                 limit: int | None = None) -> Reviews:
    """Read a Goodreads spoiler file (JSON lines, plain or gzipped) into :class:`Reviews`.

    A malformed line (invalid JSON or UTF-8, a missing field, a wrong type, a label that
    is not 0 or 1) raises :class:`MalformedReviewError` naming the file, the line and the
    problem; with ``skip_malformed=True`` it is left out and counted in ``.skipped``.
    Blank lines are ignored. ``limit`` stops after that many reviews (the full file has
    1.4M). A damaged or truncated gzip stream is always an error.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"no reviews file at {path}; the course's generated sample "
                                f"{SAMPLE_NAME} is at lmcourse.data.goodreads.sample_path()")
    out = Reviews(path=path)
    lineno = 0
    with _open_binary(path) as f:
        try:
            for lineno, data in enumerate(f, start=1):
                if limit is not None and len(out) >= limit:
                    break
                if not data.strip():
                    continue
                try:
                    out.append(_parse(_decode(data)))
                except ValueError as err:
                    if not skip_malformed:
                        raise MalformedReviewError(path, lineno, str(err)) from None
                    out.skipped_lines.append(lineno)
                    out.problems.append(f"line {lineno}: {err}")
        except (EOFError, OSError) as err:  # gzip.BadGzipFile is an OSError
            raise MalformedReviewError(path, lineno + 1, f"the gzip stream is damaged or "
                                       f"truncated ({err}); download the file again") from err
    return out


def _decode(data: bytes) -> Any:
    """One line of bytes as a JSON value; ``ValueError`` with a readable reason if not."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"not valid UTF-8 ({err.reason} at byte {err.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"invalid JSON ({err.msg} at column {err.colno})") from None


# ---- views: sentences, whole reviews, statistics -------------------------------------------

def sentences(reviews: Iterable[Review]) -> list[tuple[str, int, str]]:
    """Sentence-level examples ``(text, label, review_id)``, in file order."""
    return [(text, label, r.review_id) for r in reviews for label, text in r.sentences]


def distinct_sentences(rows: Iterable[tuple[str, int, str]]) -> tuple[list[str], list[int]]:
    """Each distinct sentence of ``(text, label, review_id)`` rows once (sorted), labelled
    by the majority of its tags, ties counted as spoilers. Template sentences repeat across
    reviews; scoring each once keeps a frequent sentence from counting many times."""
    tags: dict[str, list[int]] = {}
    for text, label, _ in rows:
        tags.setdefault(text, []).append(int(label))
    texts = sorted(tags)
    return texts, [int(2 * sum(tags[t]) >= len(tags[t])) for t in texts]


def review_texts(reviews: Iterable[Review]) -> list[tuple[str, int, str]]:
    """Review-level examples ``(whole text, has_spoiler as 0/1, review_id)``."""
    return [(r.text, int(r.has_spoiler), r.review_id) for r in reviews]


def summary(reviews: Iterable[Review]) -> dict[str, float]:
    """Counts and spoiler rates: reviews, sentences, books, users, the share of spoiler
    sentences and of reviews with ``has_spoiler``, mean sentences per review, and where
    spoilers sit (mean relative position 0..1 of spoiler and of other sentences)."""
    reviews = list(reviews)
    n_sent = sum(len(r.sentences) for r in reviews)
    n_spoil = sum(sum(r.labels) for r in reviews)
    pos: dict[int, list[float]] = {0: [], 1: []}
    for r in reviews:
        n = len(r.sentences)
        for i, label in enumerate(r.labels):
            pos[label].append(i / (n - 1) if n > 1 else 0.5)
    ratings = Counter(r.rating for r in reviews)
    return {
        "reviews": len(reviews),
        "sentences": n_sent,
        "books": len({r.book_id for r in reviews}),
        "users": len({r.user_id for r in reviews}),
        "spoiler_sentences": n_spoil,
        "spoiler_sentence_rate": n_spoil / max(n_sent, 1),
        "spoiler_reviews": sum(r.has_spoiler for r in reviews),
        "spoiler_review_rate": sum(r.has_spoiler for r in reviews) / max(len(reviews), 1),
        "sentences_per_review": n_sent / max(len(reviews), 1),
        "spoiler_position": sum(pos[1]) / max(len(pos[1]), 1),
        "other_position": sum(pos[0]) / max(len(pos[0]), 1),
        "mean_rating": sum(k * v for k, v in ratings.items() if k) / max(
            sum(v for k, v in ratings.items() if k), 1),
    }


# ---- a deterministic split ------------------------------------------------------------------

class Split(NamedTuple):
    train: list[Review]
    validation: list[Review]
    test: list[Review]


def split_of(key: str, fractions: tuple[float, float, float] = (0.8, 0.1, 0.1),
             salt: str = "lmcourse") -> str:
    """``"train"``, ``"validation"`` or ``"test"`` for an id, from a hash of ``salt + key``.

    The first 8 bytes of SHA-256 give a number ``u`` uniform in [0, 1); the split is the
    interval of ``fractions`` it falls into. The answer depends on the id alone: it is
    the same on every machine, run and Python version, and adding reviews to the file
    never moves an old one to another split.
    """
    if len(fractions) != 3 or min(fractions) < 0 or abs(sum(fractions) - 1) > 1e-9:
        raise ValueError(f"fractions must be three non-negative numbers that sum to 1, "
                         f"got {fractions}")
    digest = hashlib.sha256(f"{salt}:{key}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    if u < fractions[0]:
        return "train"
    return "validation" if u < fractions[0] + fractions[1] else "test"


def split_reviews(reviews: Iterable[Review], by: str = "review_id",
                  fractions: tuple[float, float, float] = (0.8, 0.1, 0.1),
                  salt: str = "lmcourse") -> Split:
    """Train/validation/test by a hash of each review's ``by`` field (see :func:`split_of`).

    ``by="review_id"`` splits reviews; ``by="book_id"`` keeps all reviews of a book in
    one split, a harder test (the model never saw the test books' characters).
    """
    if by not in ("review_id", "book_id", "user_id"):
        raise ValueError(f"by must be 'review_id', 'book_id' or 'user_id', got {by!r}")
    parts: dict[str, list[Review]] = {"train": [], "validation": [], "test": []}
    for r in reviews:
        parts[split_of(getattr(r, by), fractions, salt)].append(r)
    return Split(parts["train"], parts["validation"], parts["test"])


# ---- the generated sample's held-out phrasings ---------------------------------------------

#: The words the generated sample holds out of training. Its held-out phrasings (see
#: :func:`heldout_phrasing`) are written with them, no training or validation review
#: contains any of them, and each is a whole word of MiniLM's (BERT's uncased) WordPiece
#: vocabulary. They are synonyms and rewordings of the training reviews' plot talk
#: ("perished", "slain" for "dies"; "assassin" for "killer"; "double-crosses", "mole" for
#: "betrays"; "finale", "climax" for "the ending") and the ordinary words those rewordings
#: bring along ("secretly", "their"); a few of them happen not to be drawn.
#: ``data/make_goodreads_sample.py`` checks that this is exactly the list its templates imply.
HELDOUT_WORDS = frozenset("""
abandoned admits assassin become before betrayal biological blood changed climax comes
conclusion conquered corpse couple crosses crowned decade decades deceased defeats
defected defects demise desperate discovers disguise double engaged estranged executed
exiled fatally finale finds forever grave guilty identity imprisoned informant joins
killing kisses lied long marries mind mole murders nailed outcome passes peace perished
proposes reigns ruler secretly shady share siege slain slaughtered sobbed sold stabbed
strangled suspect suspected suspects their true wedding wept wounded
""".split())


def heldout_phrasing(review: Review | str) -> bool:
    """Whether a review (or review id) of the generated sample tells its plot in held-out
    phrasings: true for half of the test reviews of the default split, those whose hash
    ``u`` (see :func:`split_of`) is in [0.95, 1), i.e. ``split_of(id, (0.8, 0.15, 0.05))
    == "test"``.

    In those reviews every sentence that states a plot fact (a spoiler, tagged or not) and
    every harmless sentence about plots ("I won't say who dies") is told in a held-out
    phrasing, with :data:`HELDOUT_WORDS` ("I will not say who perished"); opinions,
    openers, reactions and the labels are as in any review. The other test reviews, and
    all training and validation reviews, use the training phrasings. So
    ``[r for r in test if not heldout_phrasing(r)]`` is the in-distribution part of the
    test set and the rest its held-out-phrasing part, where a model that knows only the
    training reviews' words meets unknown ones and a pretrained model does not. The rule
    belongs to the sample (and to ``split_reviews``'s default fractions and salt); on the
    real data it merely picks 5% of the reviews.
    """
    review_id = review if isinstance(review, str) else review.review_id
    return split_of(review_id, (0.8, 0.15, 0.05)) == "test"


# ---- the shipped sample ---------------------------------------------------------------------

SAMPLE_NAME = "goodreads_sample.jsonl.gz"
#: Set this environment variable to the path of a sample (or of the full file) to use it.
SAMPLE_ENV = "LMCOURSE_GOODREADS_SAMPLE"


def _sample_candidates() -> list[Path]:
    """Where the sample may be, in order: the environment variable, the repository's
    ``data/`` folder (a checkout or an editable install), and the copy a wheel installs
    as data files under ``<prefix>/share/lmcourse/`` (``pip install .``, Binder, conda)."""
    found = [Path(os.environ[SAMPLE_ENV]).expanduser()] if os.environ.get(SAMPLE_ENV) else []
    found.append(Path(__file__).resolve().parents[2] / "data" / SAMPLE_NAME)
    prefixes = dict.fromkeys([sys.prefix, sys.base_prefix, site.getuserbase()])
    found += [Path(prefix) / "share" / "lmcourse" / SAMPLE_NAME for prefix in prefixes]
    return found


def sample_path() -> Path:
    """The generated sample the course ships (``data/goodreads_sample.jsonl.gz``), found
    however the course is installed; a clear error lists where it looked."""
    candidates = _sample_candidates()
    if os.environ.get(SAMPLE_ENV) and not candidates[0].is_file():
        raise FileNotFoundError(f"{SAMPLE_ENV}={os.environ[SAMPLE_ENV]} names no file; point "
                                "it at a .jsonl or .jsonl.gz file in the Goodreads schema, or "
                                "unset it to use the sample the course ships")
    for path in candidates:
        if path.is_file():
            return path
    looked = "\n  ".join(str(p) for p in candidates)
    raise FileNotFoundError(
        f"the Goodreads sample {SAMPLE_NAME} was not found; looked in:\n  {looked}\n"
        "Fix: run from a checkout of the course (it is in data/), regenerate it with "
        "`python data/make_goodreads_sample.py`, reinstall the course (`pip install .` "
        f"ships it), or set {SAMPLE_ENV} to its path.")


# ---- downloading the full data set ----------------------------------------------------------

def download_reviews(dest: str | os.PathLike, url: str = GOODREADS_SPOILER_URL,
                     sha256: str | None = GOODREADS_SPOILER_SHA256, *,
                     allow_unverified: bool = False, overwrite: bool = False,
                     timeout: float = 60.0, progress: bool = True,
                     chunk_size: int = 1 << 20) -> Path:
    """Download the full reviews file to ``dest`` with :func:`lmcourse.data.download.download`:
    streamed with a progress bar, SHA-256 verified, renamed into place only when complete
    (nothing is left behind on failure). Pass the digest you trust as ``sha256=`` or opt
    out with ``allow_unverified=True``; offline, the error points at the shipped sample."""
    return download(url, dest, sha256, allow_unverified=allow_unverified, overwrite=overwrite,
                    timeout=timeout, progress=progress, chunk_size=chunk_size,
                    offline_hint="The course works offline with the generated sample in the "
                                 "same schema: "
                                 "`load_reviews(lmcourse.data.goodreads.sample_path())`.")
