"""Generate ``data/goodreads_sample.jsonl.gz``: GENERATED Goodreads-style spoiler reviews.

The course cannot ship the real Goodreads spoiler data set (Wan et al. 2019; 1,378,033
reviews, 1.3 GB unpacked) and must run offline, so it ships this stand-in: reviews
written by a seeded program from templates, in exactly the real file's schema::

    {"user_id": <32 hex>, "timestamp": "YYYY-MM-DD",
     "review_sentences": [[label, sentence], ...], "rating": 0..5,
     "has_spoiler": true|false, "book_id": <digits>, "review_id": <32 hex>}

What it imitates (so that the task is learnable but not trivial):

* rates: spoiler reviews and spoiler sentences are rare. The real data has 89,627 of
  1,378,033 reviews with a spoiler (6.5%) and about 3.2% spoiler sentences
  (569,724 of 17,672,655); the targets here are the same;
* spoilers sit in a contiguous span in the latter part of a review;
* spoiler language is book-specific: every book has its own plot facts (who dies, who
  betrays whom, who the killer is, whom the hero ends up with), told in many phrasings,
  some without any obvious spoiler word ("So Wren was working for Corvin all along");
* the same words (dies, killed, ending, twist, turns out, finally) appear in harmless
  sentences ("I won't say who dies", "the author killed it", "the ending felt rushed"),
  and character names appear everywhere, so only the combination is a cue;
* noise: reaction sentences ("I was not ready for that.") are tagged inside spoiler
  spans and untagged elsewhere, and a few reviewers leave a spoiler untagged;
* spoiler rates vary across books and users; books and users have long-tailed
  popularity; ratings, dates and ids have the real formats.

What it adds, so that the test split also measures transfer: half of the test reviews
(``lmcourse.data.goodreads.heldout_phrasing``) tell their plot facts, and their harmless
talk about plots, in held-out phrasings: synonyms and rewordings ("Wren perished at the
end", "Corvin double-crosses Mira", "The assassin is Faye", "The climax felt a little
rushed") whose new words (``HELDOUT_WORDS``) no training or validation review contains,
but a pretrained model's vocabulary does. The other test reviews are in-distribution.

Deterministic: the only sources of randomness are ``random.Random(seed).random()`` and,
for the held-out phrasings alone, ``random.Random(seed + 1).random()``, whose sequences
Python guarantees across versions, and the gzip header carries no time stamp or file
name (``mtime=0``), so the bytes are reproducible. The held-out phrasings take nothing
from the first stream: every other review is exactly what it would be without them. Run
from the repository root, with the course installed (``pip install -e .``; the generator
imports ``lmcourse`` for the split and the word list)::

    python data/make_goodreads_sample.py            # writes data/goodreads_sample.jsonl.gz
    python data/make_goodreads_sample.py --out /tmp/x.jsonl.gz
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import hashlib
import io
import json
import math
import random
import re
from pathlib import Path
from typing import NamedTuple

from lmcourse.data import tokenize
from lmcourse.data.goodreads import HELDOUT_WORDS, heldout_phrasing
from lmcourse.data.review_templates import (  # the world's names and templates
    ARTIFACTS,
    CLOSERS,
    DECOYS,
    FACT_WEIGHTS,
    FACTS,
    FEMALE,
    GENERIC_SPOILERS,
    GENRES,
    MALE,
    MIXED,
    NEGATIVE,
    OPENERS,
    PLACES,
    POSITIVE,
    PREFIXES,
    PREMISE,
    PROPER,
    REACTIONS,
    RELATIONS,
    ROLES,
    SURNAMES,
    TITLE_ADJ,
    TITLE_NOUN,
    WARNINGS,
)

SEED = 2019
N_BOOKS, N_USERS, N_REVIEWS = 400, 1000, 5000
TARGET_REVIEW_RATE = 0.065  # share of reviews with a spoiler in the real data
OUT = Path(__file__).resolve().parent / "goodreads_sample.jsonl.gz"


class Dice:
    """Every random choice, derived from ``random.Random.random()`` alone (stable across
    Python versions, unlike ``choice``/``shuffle``/``gauss``, which may change)."""

    def __init__(self, seed: int):
        self._rng = random.Random(seed)

    def u(self) -> float:
        return self._rng.random()

    def below(self, n: int) -> int:
        return min(int(self.u() * n), n - 1)

    def pick(self, seq):
        return seq[self.below(len(seq))]

    def chance(self, p: float) -> bool:
        return self.u() < p

    def weighted(self, weights: list[float]) -> int:
        x, acc = self.u() * sum(weights), 0.0
        for i, w in enumerate(weights):
            acc += w
            if x < acc:
                return i
        return len(weights) - 1

    def geometric(self, mean: float) -> int:
        """0, 1, 2, ... with the given mean (an exponential, floored)."""
        return int(-mean * math.log(1.0 - self.u()))

    def sample(self, seq, k: int) -> list:
        pool = list(seq)
        for i in range(k):
            j = i + self.below(len(pool) - i)
            pool[i], pool[j] = pool[j], pool[i]
        return pool[:k]

    def hex(self, n: int) -> str:
        return "".join("0123456789abcdef"[self.below(16)] for _ in range(n))


# ---- held-out phrasings: only in half of the test reviews -----------------------------------
# The same plot facts, and the same harmless talk about plots, told with words that no
# training or validation review contains (lmcourse.data.goodreads.HELDOUT_WORDS, all common
# English words of MiniLM's WordPiece vocabulary): "perished", "slain" for "dies"; "mole",
# "double-crosses" for "betrays"; "assassin" for "killer"; "the finale" for "the ending". A
# held-out-phrasing test review (lmcourse.data.goodreads.heldout_phrasing) says its plot
# sentences in these words instead; its other sentences (opinions, openers, reactions) are
# as in any review. A model that learned its words from the training reviews alone meets
# them as unknowns; a pretrained one has seen them before. ``check_heldout_words`` verifies
# the word list against these templates.

HELDOUT_FACTS = {
    "death": [
        "{victim} perished at the end.", "{victim} passes away in the final chapter.",
        "I sobbed when {victim} was slain.", "{villain} slaughtered {victim} in the last "
        "chapter.", "{victim} is fatally wounded in the siege of {place}.",
        "The demise of {victim} is the real turning point.",
        "{hero} wept at the grave of {victim}.",
        "{hero} finds the corpse of {victim} in {place}.",
        "{victim} is executed at {place}, and {hero} has to go on alone.",
    ],
    "traitor": [
        "{traitor} was secretly a mole for {villain}.", "{traitor} double-crosses {hero} at "
        "{place}.", "{traitor} is the informant who sold {hero} to {villain}.",
        "{traitor} defected to {villain} long before the siege of {place}.",
        "The betrayal comes from {traitor}, of all people.",
        "{traitor} lied to {hero} from the start.",
        "In the climax {traitor} joins {villain}.",
    ],
    "identity": [
        "{villain} is secretly {hero}'s {relation}.",
        "{hero} discovers that {villain} is {his} estranged {relation}.",
        "The stranger in disguise is {villain}, {hero}'s {relation}.",
        "{villain}'s true identity: {hero}'s biological {relation}.",
        "{hero} and {villain} share the same blood.",
    ],
    "killer": [
        "The assassin is {killer}.", "{killer} stabbed {victim} to keep the secret.",
        "{killer} strangled {victim} at {place}.",
        "{killer} admits to the killing in the final chapter.",
        "{killer} is guilty of the murders.", "The suspect nobody suspected, {killer}, did it.",
    ],
    "romance": [
        "{hero} marries {love}.", "{love} proposes to {hero} in the epilogue.",
        "{hero} and {love} are engaged by the final page.",
        "{hero} and {love} become a couple at the very end.",
        "{hero} kisses {love} at their wedding in {place}.",
        "{love} abandoned {hero} at the altar.",
    ],
    "ending": [
        "{hero} is crowned ruler of {place}.", "{hero} is imprisoned by {villain} for good.",
        "{hero} is exiled from {place} forever.",
        "{villain} conquered {place} and {hero} barely escapes.",
        "{hero} defeats {villain} in the finale.", "The climax reveals that {ally} survived.",
        "The finale jumps a decade ahead and {hero} reigns over {place}.",
    ],
}
HELDOUT_GENERIC = [
    "{villain} is deceased by the finale.", "{hero} makes peace with {villain} in the climax.",
    "The conclusion takes place two decades later.",
    "{ally} defects to {villain} in the climax.",
]
HELDOUT_DECOYS = [
    "I won't reveal the outcome, but it was worth the wait.",
    "No spoilers, but the finale caught me completely off guard.",
    "The climax felt a little rushed to me.", "Betrayal is a theme that runs through the book.",
    "I was desperate to know who the assassin was.",
    "The killing at the heart of it kept me guessing.",
    "I will not say who perished, but have tissues ready.",
    "Without giving anything away, the conclusion is intense.", "{author} nailed the finale.",
    "Someone in {place} is a mole, and the fun is guessing who.",
    "Prepare for a finale you will want to talk about.",
    "The suspects are all so shady that I changed my mind every chapter.",
]
#: The held-out rephrasings of each template (a fact's are those of its kind, HELDOUT_FACTS).
HELDOUT_OF = {**{t: tuple(HELDOUT_DECOYS) for t in DECOYS},
              **{t: tuple(HELDOUT_GENERIC) for t in GENERIC_SPOILERS}}


def template_words(templates) -> set[str]:
    """The words of templates, slots left out, as ``lmcourse.data.tokenize`` reads them."""
    return {w for t in templates for w in tokenize(re.sub(r"\{\w+\}", " ", t))}


def check_heldout_words() -> None:
    """``HELDOUT_WORDS`` must be exactly the words the held-out templates use and no other
    template or name does, and every held-out template must use at least one of them."""
    training = [*OPENERS, *PREMISE, *POSITIVE, *NEGATIVE, *MIXED, *DECOYS, *WARNINGS,
                *REACTIONS, *CLOSERS, *PREFIXES, *GENERIC_SPOILERS,
                *(t for ts in FACTS.values() for t in ts), *FEMALE, *MALE, *SURNAMES,
                *TITLE_ADJ, *TITLE_NOUN, *(f"{n}s" for n in TITLE_NOUN), "The of A for",
                *GENRES, *ROLES, *(r for rs in RELATIONS.values() for r in rs), *ARTIFACTS,
                *PLACES, "her his No Zero 0 1 2 3 4 5"]
    heldout = [*(t for ts in HELDOUT_OF.values() for t in ts),
               *(t for ts in HELDOUT_FACTS.values() for t in ts)]
    new = template_words(heldout) - template_words(training)
    if new != HELDOUT_WORDS:
        raise AssertionError(f"HELDOUT_WORDS is stale: add {sorted(new - HELDOUT_WORDS)}, "
                             f"remove {sorted(HELDOUT_WORDS - new)}")
    for t in heldout:
        if not template_words([t]) & HELDOUT_WORDS:
            raise AssertionError(f"the held-out template {t!r} uses no held-out word")


# ---- the world: books, users ----------------------------------------------------------------

SIDEKICKS = ("ally", "love", "extra")  # who may die, betray or kill (the hero never does)


def make_books(d: Dice) -> list[dict]:
    books, ids = [], set()
    for _ in range(N_BOOKS):
        book_id = str(1000 + int(d.u() ** 2 * 36_000_000))
        while book_id in ids:
            book_id = str(int(book_id) + 1)
        ids.add(book_id)
        genre = d.pick(GENRES)
        hero_f = d.chance(0.6)
        people = {"hero": d.pick(FEMALE if hero_f else MALE)}
        for role in ("ally", "villain", "love", "extra"):
            taken = set(people.values())
            pool = FEMALE if d.chance(0.5) else MALE
            name = d.pick(pool)
            while name in taken:
                name = d.pick(pool)
            people[role] = name
        villain_f = people["villain"] in FEMALE
        place, place2 = d.sample(PLACES, 2)
        noun = d.pick(TITLE_NOUN)
        title = d.pick([f"The {d.pick(TITLE_ADJ)} {noun}", f"{noun} of {place}",
                        f"A {noun} for {people['hero']}", f"The {noun} of {d.pick(TITLE_NOUN)}s"])
        slots = {**people, "place": place, "place2": place2, "title": title, "series": noun,
                 "author": f"{d.pick(FEMALE + MALE)} {d.pick(SURNAMES)}", "genre": genre,
                 "role": d.pick(ROLES), "his": "her" if hero_f else "his",
                 "relation": d.pick(RELATIONS["F" if villain_f else "M"]),
                 "artifact": d.pick(ARTIFACTS)}
        kinds = list(FACTS)
        n_facts = 2 + d.below(3)
        facts = []
        for _ in range(n_facts):
            kind = kinds[d.weighted(FACT_WEIGHTS[genre])]
            victim, traitor = d.pick(SIDEKICKS), d.pick(SIDEKICKS)
            killer = d.pick([r for r in (*SIDEKICKS, "villain") if r != victim])
            roles = {"victim": people[victim], "traitor": people[traitor],
                     "killer": people[killer]}
            facts.append((kind, roles))
        books.append({"book_id": book_id, "slots": slots, "facts": facts,
                      "spoiler_mult": 3.0 * d.u() ** 2,  # mean 1, long tail
                      "popularity": 1.0 / (1 + len(books)) ** 0.8})
    return books


def make_users(d: Dice) -> list[dict]:
    return [{"user_id": d.hex(32),
             "spoiler_mult": 0.2 + 3.2 * d.u() ** 3,  # mean 1: most rarely tag, a few often
             "verbosity": 5.0 + 12.0 * d.u(),  # mean sentences of a review
             "bias": d.pick([-1, 0, 0, 0, 1]),  # harsh, fair or generous rater
             "activity": 1.0 / (1 + i) ** 0.7} for i in range(N_USERS)]


def make_date(d: Dice) -> str:
    start = datetime.date(2007, 1, 1).toordinal()
    end = datetime.date(2017, 11, 3).toordinal()
    return datetime.date.fromordinal(start + int((end - start) * d.u() ** 0.45)).isoformat()


def make_rating(d: Dice, user: dict) -> int:
    if d.chance(0.03):
        return 0  # shelved with a review but no stars
    r = 1 + d.weighted([4, 8, 22, 35, 31]) + user["bias"] * d.chance(0.5)
    return max(1, min(5, r))


# ---- writing a review -----------------------------------------------------------------------

class Draft(NamedTuple):
    """A sentence template (slots still to fill) and the held-out templates that say the
    same in a held-out-phrasing test review (none for most sentences)."""

    template: str
    heldout: tuple[str, ...] = ()


def as_draft(template: str | Draft) -> Draft:
    """A template as a :class:`Draft`, with its held-out rephrasings if it has any."""
    if isinstance(template, Draft):
        return template
    return Draft(template, HELDOUT_OF.get(template, ()))


def fill(d: Dice, template: str, slots: dict) -> tuple[str, str]:
    """Fill the slots; one longer sentence in six gets a conversational prefix. Returns the
    sentence and the prefix ("" if none), which a held-out rephrasing keeps."""
    text = template.format(**slots)
    prefix = d.pick(PREFIXES) if len(text.split()) >= 5 and d.chance(1 / 6) else ""
    return with_prefix(prefix, text), prefix


def with_prefix(prefix: str, text: str) -> str:
    """``prefix + text``, the first word lowercased unless it is a name or "I"."""
    if not prefix:
        return text
    first = text.split()[0].split("'")[0].strip(",.!?")
    return prefix + (text if first in PROPER else text[0].lower() + text[1:])


def stars_text(d: Dice, rating: int) -> str:
    if rating == 0:
        return d.pick(["No", "Zero"])
    if rating < 5 and d.chance(0.3):
        return f"{rating}.5"
    return str(rating)


def opinion(d: Dice, rating: int) -> str:
    if rating >= 4:
        pool = [POSITIVE] * 6 + [MIXED]
    elif rating == 3:
        pool = [MIXED] * 3 + [POSITIVE, NEGATIVE]
    elif rating == 0:
        pool = [POSITIVE, MIXED, NEGATIVE]
    else:
        pool = [NEGATIVE] * 5 + [MIXED]
    return d.pick(d.pick(pool))


def plain_sentence(d: Dice, rating: int, first: bool, last: bool) -> str:
    if first and d.chance(0.55):
        return d.pick(OPENERS)
    if last and d.chance(0.5):
        return d.pick(CLOSERS)
    kind = d.weighted([0.18, 0.69, 0.045, 0.045, 0.04])
    return [lambda: d.pick(PREMISE), lambda: opinion(d, rating), lambda: d.pick(DECOYS),
            lambda: d.pick(REACTIONS), lambda: d.pick(OPENERS + CLOSERS)][kind]()


def cast(template: str, roles: dict) -> str:
    """Put the fact's victim, traitor and killer into a template."""
    return template.replace("{victim}", roles["victim"]).replace(
        "{traitor}", roles["traitor"]).replace("{killer}", roles["killer"])


