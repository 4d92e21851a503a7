"""The fixed held-out masks and the spoiler probe that every pre-training reference is scored
on (``tiny_bert``, ``bench_arms``).

The corpus is :func:`lmcourse.data.sentences.minilm_review_corpus` (the Goodreads sample's
review sentences as MiniLM's WordPiece pieces, train / test split by review id). Held-out
masked positions are drawn once (seed 123), so every model is scored on the same blanks;
downstream quality is a logistic-regression probe on mean-pooled sentence vectors for spoiler
detection.
"""

from __future__ import annotations

from functools import cache

import torch

from lmcourse.data.sentences import minilm_review_corpus as reviews

CORPUS = ("the course's Goodreads sample (data/goodreads_sample.jsonl.gz), review sentences "
          "as all-MiniLM-L6-v2 WordPiece pieces in a compact vocabulary (chapter 09's "
          "review_sentences); train / test reviews split by review id")
BENCH_MAX_LEN = 32  # pieces per pair on the bench
PROBE_SENTENCES = 4000  # training sentences the spoiler probe is fitted on


@cache
def bench():
    """The bench's ``MaskedLMBench``: training pairs and the fixed held-out masks."""
    from lmcourse.models.pretraining import MaskedLMBench

    return MaskedLMBench.build(reviews(), max_len=BENCH_MAX_LEN, n_eval=1000)


@cache
def sop_eval_batch():
    """The held-out pairs of the SOP arm: SOP pairs of the test reviews, masked once."""
    from lmcourse.masking import mask_tokens
    from lmcourse.models.pretraining import collate_pairs, sop_pairs

    c, b = reviews().corpus, bench()
    pairs = sop_pairs(reviews().test.documents, seed=1)[:len(b.eval_ids)]
    batch = collate_pairs(pairs, c.cls_id, c.sep_id, c.pad_id, BENCH_MAX_LEN)
    ids, labels = mask_tokens(batch["input_ids"], c.mask_id, len(c), c.special_ids,
                              generator=torch.Generator().manual_seed(123))
    return batch, ids, labels


@cache
def dev_batch():
    """Development masks for choosing a setting: test pairs 1,000-1,999 (the reported scores
    use pairs 0-999), masked once with seed 321."""
    from lmcourse.masking import mask_tokens
    from lmcourse.models.pretraining import collate_pairs

    c, b = reviews().corpus, bench()
    batch = collate_pairs(b.test_pairs[1000:2000], c.cls_id, c.sep_id, c.pad_id, BENCH_MAX_LEN)
    ids, labels = mask_tokens(batch["input_ids"], c.mask_id, len(c), c.special_ids,
                              generator=torch.Generator().manual_seed(321))
    return batch, ids, labels


@cache
def probe_data():
    from lmcourse.data.goodreads import sentences

    data, b = reviews(), bench()
    from lmcourse.pretrained import load_hf_tokenizer

    tokenize = load_hf_tokenizer().tokenize
    fit = sentences(data.train_reviews)[:PROBE_SENTENCES]
    test = sentences(data.test_reviews)
    ids = [b.encode_sentences([t for t, _, _ in rows], tokenize) for rows in (fit, test)]
    labels = torch.tensor([label for _, label, _ in fit + test])
    return ids, labels, torch.arange(len(labels)) < len(fit), fit, test


@torch.no_grad()

def probe_auc(encoder: torch.nn.Module) -> float:
    """Spoiler-probe ROC-AUC on the test reviews' sentences: logistic regression on the
    mean-pooled final states, fitted on 4,000 training sentences."""
    from lmcourse.metrics import roc_auc
    from lmcourse.models.elmo import probe_scores

    ids, labels, fit, _, _ = probe_data()
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


def encoder_of(model: torch.nn.Module) -> torch.nn.Module:
    for attr in ("bert", "deberta", "electra"):
        if hasattr(model, attr):
            return getattr(model, attr)
    raise TypeError(f"no encoder in {type(model).__name__}")
