"""The fixed held-out masks and the downstream probe that every pre-training reference is
scored on (``tiny_bert``, ``bench_arms``), for each corpus the bench can pre-train on:

- ``"reviews"``: :func:`lmcourse.data.sentences.minilm_review_corpus`, the generated
  Goodreads sample's review sentences as MiniLM's WordPiece pieces (train / test split by
  review id); the probe detects spoilers in the test reviews' sentences;
- ``"wiki"``: :func:`lmcourse.tokenizers.wiki_pieces.wiki_sentences`, the Wikipedia excerpt's
  articles as consecutive sentences in a WordPiece vocabulary learned from the training
  articles; development masks come from the tuning articles, and the probe tells fresh
  from rotten Rotten Tomatoes snippets (real text the encoder never read);
- ``"prose"``: the same articles and probe in the pre-training vocabulary (frequency merges,
  8,000 pieces, :func:`lmcourse.tokenizers.wiki_pieces.pretraining_wordpiece`), pairs of up
  to 128 pieces: two real sentences (issue 55). ``"wiki"``'s 2,000-piece likelihood
  vocabulary spells most words letter by letter, and its 64 pieces hold about 13 words.

Held-out masked positions are drawn once (seed 123), so every model is scored on the same
blanks; downstream quality is a logistic-regression probe on mean-pooled sentence vectors.
"""

from __future__ import annotations

from functools import cache

import torch

from lmcourse.data.sentences import minilm_review_corpus as reviews

CORPUS = ("the course's Goodreads sample (data/goodreads_sample.jsonl.gz), review sentences "
          "as all-MiniLM-L6-v2 WordPiece pieces in a compact vocabulary (chapter 09's "
          "review_sentences); train / test reviews split by review id")
WIKI_CORPUS = ("the Wikipedia excerpt gensim ships (lmcourse.data.wiki, CC BY-SA), each "
               "article's sentences in order, as WordPiece pieces of a 2,000-piece vocabulary "
               "learned from the training articles (lmcourse.tokenizers.wiki_pieces); train / "
               "tuning / held-out split by article")
PROSE_CORPUS = ("the Wikipedia excerpt gensim ships (lmcourse.data.wiki, CC BY-SA), each "
                "article's sentences in order, as WordPiece pieces of the 8,000-piece "
                "pre-training vocabulary learned by frequency merges from the training "
                "articles (data/wiki_wordpiece_8000.txt); train / tuning / held-out split by "
                "article")
CORPORA = ("reviews", "wiki", "prose")
WIKI_CORPORA = ("wiki", "prose")  # the Wikipedia excerpt, probed on Rotten Tomatoes
BENCH_MAX_LEN = 32  # pieces per pair on the bench
# a Wikipedia sentence is ~23 pieces of the likelihood vocabulary, ~37 words: 128 pieces of
# the pre-training vocabulary hold two sentences (1.7 pieces per word)
MAX_LEN = {"reviews": BENCH_MAX_LEN, "wiki": 64, "prose": 128}
PROBE_SENTENCES = 4000  # training sentences (snippets) the probe is fitted on


def _data(corpus: str):
    if corpus == "reviews":
        return reviews()
    if corpus in WIKI_CORPORA:
        from lmcourse.tokenizers.wiki_pieces import wiki_sentences

        return wiki_sentences("likelihood" if corpus == "wiki" else "frequency")
    raise ValueError(f"unknown corpus {corpus!r}: the bench pre-trains on one of {CORPORA}")


@cache
def _bench(corpus: str):
    """The bench's ``MaskedLMBench`` on ``corpus``: training pairs and the fixed held-out
    masks (1,000 pairs of the test documents)."""
    from lmcourse.models.masked_lm_bench import MaskedLMBench

    return MaskedLMBench.build(_data(corpus), max_len=MAX_LEN[corpus], n_eval=1000)


def _masked_once(corpus: str, pairs, seed: int):
    from lmcourse.masking import mask_tokens
    from lmcourse.models.pretraining import collate_pairs

    c = _data(corpus).corpus
    batch = collate_pairs(pairs, c.cls_id, c.sep_id, c.pad_id, MAX_LEN[corpus])
    ids, labels = mask_tokens(batch["input_ids"], c.mask_id, len(c), c.special_ids,
                              generator=torch.Generator().manual_seed(seed))
    return batch, ids, labels


@cache
def _sop_eval_batch(corpus: str):
    """The held-out pairs of the SOP arm: SOP pairs of the test documents, masked once."""
    from lmcourse.models.pretraining import sop_pairs

    pairs = sop_pairs(_data(corpus).test.documents, seed=1)[:len(bench(corpus).eval_ids)]
    return _masked_once(corpus, pairs, 123)


