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
``data/make_goodreads_sample.py``); :func:`download_reviews` fetches the real file.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

__all__ = [
    "FIELDS",
    "GOODREADS_SPOILER_SHA256",
    "GOODREADS_SPOILER_URL",
    "DownloadError",
    "MalformedReviewError",
    "Review",
    "Reviews",
    "Split",
    "download_reviews",
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
                                f"is at {_SAMPLE}")
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


# ---- the shipped sample ---------------------------------------------------------------------

_SAMPLE = Path(__file__).resolve().parents[2] / "data" / "goodreads_sample.jsonl.gz"


def sample_path() -> Path:
    """The generated sample the course ships (``data/goodreads_sample.jsonl.gz``)."""
    if not _SAMPLE.is_file():
        raise FileNotFoundError(
            f"the Goodreads sample is missing at {_SAMPLE}; regenerate it with "
            "`python data/make_goodreads_sample.py` from the repository root")
    return _SAMPLE


# ---- downloading the full data set ----------------------------------------------------------

class DownloadError(OSError):
    """A download failed (offline, HTTP error, cut short, checksum mismatch); no file was
    written."""


def _sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def _offline_message(url: str, reason: object) -> str:
    host = urllib.parse.urlsplit(url).netloc or url
    return (f"could not reach {host} ({reason}): this machine seems to be offline, or the "
            "server is down. Nothing was written. The course works offline with the "
            "generated sample in the same schema: "
            "`load_reviews(lmcourse.data.goodreads.sample_path())`.")


def download_reviews(dest: str | os.PathLike, url: str = GOODREADS_SPOILER_URL,
                     sha256: str | None = GOODREADS_SPOILER_SHA256, *,
                     allow_unverified: bool = False, overwrite: bool = False,
                     timeout: float = 60.0, progress: bool = True,
                     chunk_size: int = 1 << 20) -> Path:
    """Download the reviews file to ``dest`` (a file, or a directory: one that exists or
    a path ending in ``/``, created if need be).

    The body is streamed in ``chunk_size`` pieces into a temporary file in the same
    directory, with a ``tqdm`` progress bar, hashed on the way, flushed to disk and only
    then renamed onto ``dest`` (``os.replace`` is atomic): whatever goes wrong (offline,
    an HTTP error, a transfer cut short, a SHA-256 mismatch, Ctrl-C) raises
    :class:`DownloadError` or the interrupt and leaves no file behind.

    The SHA-256 must be given (``sha256=``) unless you opt out explicitly with
    ``allow_unverified=True``, in which case the digest is reported so you can pin it.
    An existing ``dest`` is kept (and verified if ``sha256`` is known) unless
    ``overwrite=True``. Returns the path of the file.
    """
    as_dir = str(dest).endswith(("/", os.sep))
    dest = Path(dest).expanduser()
    if as_dir or dest.is_dir():
        dest = dest / (Path(urllib.parse.urlsplit(url).path).name or "reviews.json.gz")
    if sha256 is None and not allow_unverified:
        raise ValueError(
            "no SHA-256 to verify the download against: pass sha256='<64 hex digits>' "
            "(the digest you trust), or allow_unverified=True to download without checking "
            "(the digest is then reported so you can pin it next time)")
    if sha256 is not None:
        sha256 = sha256.strip().lower()
        if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
            raise ValueError(f"sha256 must be 64 hexadecimal digits, got {sha256!r}")
    if dest.exists() and not overwrite:
        if sha256 is not None and _sha256_file(dest) != sha256:
            raise DownloadError(f"{dest} exists but its SHA-256 is not {sha256}; delete it or "
                                "pass overwrite=True to download it again")
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)

    from tqdm.auto import tqdm

    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                response = urllib.request.urlopen(url, timeout=timeout)  # noqa: S310
            except urllib.error.HTTPError as err:
                raise DownloadError(f"the server answered {err.code} {err.reason} for {url}; "
                                    "nothing was written") from err
            except urllib.error.URLError as err:
                raise DownloadError(_offline_message(url, err.reason)) from err
            except (TimeoutError, ConnectionError) as err:
                raise DownloadError(_offline_message(url, err)) from err
            digest, received = hashlib.sha256(), 0
            expected = _content_length(response)
            with response, tqdm(total=expected, unit="B", unit_scale=True, unit_divisor=1024,
                                desc=dest.name, disable=not progress) as bar:
                try:
                    for block in iter(lambda: response.read(chunk_size), b""):
                        out.write(block)
                        digest.update(block)
                        received += len(block)
                        bar.update(len(block))
                except (OSError, ValueError) as err:  # IncompleteRead, reset, timeout
                    raise DownloadError(f"the transfer from {url} broke off after {received:,} "
                                        f"bytes ({err!r}); nothing was written") from err
            if expected is not None and received != expected:
                raise DownloadError(f"the transfer from {url} broke off: {received:,} of "
                                    f"{expected:,} bytes arrived; nothing was written")
            out.flush()
            os.fsync(out.fileno())
        got = digest.hexdigest()
        if sha256 is not None and got != sha256:
            raise DownloadError(f"SHA-256 mismatch for {url}: expected {sha256}, got {got}; "
                                "the file is damaged or has changed; nothing was written")
        os.replace(tmp, dest)
        _fsync_dir(dest.parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    if sha256 is None:
        print(f"downloaded {dest} ({received:,} bytes) WITHOUT a checksum to verify; its "
              f"SHA-256 is {got}: pass sha256='{got}' from now on")
    return dest


def _content_length(response: Any) -> int | None:
    value = response.headers.get("Content-Length")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable (POSIX); a no-op where directories cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