def spoiler_sentence(d: Dice, book: dict, fact_idx: int | None = None) -> str | Draft:
    """A sentence that gives away the book's plot (its templates still need filling)."""
    x = d.u()
    if x < 0.12:
        return d.pick(GENERIC_SPOILERS)
    kind, roles = book["facts"][d.below(len(book["facts"])) if fact_idx is None else fact_idx]
    return Draft(cast(d.pick(FACTS[kind]), roles),
                 tuple(cast(t, roles) for t in HELDOUT_FACTS[kind]))


def write_review(d: Dice, book: dict, user: dict, spoiler: bool) -> tuple[list, int]:
    """The sentences ``[(label, text, heldout), ...]`` of one review, and its rating;
    ``heldout`` holds the sentence's held-out rephrasings (filled in), often none."""
    rating = make_rating(d, user)
    slots = {**book["slots"], "stars": stars_text(d, rating)}
    sents: list[tuple[int, str, tuple[str, ...]]] = []
    used: set[str] = set()

    def add(label: int, make) -> None:
        """Append a sentence from ``make()``, trying not to repeat one of this review."""
        draft = as_draft(make())
        for _ in range(6):
            if draft.template not in used:
                break
            draft = as_draft(make())
        used.add(draft.template)
        text, prefix = fill(d, draft.template, slots)
        sents.append((label, text, tuple(with_prefix(prefix, t.format(**slots))
                                         for t in draft.heldout)))

    n = 1 + d.geometric(user["verbosity"] - 1)
    if n > 40:
        n = 40 - d.below(20)
    if not spoiler:
        untagged = d.chance(0.06) and n >= 3  # the reviewer forgot to hide a spoiler
        where = 1 + d.below(n - 1) if untagged else -1
        for i in range(n):
            if i == where:
                add(0, lambda: spoiler_sentence(d, book))
            else:
                add(0, lambda i=i: plain_sentence(d, rating, i == 0, i == n - 1))
        return sents, rating
    k = min(1 + d.geometric(4.5), 30)  # spoiler sentences, in one span (sometimes two)
    n = max(n + 4, k + 2)
    before = max(1, int((n - k) * (0.6 + 0.4 * d.u() ** 0.4)))
    after = n - k - before
    for i in range(before):
        if i == before - 1 and d.chance(0.3):
            add(0, lambda: d.pick(WARNINGS))
        else:
            add(0, lambda i=i: plain_sentence(d, rating, i == 0, False))
    split_at = 1 + d.below(k) if k >= 4 and d.chance(0.25) else -1
    for j in range(k):
        if j == split_at:  # a harmless sentence between two spoiler spans
            add(0, lambda: opinion(d, rating))
        y = d.u()
        if j == 0 or y < 0.62:
            add(1, lambda: spoiler_sentence(d, book))
        elif y < 0.84:
            add(1, lambda: d.pick(REACTIONS))
        else:  # reviewers hide whole paragraphs: noise in the tags
            add(1, lambda: opinion(d, rating))
    for i in range(after):
        add(0, lambda i=i: plain_sentence(d, rating, False, i == after - 1))
    return sents, rating


