"""Three small supervised tasks for BERT's fine-tuning heads, written from the review
generator's world (:mod:`lmcourse.data.review_templates`). The program that writes a
sentence knows who does what in it, so every answer span, tag and pair label is exact:

- :func:`fact_questions`: extractive question answering, head (c). "Who dies?" over a short
  passage about a book (a premise, the plot fact, a remark), all with several names;
- :func:`tagged_sentences`: token tagging, head (d). Each word is ``PER`` (a person's name),
  ``LOC`` (a place's) or ``O``;
- :func:`fact_pairs`: sentence-pair classification, head (a). Do two spoilers give away the
  same plot fact? Half the negatives name another character in the same kind of fact, half
  the same character in another kind.

Names and places are split in two: ``split="train"`` draws from one half, ``"test"`` from
the other, so no test name was ever seen in training and only the context says who is a
person, or who dies. (MiniLM's vocabulary is lowercase: capital letters do not help it.)
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from lmcourse.data.review_templates import (
    ARTIFACTS,
    DECOYS,
    FACTS,
    FEMALE,
    GENERIC_SPOILERS,
    MALE,
    NEGATIVE,
    PLACES,
    POSITIVE,
    PREMISE,
    RELATIONS,
    ROLES,
    SURNAMES,
    TITLE_ADJ,
    TITLE_NOUN,
)

__all__ = ["QA_KINDS", "TAGS", "QAExample", "TaggedSentence", "exact_match", "fact_pairs",
           "fact_questions", "first_name_answer", "lexicon_tagger", "name_overlap_pairs",
           "overlap_answer", "split_words", "tag_f1", "tagged_sentences", "token_f1"]

TAGS = ("O", "PER", "LOC")
#: The fact kinds a question is asked about, the role that answers it, and the questions.
QA_KINDS = {
    "death": ("victim", ["Who dies?", "Who does not survive?", "Which character dies?"]),
    "traitor": ("traitor", ["Who is the traitor?", "Who betrays {hero}?",
                            "Who turns against {hero}?"]),
    "killer": ("killer", ["Who is the killer?", "Who committed the murder?",
                          "Who killed {victim}?"]),
}
PERSON_SLOTS = {"hero", "ally", "villain", "love", "extra", "victim", "traitor", "killer",
                "author"}
PLACE_SLOTS = {"place", "place2"}
_SLOT = re.compile(r"\{(\w+)\}")
_WORD = re.compile(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]")
SPLITS = ("train", "test")


def split_words(text: str) -> list[str]:
    """Words and punctuation marks: ``"Wren's end."`` -> Wren, ', s, end, ."""
    return _WORD.findall(text)


def _half(seq: Sequence[str], split: str) -> list[str]:
    if split not in SPLITS:
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    return list(seq[0::2] if split == "train" else seq[1::2])


def _world(rng: random.Random, split: str) -> dict[str, str]:
    """A book's slots: five distinct characters, two places, an author, and the rest."""
    female, male = _half(FEMALE, split), _half(MALE, split)
    hero_female = rng.random() < 0.6
    people = {"hero": rng.choice(female if hero_female else male)}
    for role in ("ally", "villain", "love", "extra"):
        people[role] = rng.choice([n for n in female + male if n not in people.values()])
    sidekicks = ("ally", "love", "extra")
    victim = rng.choice(sidekicks)
    killer = rng.choice([r for r in (*sidekicks, "villain") if r != victim])
    place, place2 = rng.sample(_half(PLACES, split), 2)
    noun = rng.choice(TITLE_NOUN)
    return {**people, "victim": people[victim], "traitor": people[rng.choice(sidekicks)],
            "killer": people[killer], "place": place, "place2": place2,
            "author": f"{rng.choice(female + male)} {rng.choice(_half(SURNAMES, split))}",
            "title": f"The {rng.choice(TITLE_ADJ)} {noun}", "series": noun,
            "genre": "fantasy", "role": rng.choice(ROLES), "his": "her" if hero_female else "his",
            "relation": rng.choice(RELATIONS["F" if people["villain"] in FEMALE else "M"]),
            "artifact": rng.choice(ARTIFACTS), "stars": str(rng.randint(1, 5))}