@cache
def _dev_batch(corpus: str):
    """Development masks for choosing a setting, masked once with seed 321: on the reviews,
    test pairs 1,000-1,999 (the reported scores use pairs 0-999); on the Wikipedia excerpt,
    1,000 pairs of the tuning articles."""
    from lmcourse.models.pretraining import nsp_pairs

    pairs = (bench(corpus).test_pairs[1000:2000] if corpus == "reviews"
             else nsp_pairs(_data(corpus).tuning.documents, seed=2)[:1000])
    return _masked_once(corpus, pairs, 321)


#: the blanks besides single pieces that every arm is scored on (issues 55 and 56): every
#: piece of a chosen word masked (whole-word masking), and SpanBERT's spans of whole words
BLANK_KINDS = {"whole_word": "whole-word blanks (every piece of a word, 15% of the words)",
               "span": "span blanks (SpanBERT's: Geometric(0.2) whole words, at most 10)"}


def _blanks(corpus: str, kind: str, batch: dict[str, torch.Tensor], seed: int
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch``'s pairs masked once by ``kind`` (:data:`BLANK_KINDS`): ``(ids, labels)``.
    Words are a piece and its ``##`` continuations; 80/10/10 is decided per word or span,
    as the training maskers do."""
    from lmcourse.masking import mask_spans, mask_whole_words

    c = _data(corpus).corpus
    ids = batch["input_ids"]
    continues = torch.tensor([piece.startswith("##") for piece in c.pieces])[ids]
    generator = torch.Generator().manual_seed(seed)
    if kind == "whole_word":
        return mask_whole_words(ids, continues, c.mask_id, len(c), c.special_ids,
                                generator=generator)
    if kind == "span":
        return mask_spans(ids, c.mask_id, len(c), c.special_ids, generator=generator,
                          is_continuation=continues)
    raise ValueError(f"unknown blank kind {kind!r}: one of {sorted(BLANK_KINDS)}")


@cache
def _held_out_blanks(corpus: str, kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The bench's held-out pairs (the same 1,000 as its single-piece masks) masked by
    ``kind`` with seed 123: every arm, and the fill-in n-gram, is scored on these."""
    return _blanks(corpus, kind, bench(corpus).eval_batch, 123)


def blank_scores(model: torch.nn.Module, corpus: str) -> dict[str, float]:
    """Masked accuracy and MLM loss of ``model`` on each kind of held-out blank
    (``whole_word_accuracy``, ``span_mlm_loss``, ...): the blanks an arm trains for may not
    be single pieces (SpanBERT's are spans), so each arm is also read on those."""
    from lmcourse.models.pretraining import evaluate_pretraining

    out = {}
    for kind in BLANK_KINDS:
        ids, labels = held_out_blanks(corpus, kind)
        scored = evaluate_pretraining(model, bench(corpus).eval_batch, ids, labels)
        out[f"{kind}_accuracy"] = round(scored["masked accuracy"], 4)
        out[f"{kind}_mlm_loss"] = round(scored["MLM loss"], 4)
    return out


def _probe_rows(corpus: str, split: str = "test") -> tuple[list, list]:
    """``(text, label, group)`` rows the probe is fitted on and scored on (``split``:
    ``"test"``, or for ``"wiki"`` the Rotten Tomatoes ``"tuning"`` snippets, for choosing a
    setting)."""
    if corpus == "reviews":
        from lmcourse.data.goodreads import sentences

        data = reviews()
        return sentences(data.train_reviews)[:PROBE_SENTENCES], sentences(data.test_reviews)
    import random

    from lmcourse.data.rotten_tomatoes import load_rotten_tomatoes

    train = [tuple(r) for r in load_rotten_tomatoes("train")]
    random.Random(0).shuffle(train)
    return train[:PROBE_SENTENCES], [tuple(r) for r in load_rotten_tomatoes(split)]


def _probe_tokenize(corpus: str):
    if corpus == "reviews":
        from lmcourse.pretrained import load_hf_tokenizer

        return load_hf_tokenizer().tokenize
    return _data(corpus).tokenizer.tokenize


@cache
def _probe_data(corpus: str, split: str = "test"):
    """The probe's inputs in the bench's vocabulary: ``(ids, labels, fit mask, fit rows,
    test rows)``; the fit rows are the first ``PROBE_SENTENCES`` training sentences (the
    reviews) or snippets in a fixed shuffled order (Rotten Tomatoes, for ``"wiki"``)."""
    if split != "test" and corpus not in WIKI_CORPORA:
        raise ValueError(f"the {corpus} probe has no {split!r} split: only 'test'")
    fit, test = _probe_rows(corpus, split)
    tokenize, b = _probe_tokenize(corpus), bench(corpus)
    ids = [b.encode_sentences([t for t, _, _ in rows], tokenize) for rows in (fit, test)]
    labels = torch.tensor([label for _, label, _ in fit + test])
    return ids, labels, torch.arange(len(labels)) < len(fit), fit, test


@torch.no_grad()
def probe_auc(encoder: torch.nn.Module, corpus: str = "reviews", split: str = "test") -> float:
    """The probe's test ROC-AUC (spoilers in the test reviews' sentences; fresh vs rotten
    Rotten Tomatoes test snippets for ``"wiki"``): logistic regression on the mean-pooled
    final states, fitted on ``PROBE_SENTENCES`` training rows."""
    from lmcourse.metrics import roc_auc
    from lmcourse.models.elmo import probe_scores

    ids, labels, fit, _, _ = probe_data(corpus, split)
    encoder.eval()
    device = next(encoder.parameters()).device
    features = []
    for x, attention in ids:
        for rows in torch.arange(len(x)).split(512):
            h = encoder(x[rows].to(device), attention_mask=attention[rows].to(device))
            w = attention[rows, :, None].float().to(device)
            features.append(((h.last_hidden_state * w).sum(1) / w.sum(1)).cpu())
    with torch.random.fork_rng():
        torch.manual_seed(0)
        scores = probe_scores(torch.cat(features), labels, fit)[:, 1]
    return round(roc_auc(labels[~fit], scores), 4)


def _keyed(cached):
    """``cached`` called with the corpus named, so ``f()`` and ``f("reviews")`` share one
    cache entry (``cache_info`` and ``cache_clear`` are the cached function's)."""
    def call(corpus: str = "reviews", *args):
        return cached(corpus, *args)

    call.__doc__, call.__name__ = cached.__doc__, cached.__name__.lstrip("_")
    call.cache_info, call.cache_clear = cached.cache_info, cached.cache_clear
    return call


bench, sop_eval_batch, dev_batch, probe_data, held_out_blanks = (
    _keyed(f) for f in (_bench, _sop_eval_batch, _dev_batch, _probe_data, _held_out_blanks))


def encoder_of(model: torch.nn.Module) -> torch.nn.Module:
    for attr in ("bert", "deberta", "electra"):
        if hasattr(model, attr):
            return getattr(model, attr)
    raise TypeError(f"no encoder in {type(model).__name__}")


def inputs_as_seen(corpus: str = "prose", snippet_len: int = 64) -> dict:
    """What the encoder of ``corpus`` is given, measured: pieces per word on the held-out
    articles and on the Rotten Tomatoes test snippets, how many of their pieces are
    ``[UNK]`` (as "unknown of all"), the held-out pairs' mean length in
    pieces and the share cut at the bench's length, the share of snippets longer than
    ``snippet_len`` pieces (fine-tuning's cut), and the first held-out pair as pieces."""
    from lmcourse.data.rotten_tomatoes import load_rotten_tomatoes
    from lmcourse.tokenizers.wiki_pieces import (
        article_sentences,
        pieces_per_word,
        unknown_pieces,
    )

    data, b = _data(corpus), bench(corpus)
    snippets = [r.text for r in load_rotten_tomatoes("test")]
    held_out = [s for doc in article_sentences("held_out") for s in doc]
    lengths = [len(x) + len(y) + 3 for x, y, _ in b.test_pairs]  # [CLS] x [SEP] y [SEP]
    first, second, _ = b.test_pairs[0]
    return {"pieces per word, held-out articles": pieces_per_word(data.tokenizer, held_out),
            "pieces per word, Rotten Tomatoes test": pieces_per_word(data.tokenizer, snippets),
            **{f"unknown pieces, {where}": "{:,} of {:,}".format(
                *unknown_pieces(data.tokenizer, texts))
               for where, texts in (("held-out articles", held_out),
                                    ("Rotten Tomatoes test", snippets))},
            "mean held-out pair, pieces": sum(lengths) / len(lengths),
            f"share of pairs cut at {b.max_len}": sum(n > b.max_len for n in lengths)
            / len(lengths),
            f"share of snippets cut at {snippet_len}":
                sum(len(data.tokenizer.tokenize(t)) + 3 > snippet_len for t in snippets)
                / len(snippets),
            "first held-out pair": (data.corpus.decode(first), data.corpus.decode(second))}


def show_inputs_as_seen(corpus: str = "prose") -> None:
    """Print :func:`inputs_as_seen` as a two-column list, then the first held-out pair as
    the encoder reads it, one piece at a time."""
    seen = inputs_as_seen(corpus)
    pair_a, pair_b = seen.pop("first held-out pair")
    for name, value in seen.items():
        shown = (value if isinstance(value, str)
                 else f"{value:.1%}" if name.startswith("share") else f"{value:.2f}")
        print(f"{name:<40} {shown}")
    print("the first held-out pair, as the encoder reads it:")
    print("  A:", " ".join(pair_a), "\n  B:", " ".join(pair_b))