def generate(seed: int = SEED) -> list[dict]:
    d = Dice(seed)
    books, users = make_books(d), make_users(d)
    book_w = [b["popularity"] for b in books]
    user_w = [u["activity"] for u in users]
    seen: set[tuple[str, str]] = set()
    pairs = []
    while len(pairs) < N_REVIEWS:
        book, user = books[d.weighted(book_w)], users[d.weighted(user_w)]
        if (book["book_id"], user["user_id"]) not in seen:  # one review per user and book
            seen.add((book["book_id"], user["user_id"]))
            pairs.append((book, user))
    # P(spoiler) grows with the book's and the user's propensity r: a review is a spoiler
    # review when u / r is small (u uniform), and the threshold is set so that exactly the
    # real data's share of reviews are.
    keys = [d.u() / (b["spoiler_mult"] * u["spoiler_mult"]) for b, u in pairs]
    n_spoil = round(TARGET_REVIEW_RATE * len(pairs))
    spoil = set(sorted(range(len(pairs)), key=keys.__getitem__)[:n_spoil])
    # Held-out phrasings draw from their own stream, so that every other review is the
    # same as if they did not exist.
    h = Dice(seed + 1)
    records = []
    for i, (book, user) in enumerate(pairs):
        sents, rating = write_review(d, book, user, spoiler=i in spoil)
        timestamp, review_id = make_date(d), d.hex(32)
        labelled = rephrase(h, sents) if heldout_phrasing(review_id) else [
            [label, text] for label, text, _ in sents]
        records.append({"user_id": user["user_id"], "timestamp": timestamp,
                        "review_sentences": labelled, "rating": rating,
                        "has_spoiler": any(lab for lab, _ in labelled),
                        "book_id": book["book_id"], "review_id": review_id})
    return records