# ---- (c) extractive question answering ------------------------------------------------------

@dataclass(frozen=True)
class QAExample:
    question: str
    context: str
    answer: str
    answer_start: int  # character offset of the answer in ``context``


def _remark(rng: random.Random, world: dict[str, str]) -> str:
    """A sentence with a name in it that is not the fact: a premise or an opinion."""
    pool = [t for t in PREMISE + POSITIVE + NEGATIVE + DECOYS if _SLOT.search(t)]
    return rng.choice(pool).format(**world)


def fact_questions(n: int, seed: int = 0, split: str = "train") -> list[QAExample]:
    """``n`` questions, each about one plot fact in a three-sentence passage (the fact, a
    premise and a remark, in random order) that names several characters."""
    rng = random.Random(f"qa-{split}-{seed}")
    out = []
    for _ in range(n):
        world = _world(rng, split)
        kind = rng.choice(list(QA_KINDS))
        role, questions = QA_KINDS[kind]
        template = rng.choice(FACTS[kind])
        fact = template.format(**world)
        before = template[:template.index("{" + role + "}")].format(**world)
        sentences = [fact, rng.choice(PREMISE).format(**world), _remark(rng, world)]
        order = rng.sample(range(3), 3)
        context = " ".join(sentences[i] for i in order)
        start = context.index(fact) + len(before)
        assert context[start:start + len(world[role])] == world[role]
        out.append(QAExample(rng.choice(questions).format(**world), context, world[role],
                             start))
    return out


def _normalise(text: str) -> list[str]:
    return [w.lower() for w in split_words(text) if w.isalnum()]


def exact_match(prediction: str, answer: str) -> float:
    """SQuAD's exact match: 1.0 when the lowercased words agree."""
    return float(_normalise(prediction) == _normalise(answer))


def token_f1(prediction: str, answer: str) -> float:
    """SQuAD's F1: the harmonic mean of word precision and recall (bags of words)."""
    p, a = _normalise(prediction), _normalise(answer)
    common = sum((Counter(p) & Counter(a)).values())
    if not p or not a or not common:
        return float(p == a)
    precision, recall = common / len(p), common / len(a)
    return 2 * precision * recall / (precision + recall)


@cache
def _template_words() -> frozenset[str]:
    """The words the templates themselves write with a capital (sentence starts, "I")."""
    texts = [*PREMISE, *POSITIVE, *NEGATIVE, *DECOYS, *GENERIC_SPOILERS,
             *(t for ts in FACTS.values() for t in ts)]
    return frozenset(w for t in texts for w in split_words(_SLOT.sub(" ", t)) if w[:1].isupper())


def _names_in(text: str, ignore: frozenset[str]) -> list[str]:
    return [w for w in split_words(text) if w[:1].isupper() and w not in ignore]


def first_name_answer(question: str, context: str) -> str:
    """The simplest guess: the first capitalised word of the passage that the templates do
    not write themselves (a name)."""
    names = _names_in(context, _template_words())
    return names[0] if names else ""


def overlap_answer(question: str, context: str) -> str:
    """A word-matching baseline: the passage sentence sharing the most words with the
    question (ties: the first), and the first name in it."""
    ignore = _template_words()
    stop = {"who", "is", "the", "does", "did", "a", "which", "not", "of", "to", "?"}
    asked = {w for w in _normalise(question) if w not in stop}
    sentences = re.split(r"(?<=[.!?])\s+", context)
    scored = [(len(asked & set(_normalise(s))), -i, s) for i, s in enumerate(sentences)
              if _names_in(s, ignore)]
    if not scored:
        return ""
    return _names_in(max(scored)[2], ignore)[0]


# ---- (d) token tagging ----------------------------------------------------------------------

@dataclass(frozen=True)
class TaggedSentence:
    words: list[str]
    tags: list[str]  # one of TAGS per word


def _tag_template(template: str, world: dict[str, str]) -> TaggedSentence:
    words, tags, at = [], [], 0
    for m in _SLOT.finditer(template):
        literal = split_words(template[at:m.start()])
        words += literal
        tags += ["O"] * len(literal)
        value = split_words(world[m.group(1)])
        tag = ("PER" if m.group(1) in PERSON_SLOTS else "LOC" if m.group(1) in PLACE_SLOTS
               else "O")
        words += value
        tags += [tag] * len(value)
        at = m.end()
    tail = split_words(template[at:])
    return TaggedSentence(words + tail, tags + ["O"] * len(tail))


