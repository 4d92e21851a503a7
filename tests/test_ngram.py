"""lmcourse.models.ngram: interpolated Kneser–Ney, checked against a brute-force reference."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
import torch

from lmcourse.data import Vocab, load_corpus, tokenize
from lmcourse.models.ngram import NGramLM

V = 12  # id V-1 never occurs in the toy corpus: an unseen token


@pytest.fixture(scope="module")
def toy() -> list[int]:
    """Zipf-like random ids (so some n-grams repeat and others are rare)."""
    rng = np.random.default_rng(0)
    weights = 1.0 / np.arange(1, V)  # ids 0..V-2
    return rng.choice(V - 1, size=400, p=weights / weights.sum()).tolist()


def contexts(corpus: list[int]) -> list[list[int]]:
    """Seen and unseen histories of every length, an unseen token, and a too-long one."""
    return [[], corpus[:1], corpus[5:7], corpus[10:13], corpus[20:30], [V - 1], [V - 1, V - 1],
            [corpus[3], V - 1], [V - 1, *corpus[8:10]], [0, 0, 0, 0], list(range(V))]


# ---- a naive reference: the recursive formula, counts found by scanning the corpus ----------


def naive_prob(corpus: list[int], order: int, vocab_size: int, d: float,
               w: int, context: list[int]) -> float:
    h = tuple(context[len(context) - min(len(context), order - 1):])

    def raw(gram: tuple[int, ...]) -> int:  # occurrences of gram in the corpus
        k = len(gram)
        return sum(tuple(corpus[i:i + k]) == gram for i in range(len(corpus) - k + 1))

    def cont(gram: tuple[int, ...]) -> int:  # distinct tokens seen right before gram
        k = len(gram)
        return len({corpus[i - 1] for i in range(1, len(corpus) - k + 1)
                    if tuple(corpus[i:i + k]) == gram})

    def p(h: tuple[int, ...], top: bool) -> float:
        lower = p(h[1:], False) if h else 1.0 / vocab_size
        count = raw if top else cont
        c = [count((*h, u)) for u in range(vocab_size)]
        total = sum(c)
        if total == 0:
            return lower
        types = sum(x > 0 for x in c)
        return max(c[w] - d, 0) / total + d * types / total * lower

    return p(h, True)


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_matches_brute_force_reference(toy, order):
    corpus = toy[:120]  # the reference is slow: keep it small
    lm = NGramLM(order, V, discount=0.6).fit(corpus)
    worst = 0.0
    for ctx in contexts(corpus):
        ours = lm.distribution(ctx).numpy()
        ref = np.array([naive_prob(corpus, order, V, 0.6, w, ctx) for w in range(V)])
        worst = max(worst, float(np.abs(ours - ref).max()))
    assert worst <= 1e-12


# ---- properties of every distribution ------------------------------------------------------


@pytest.mark.parametrize("order", [1, 2, 3, 5])
@pytest.mark.parametrize("discount", [0.1, 0.75, 0.99])
def test_distribution_sums_to_one_and_is_positive(toy, order, discount):
    lm = NGramLM(order, V, discount).fit(toy)
    for ctx in contexts(toy):
        p = lm.distribution(ctx)
        assert p.dtype == torch.float64 and p.shape == (V,)
        assert abs(p.sum().item() - 1.0) <= 1e-12, ctx
        assert (p > 0).all(), ctx


@pytest.mark.parametrize("order", [1, 2, 3, 5])
def test_scalar_path_equals_distribution_path(toy, order):
    lm = NGramLM(order, V).fit(toy)
    for ctx in contexts(toy):
        p = lm.distribution(ctx)
        for w in range(V):
            assert lm.prob(w, ctx) == pytest.approx(p[w].item(), rel=1e-12, abs=0)
    # log_prob (scalar path) = sum of log distribution(history)[token] over a sequence
    seq = toy[200:260] + [V - 1] + toy[:5]
    by_vectors = sum(math.log(lm.distribution(seq[max(0, t - order + 1):t])[w].item())
                     for t, w in enumerate(seq))
    assert lm.log_prob(seq) == pytest.approx(by_vectors, rel=1e-12)
    assert lm.perplexity(seq) == pytest.approx(math.exp(-by_vectors / len(seq)), rel=1e-12)


def test_only_the_last_order_minus_one_ids_matter(toy):
    lm = NGramLM(3, V).fit(toy)
    long = toy[40:60]
    assert torch.equal(lm.distribution(long), lm.distribution(long[-2:]))
    assert not torch.equal(lm.distribution(long[-2:]), lm.distribution(long[-1:]))


def test_a_short_history_is_scored_by_the_lower_order_model(toy):
    tri, bi, uni = (NGramLM(n, V).fit(toy) for n in (3, 2, 1))
    for a in range(V):
        assert torch.allclose(tri.distribution([a]), bi.distribution([a]), rtol=1e-13, atol=0)
    assert torch.allclose(tri.distribution([]), uni.distribution(), rtol=1e-13, atol=0)


def test_list_numpy_and_tensor_inputs_agree(toy):
    a = NGramLM(3, V).fit(toy)
    b = NGramLM(3, V).fit(np.array(toy, dtype=np.int32))
    c = NGramLM(3, V).fit(torch.tensor(toy))
    ctx = toy[7:9]
    assert torch.equal(a.distribution(ctx), b.distribution(np.array(ctx)))
    assert torch.equal(a.distribution(ctx), c.distribution(torch.tensor(ctx)))
    assert a.perplexity(toy[:50]) == c.perplexity(torch.tensor(toy[:50]))


# ---- real text: characters and words of the Lee corpus --------------------------------------


@pytest.fixture(scope="module")
def lee_chars() -> tuple[int, list[int], list[int]]:
    text = "\n".join(load_corpus("lee")).lower()
    vocab = Vocab(list(text))
    ids = vocab.encode(list(text))
    split = int(0.9 * len(ids))
    return len(vocab), ids[:split], ids[split:]


def test_order_one_is_an_absolute_discount_unigram(lee_chars):
    vocab_size, train, _ = lee_chars
    d = 0.75
    c = np.bincount(train, minlength=vocab_size).astype(np.float64)
    expected = (np.maximum(c - d, 0) + d * (c > 0).sum() / vocab_size) / c.sum()
    got = NGramLM(1, vocab_size, d).fit(train).distribution([3, 4]).numpy()
    assert np.abs(got - expected).max() <= 1e-15
    assert np.abs(got - c / c.sum()).max() < 1e-5  # and close to the plain relative frequency


def test_char_perplexity_falls_with_the_order(lee_chars):
    vocab_size, train, test = lee_chars
    ppl = {}
    for order in (1, 2, 3, 4, 5):
        start = time.perf_counter()
        lm = NGramLM(order, vocab_size).fit(train)
        ppl[order] = lm.perplexity(test)
        print(f"char order {order}: held-out perplexity {ppl[order]:.3f} "
              f"({time.perf_counter() - start:.2f} s fit + score, {len(test):,} tokens)")
    assert ppl[1] < vocab_size  # better than uniform
    assert ppl[1] > ppl[2] > ppl[3] > ppl[4] > ppl[5]


def test_char_5gram_scores_held_out_text_in_seconds(lee_chars):
    vocab_size, train, test = lee_chars
    lm = NGramLM(5, vocab_size).fit(train)
    start = time.perf_counter()
    lm.perplexity(test)
    assert time.perf_counter() - start < 5.0


def test_fitting_on_the_test_text_itself_gives_lower_perplexity(lee_chars):
    vocab_size, train, test = lee_chars
    honest = NGramLM(5, vocab_size).fit(train).perplexity(test)
    cheating = NGramLM(5, vocab_size).fit(test).perplexity(test)
    print(f"5-gram held-out perplexity: fitted on train {honest:.3f}, on test {cheating:.3f}")
    assert cheating < honest


def test_word_trigram_beats_unigram_quickly():
    words = tokenize(" ".join(load_corpus("lee")))
    split = int(0.9 * len(words))
    vocab = Vocab(words[:split], min_freq=2)  # rare training words become <unk>
    train, test = vocab.encode(words[:split]), vocab.encode(words[split:])
    start = time.perf_counter()
    ppl = {}
    for order in (1, 2, 3):
        lm = NGramLM(order, len(vocab)).fit(train)
        ppl[order] = lm.perplexity(test)
        print(f"word order {order}: held-out perplexity {ppl[order]:.1f} (|V| = {len(vocab)})")
    lm.perplexity(train)  # ~54K more tokens through the scalar path
    elapsed = time.perf_counter() - start
    print(f"word level: 3 fits + {len(test) * 3 + len(train):,} tokens scored in {elapsed:.2f} s")
    assert ppl[3] < ppl[1]
    assert elapsed < 30.0


# ---- errors that say what was wrong and how to fix it ---------------------------------------


@pytest.mark.parametrize("order", [0, -1, 2.5, "3"])
def test_bad_order_raises(order):
    with pytest.raises(ValueError, match="order must be an integer >= 1"):
        NGramLM(order, V)


@pytest.mark.parametrize("discount", [0.0, 1.0, -0.5, 1.5])
def test_discount_outside_zero_one_raises(discount):
    with pytest.raises(ValueError, match="discount must lie strictly between 0 and 1"):
        NGramLM(2, V, discount)


def test_bad_vocab_size_raises():
    with pytest.raises(ValueError, match="vocab_size must be a positive integer"):
        NGramLM(2, 0)


@pytest.mark.parametrize("bad", [[0, 1, V], [0, -1, 2]])
def test_ids_outside_the_vocabulary_raise(toy, bad):
    with pytest.raises(ValueError, match=r"outside \[0, vocab_size=12\).*vocab_size=len\(vocab"):
        NGramLM(2, V).fit(bad)
    lm = NGramLM(2, V).fit(toy)
    with pytest.raises(ValueError, match="context contains id"):
        lm.distribution(bad)
    with pytest.raises(ValueError, match="ids contains id"):
        lm.perplexity(bad)
    with pytest.raises(ValueError, match="outside"):
        lm.prob(V, [0])


def test_non_integer_or_nested_ids_raise():
    with pytest.raises(TypeError, match="1-D sequence of integer token ids"):
        NGramLM(2, V).fit([0.5, 1.0, 2.0])
    with pytest.raises(TypeError, match="1-D sequence of integer token ids"):
        NGramLM(2, V).fit([[0, 1], [2, 3]])


def test_fitting_on_fewer_tokens_than_the_order_raises():
    with pytest.raises(ValueError, match="order-3 model on 2 tokens.*lower the order"):
        NGramLM(3, V).fit([1, 2])


def test_using_the_model_before_fit_raises():
    lm = NGramLM(2, V)
    for use in (lambda: lm.distribution([1]), lambda: lm.prob(1, []),
                lambda: lm.perplexity([1, 2])):
        with pytest.raises(RuntimeError, match=r"not been fitted yet; call \.fit"):
            use()


def test_perplexity_of_nothing_raises(toy):
    with pytest.raises(ValueError, match="at least one token"):
        NGramLM(2, V).fit(toy).perplexity([])


def test_ngram_as_network_gives_the_kneser_ney_distribution_to_decoders():
    from lmcourse.models.ngram import NGramAsNetwork
    from lmcourse.sampling import generate

    ids = [0, 1, 2, 0, 1, 2, 0, 1, 3, 0, 1, 2] * 5
    ngram = NGramLM(3, 4).fit(ids)
    net = NGramAsNetwork(ngram)
    x = torch.tensor([[0, 1, 2, 0]])
    logits, state = net(x)
    assert state is None and logits.shape == (1, 4, 4) and net.max_len == 2
    for t in range(4):  # position t sees the last two ids up to t, as the n-gram does
        expected = ngram.distribution(x[0, max(0, t - 1):t + 1].tolist())
        torch.testing.assert_close(logits[0, t].exp().double(), expected, rtol=1e-5, atol=1e-7)

    class Chars:
        def encode(self, tokens):
            return [int(t) for t in tokens]

        def decode(self, ids, sep=""):
            return sep.join(str(i) for i in ids)

    # greedy decoding follows the counts: after "0 1" comes "2" (seen 4 times out of 5)
    assert generate(net, Chars(), "01", 1, temperature=0) == "012"