def rephrase(h: Dice, sents: list) -> list[list]:
    """A held-out-phrasing review: each sentence that has held-out rephrasings is replaced
    by one of them (drawn from ``h``, not repeating one of the review's); labels are kept."""
    out, used = [], set()
    for label, text, heldout in sents:
        if heldout:
            text = h.pick(heldout)
            for _ in range(6):
                if text not in used:
                    break
                text = h.pick(heldout)
            used.add(text)
        out.append([label, text])
    return out


def to_bytes(records: list[dict]) -> tuple[bytes, bytes]:
    """The JSON lines and their gzip (no time stamp, no file name: reproducible bytes)."""
    payload = "".join(json.dumps(r) + "\n" for r in records).encode("utf-8")
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(payload)
    return payload, buf.getvalue()


def statistics(records: list[dict]) -> str:
    n_rev = len(records)
    sents = [s for r in records for s in r["review_sentences"]]
    n_sp = sum(lab for lab, _ in sents)
    n_rsp = sum(r["has_spoiler"] for r in records)
    pos = {0: [], 1: []}
    for r in records:
        m = len(r["review_sentences"])
        for i, (lab, _) in enumerate(r["review_sentences"]):
            pos[lab].append(i / (m - 1) if m > 1 else 0.5)
    rated = [r["rating"] for r in records if r["rating"]]
    dates = sorted(r["timestamp"] for r in records)
    return "\n".join([
        f"reviews            {n_rev:,} ({n_rsp:,} with a spoiler = {n_rsp / n_rev:.1%}; "
        "real data 6.5%)",
        f"sentences          {len(sents):,} ({n_sp:,} spoilers = {n_sp / len(sents):.1%}; "
        "real data 3.2%)",
        f"per review         {len(sents) / n_rev:.1f} sentences; a spoiler review has "
        f"{n_sp / max(n_rsp, 1):.1f} spoiler sentences",
        f"books / users      {len({r['book_id'] for r in records}):,} / "
        f"{len({r['user_id'] for r in records}):,}",
        f"position in review spoilers {sum(pos[1]) / len(pos[1]):.2f}, other sentences "
        f"{sum(pos[0]) / len(pos[0]):.2f} (0 = first sentence, 1 = last)",
        f"ratings            mean {sum(rated) / len(rated):.2f} of 5 "
        f"({n_rev - len(rated)} unrated); dates {dates[0]} to {dates[-1]}",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the generated Goodreads sample.")
    parser.add_argument("--out", type=Path, default=OUT, help=f"output file (default {OUT})")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    check_heldout_words()
    records = generate(args.seed)
    payload, data = to_bytes(records)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(data)
    print(statistics(records))
    print(f"wrote {args.out} ({len(data) / 1e6:.2f} MB gzipped, {len(payload) / 1e6:.2f} MB "
          f"of JSON lines, SHA-256 of the JSON lines {hashlib.sha256(payload).hexdigest()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