def tagged_sentences(n: int, seed: int = 0, split: str = "train") -> list[TaggedSentence]:
    """``n`` sentences from every template that names a person or a place, filled with the
    split's names, each word tagged ``PER``, ``LOC`` or ``O``."""
    rng = random.Random(f"tags-{split}-{seed}")
    slots = PERSON_SLOTS | PLACE_SLOTS
    pool = [t for t in [*PREMISE, *POSITIVE, *NEGATIVE, *DECOYS, *GENERIC_SPOILERS,
                        *(t for ts in FACTS.values() for t in ts)]
            if set(_SLOT.findall(t)) & slots]
    return [_tag_template(rng.choice(pool), _world(rng, split)) for _ in range(n)]


def lexicon_tagger(train: Sequence[TaggedSentence], capitals: bool = False):
    """The per-word baseline: each word's most frequent training tag, ``O`` for a word never
    seen; with ``capitals``, an unseen capitalised word is tagged ``PER`` (the commonest
    name tag), which a lowercase model cannot do. Returns ``tag(words) -> tags``."""
    counts: dict[str, Counter] = {}
    for s in train:
        for w, t in zip(s.words, s.tags, strict=True):
            counts.setdefault(w.lower(), Counter())[t] += 1
    best = {w: c.most_common(1)[0][0] for w, c in counts.items()}

    def tag(words: Sequence[str]) -> list[str]:
        return [best.get(w.lower(), "PER" if capitals and w[:1].isupper() else "O")
                for w in words]
    return tag


def tag_f1(predicted: Sequence[Sequence[str]], gold: Sequence[Sequence[str]]) -> float:
    """Micro F1 over the words tagged as names (``PER`` or ``LOC``): a word counts as right
    when both tags agree, precision over predicted names, recall over true ones."""
    tp = fp = fn = 0
    for p_row, g_row in zip(predicted, gold, strict=True):
        for p, g in zip(p_row, g_row, strict=True):
            tp += p == g != "O"
            fp += p != "O" and p != g
            fn += g != "O" and p != g
    return 2 * tp / max(2 * tp + fp + fn, 1)


# ---- (a) sentence pairs ---------------------------------------------------------------------

def fact_pairs(n: int, seed: int = 0, split: str = "train") -> list[tuple[str, str, int]]:
    """``n`` pairs of spoilers about one book, ``(a, b, 1)`` when they give away the same
    fact in two phrasings, ``(a, b, 0)`` otherwise: another character in the same kind of
    fact, or the same character in another kind (half each)."""
    rng = random.Random(f"pairs-{split}-{seed}")
    out = []
    for i in range(n):
        world = _world(rng, split)
        kind = rng.choice(list(QA_KINDS))
        role = QA_KINDS[kind][0]
        first, second = rng.sample(FACTS[kind], 2)
        a = first.format(**world)
        if i % 2 == 0:
            out.append((a, second.format(**world), 1))
            continue
        person = world[role]
        strangers = [n for n in _half(FEMALE, split) + _half(MALE, split)
                     if n not in world.values()]
        if i % 4 == 1:  # the same kind of fact about someone else
            b = second.format(**{**world, role: rng.choice(strangers)})
        else:  # the same person in another kind of fact (nobody else in it is them)
            other_kind = rng.choice([k for k in QA_KINDS if k != kind])
            other_role = QA_KINDS[other_kind][0]
            cast = {r: (rng.choice(strangers) if world[r] == person else world[r])
                    for r in ("victim", "traitor", "killer")}
            b = rng.choice(FACTS[other_kind]).format(**{**world, **cast, other_role: person})
        out.append((a, b, 0))
    order = rng.sample(range(n), n)
    return [out[i] for i in order]


def name_overlap_pairs(a: str, b: str) -> int:
    """A rule baseline: 1 ("same fact") when the two sentences name the same people."""
    ignore = _template_words()
    return int(set(_names_in(a, ignore)) == set(_names_in(b, ignore)))
