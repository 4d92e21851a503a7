"""MLM masking: rates measured on large samples against binomial tolerances, whole words,
SpanBERT spans, static vs dynamic masks, argument errors, and the pictures and widget."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.patches import Rectangle

from lmcourse.masking import (
    IGNORE_INDEX,
    KEPT,
    MASKED,
    NOT_SELECTED,
    RANDOM,
    DynamicMasking,
    StaticMasking,
    choose_spans,
    continuation_flags,
    mask_spans,
    mask_tokens,
    mask_whole_words,
    masking_kinds,
    masking_rates,
    replace_80_10_10,
    sample_span_lengths,
    span_length_pmf,
    static_masks,
)

PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
SPECIALS = [PAD, UNK, CLS, SEP, MASK]
V = 1000
POOL = V - len(SPECIALS)  # ids a random replacement may take
Z = 5.0  # tolerance in binomial standard deviations


def within(count: float, n: int, p: float, z: float = Z) -> bool:
    """``count`` successes of ``n`` Bernoulli(p) trials lie within z standard deviations."""
    return abs(count - n * p) <= z * math.sqrt(n * p * (1 - p)) + 1e-9


def corpus(rows: int = 400, length: int = 500, seed: int = 0) -> torch.Tensor:
    """200k ids: [CLS] a [SEP] b [SEP] [PAD]..., random lengths and padding."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(len(SPECIALS), V, (rows, length), generator=g)
    x[:, 0] = CLS
    for r in range(rows):
        end = int(torch.randint(3 * length // 4, length, (1,), generator=g))
        mid = int(torch.randint(2, end - 1, (1,), generator=g))
        x[r, mid] = SEP
        x[r, end] = SEP
        x[r, end + 1:] = PAD
    return x


@pytest.fixture(scope="module")
def data():
    return corpus()


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ----------------------------------------------------------------- token masking

def test_token_masking_rates_and_labels(data):
    original = data.clone()
    masked, labels = mask_tokens(data, MASK, V, SPECIALS, generator=gen())
    assert torch.equal(data, original)  # not modified in place
    assert masked.shape == data.shape and labels.dtype == torch.long
    special = torch.isin(data, torch.tensor(SPECIALS))
    selected = labels != IGNORE_INDEX
    assert not (selected & special).any()  # specials never selected
    assert torch.equal(labels[selected], data[selected])
    assert (labels[~selected] == IGNORE_INDEX).all()
    assert torch.equal(masked[~selected], data[~selected])
    n, n_sel = int((~special).sum()), int(selected.sum())
    assert n > 150_000
    assert within(n_sel, n, 0.15)
    is_mask = selected & (masked == MASK)
    is_random = selected & (masked != MASK) & (masked != data)
    is_kept = selected & (masked == data)
    assert within(int(is_mask.sum()), n_sel, 0.8)
    # a random draw equals the original with probability 1 / POOL and then reads as kept
    assert within(int(is_random.sum()), n_sel, 0.1 * (1 - 1 / POOL))
    assert within(int(is_kept.sum()), n_sel, 0.1 + 0.1 / POOL)
    drawn = masked[is_random]
    assert not torch.isin(drawn, torch.tensor(SPECIALS)).any()  # random ids avoid specials
    # uniform over the pool: mean and spread of a discrete uniform on [5, V)
    mu, sd = (len(SPECIALS) + V - 1) / 2, math.sqrt((POOL**2 - 1) / 12)
    assert abs(drawn.double().mean() - mu) < Z * sd / math.sqrt(len(drawn))


def test_split_is_configurable_and_extremes(data):
    masked, labels = mask_tokens(data, MASK, V, SPECIALS, 0.4, gen(1), mask_frac=0.5,
                                 random_frac=0.3)
    special = torch.isin(data, torch.tensor(SPECIALS))
    selected = labels != IGNORE_INDEX
    n_sel = int(selected.sum())
    assert within(n_sel, int((~special).sum()), 0.4)
    assert within(int((selected & (masked == MASK)).sum()), n_sel, 0.5)
    assert within(int((selected & (masked != MASK) & (masked != data)).sum()), n_sel,
                  0.3 * (1 - 1 / POOL))
    _, labels = mask_tokens(data, MASK, V, SPECIALS, 0.0, gen())
    assert (labels == IGNORE_INDEX).all()
    masked, labels = mask_tokens(data, MASK, V, SPECIALS, 1.0, gen(), mask_frac=1.0,
                                 random_frac=0.0)
    assert torch.equal(labels != IGNORE_INDEX, ~special)
    assert (masked[~special] == MASK).all() and torch.equal(masked[special], data[special])


def test_seeded_draws_repeat_and_fresh_draws_differ(data):
    a = mask_tokens(data, MASK, V, SPECIALS, generator=gen(7))
    b = mask_tokens(data, MASK, V, SPECIALS, generator=gen(7))
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    g = gen(7)
    first, second = (mask_tokens(data, MASK, V, SPECIALS, generator=g) for _ in range(2))
    assert not torch.equal(first[1], second[1])  # dynamic: every call a new mask
    sel1, sel2 = first[1] != IGNORE_INDEX, second[1] != IGNORE_INDEX
    n = int((~torch.isin(data, torch.tensor(SPECIALS))).sum())
    assert within(int((sel1 & sel2).sum()), n, 0.15**2)  # the two draws are independent
    c, d = (mask_tokens(data, MASK, V, SPECIALS)[1] for _ in range(2))  # global generator
    assert not torch.equal(c, d)


def test_one_sequence_and_int32():
    x = torch.tensor([CLS, *range(10, 60), SEP], dtype=torch.int32)
    masked, labels = mask_tokens(x, MASK, V, SPECIALS, 0.5, gen())
    assert masked.shape == x.shape and masked.dtype == torch.int32
    assert labels.dtype == torch.long and labels[0] == labels[-1] == IGNORE_INDEX
    assert 0 < int((labels != IGNORE_INDEX).sum()) < 50
    for empty in (torch.zeros(0, dtype=torch.long), torch.zeros(3, 0, dtype=torch.long)):
        for masked, labels in (mask_tokens(empty, MASK, V, SPECIALS),
                               mask_spans(empty, MASK, V, SPECIALS)):
            assert masked.shape == labels.shape == empty.shape


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(prob=1.5), ValueError, r"prob .* \[0, 1\]"),
    (dict(prob=-0.1), ValueError, "prob"),
    (dict(mask_frac=0.9, random_frac=0.2), ValueError, r"mask_frac \+ random_frac"),
    (dict(random_frac=-0.1), ValueError, "random_frac"),
])
def test_bad_rates_say_what_to_fix(kwargs, error, match):
    x = torch.tensor([CLS, 10, 11, SEP])
    for masker in (mask_tokens, mask_spans):
        with pytest.raises(error, match=match):
            masker(x, MASK, V, SPECIALS, **kwargs)
    with pytest.raises(error, match=match):
        mask_whole_words(x, torch.zeros(4, dtype=torch.bool), MASK, V, SPECIALS, **kwargs)


def test_bad_inputs_say_what_to_fix():
    x = torch.tensor([CLS, 10, 11, SEP])
    with pytest.raises(TypeError, match=r"integer token ids .*\.long\(\)"):
        mask_tokens(x.float(), MASK, V, SPECIALS)
    with pytest.raises(TypeError, match=r"torch.tensor\(ids\)"):
        mask_tokens([2, 10, 11, 3], MASK, V, SPECIALS)
    with pytest.raises(ValueError, match="batch x length"):
        mask_tokens(x.view(1, 2, 2), MASK, V, SPECIALS)
    with pytest.raises(ValueError, match="vocab_size=5"):
        mask_tokens(x, MASK, 5, [0, 1, 2, 3])
    with pytest.raises(ValueError, match="special_ids"):
        mask_tokens(x, MASK, V, [CLS, V + 3])
    with pytest.raises(ValueError, match="is_continuation"):
        mask_whole_words(x, torch.zeros(3, dtype=torch.bool), MASK, V, SPECIALS)
    with pytest.raises(ValueError, match="success probability"):
        mask_spans(x, MASK, V, SPECIALS, p=0.0)
    with pytest.raises(ValueError, match="max_span"):
        mask_spans(x, MASK, V, SPECIALS, max_span=0)
    with pytest.raises(ValueError, match="'truncate' or 'clip'"):
        span_length_pmf(0.2, 10, mode="cut")
    with pytest.raises(ValueError, match="copies"):
        static_masks(x, 0, mask_id=MASK, vocab_size=V, special_ids=SPECIALS)


# ------------------------------------------------------------- whole-word masking

def test_continuation_flags():
    tokens = ["[CLS]", "play", "##ing", "the", "##s", "!", "[SEP]"]
    assert continuation_flags(tokens).tolist() == [False, False, True, False, True, False,
                                                   False]
    assert continuation_flags([tokens, tokens]).shape == (2, 7)


def test_whole_words_are_selected_together(data):
    g = gen(3)
    special = torch.isin(data, torch.tensor(SPECIALS))
    cont = (torch.rand(data.shape, generator=g) < 0.5) & ~special
    masked, labels = mask_whole_words(data, cont, MASK, V, SPECIALS, generator=g)
    kinds = masking_kinds(masked, labels, MASK)
    selected = labels != IGNORE_INDEX
    assert not (selected & special).any()
    assert torch.equal(labels[selected], data[selected])
    assert torch.equal(masked[~selected], data[~selected])
    # words: a start (not a continuation, or right after a special) and its ## pieces
    starts = ~cont
    starts[:, 1:] |= special[:, :-1]
    words = torch.cumsum(starts.flatten(), 0)
    flat_sel, flat_mask = selected.flatten(), (kinds == MASKED).flatten()
    n_words = int(words[-1])
    sel_per_word = torch.zeros(n_words + 1).index_add_(0, words, flat_sel.float())
    mask_per_word = torch.zeros(n_words + 1).index_add_(0, words, flat_mask.float())
    size = torch.zeros(n_words + 1).index_add_(0, words, torch.ones(len(words)))
    word_special = torch.zeros(n_words + 1).index_add_(0, words, special.flatten().float()) > 0
    assert ((sel_per_word == 0) | (sel_per_word == size)).all()  # all pieces or none
    assert ((mask_per_word == 0) | (mask_per_word == size)).all()  # 80/10/10 per word
    assert (size[1:][~word_special[1:]] > 1).float().mean() > 0.3  # real multi-piece words
    chosen = sel_per_word[1:][~word_special[1:]] > 0
    n_chosen = int(chosen.sum())
    assert within(n_chosen, len(chosen), 0.15)
    fully_masked = int((mask_per_word[1:][~word_special[1:]] > 0).sum())
    assert within(fully_masked, n_chosen, 0.8)


def test_a_piece_after_a_special_is_its_own_word():
    x = torch.tensor([CLS, 10, SEP, 11, 12])
    cont = continuation_flags(["[CLS]", "##a", "[SEP]", "##b", "##c"])
    masked, labels = mask_whole_words(x, cont, MASK, V, SPECIALS, 1.0, gen(), mask_frac=1.0,
                                      random_frac=0.0)
    assert labels.tolist() == [IGNORE_INDEX, 10, IGNORE_INDEX, 11, 12]
    assert masked.tolist() == [CLS, MASK, SEP, MASK, MASK]


# ---------------------------------------------------------------- SpanBERT spans

def geometric_pmf(p: float, max_span: int, mode: str) -> np.ndarray:
    """Computed here from the definition, independently of lmcourse.masking."""
    k = np.arange(1, max_span + 1)
    pmf = p * (1 - p) ** (k - 1)
    if mode == "truncate":  # renormalised on 1..max_span
        return pmf / pmf.sum()
    pmf[-1] = 1 - pmf[:-1].sum()  # clip: min(len, max_span)
    return pmf


@pytest.mark.parametrize("mode", ["truncate", "clip"])
def test_span_lengths_follow_the_limited_geometric(mode):
    pmf = geometric_pmf(0.2, 10, mode)
    np.testing.assert_allclose(span_length_pmf(0.2, 10, mode).numpy(), pmf, rtol=1e-12)
    n = 200_000
    lengths = sample_span_lengths(n, 0.2, 10, gen(), mode=mode)
    assert lengths.min() >= 1 and lengths.max() <= 10
    counts = np.bincount(lengths.numpy(), minlength=11)[1:]
    for k in range(10):
        assert within(counts[k], n, pmf[k]), (k, counts[k] / n, pmf[k])
    k = np.arange(1, 11)
    mean, sd = (k * pmf).sum(), math.sqrt((k**2 * pmf).sum() - (k * pmf).sum() ** 2)
    assert abs(float(lengths.double().mean()) - mean) < Z * sd / math.sqrt(n)


def test_truncated_and_clipped_means_differ():
    k = np.arange(1, 11)
    truncated = (k * geometric_pmf(0.2, 10, "truncate")).sum()
    clipped = (k * geometric_pmf(0.2, 10, "clip")).sum()
    lengths = sample_span_lengths(50_000, 0.2, 10, gen(1)).double()  # default: SpanBERT's
    assert abs(lengths.mean() - truncated) < abs(lengths.mean() - clipped) - 0.3
    print(f"mean span length: truncated {truncated:.3f}, clipped {clipped:.3f}")


def test_spans_stay_between_specials_and_meet_the_budget():
    g = gen(5)
    length, rows = 2000, 100
    special = torch.rand(rows, length, generator=g) < 0.01  # a special every ~100 tokens
    special[:, 0] = special[:, -1] = True
    pmf = geometric_pmf(0.2, 10, "truncate")
    k = np.arange(1, 11)
    mean, sd = (k * pmf).sum(), math.sqrt((k**2 * pmf).sum() - (k * pmf).sum() ** 2)
    lengths = []
    for r in range(rows):
        spans = choose_spans(special[r], 0.15, 0.2, 10, g)
        covered = torch.zeros(length, dtype=torch.int)
        for start, n in spans:
            assert 1 <= n <= 10
            assert not special[r, start:start + n].any()  # no span contains a special
            covered[start:start + n] += 1
        assert covered.max() <= 1  # no overlap
        n_free = int((~special[r]).sum())
        assert abs(int(covered.sum()) - 0.15 * n_free) < 1  # budget floor(0.15 n + u)
        lengths += [n for _, n in spans[:-1]]  # the last span may be cut to the budget
    assert abs(np.mean(lengths) - mean) < Z * sd / math.sqrt(len(lengths))


def test_spans_fill_fragmented_rows():
    special = torch.tensor([1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1], dtype=torch.bool)
    spans = choose_spans(special, 1.0, 0.2, 10, gen())
    covered = sorted(i for s, n in spans for i in range(s, s + n))
    assert covered == torch.nonzero(~special).flatten().tolist()


def test_mask_spans_per_span_decisions_and_rates(data):
    masked, labels = mask_spans(data, MASK, V, SPECIALS, generator=gen(9))
    special = torch.isin(data, torch.tensor(SPECIALS))
    selected = labels != IGNORE_INDEX
    assert not (selected & special).any()
    assert torch.equal(labels[selected], data[selected])
    assert torch.equal(masked[~selected], data[~selected])
    per_row = selected.sum(1) - 0.15 * (~special).sum(1)
    assert per_row.abs().max() < 1  # about prob of each row's non-special tokens
    kinds = masking_kinds(masked, labels, MASK)
    g = gen(9)  # the same draws again: mask_spans places choose_spans' spans row by row
    n_spans = n_masked = n_random = 0
    for r in range(data.shape[0]):
        spans = choose_spans(special[r], 0.15, 0.2, 10, g)
        assert sum(n for _, n in spans) == int(selected[r].sum())
        for start, n in spans:
            assert selected[r, start:start + n].all()
            span_kinds = kinds[r, start:start + n]
            is_mask = span_kinds == MASKED
            assert is_mask.all() or not is_mask.any()  # decided once per span
            n_spans += 1
            n_masked += bool(is_mask.all())
            n_random += bool((span_kinds == RANDOM).any())
    assert within(n_masked, n_spans, 0.8)
    assert within(n_random, n_spans, 0.1)


def test_mask_spans_one_sequence():
    x = torch.tensor([CLS, *range(10, 40), SEP, *range(40, 70), SEP])
    masked, labels = mask_spans(x, MASK, V, SPECIALS, 0.5, generator=gen())
    assert masked.shape == x.shape
    assert int((labels != IGNORE_INDEX).sum()) in (30, 31)  # 0.5 * 60 = 30 (+ u < 1)
    assert (labels[[0, 31, 62]] == IGNORE_INDEX).all()


# -------------------------------------------------------------- kinds and rates

def test_kinds_and_rates_on_a_hand_made_example():
    x = torch.tensor([CLS, 10, 11, 12, 13, SEP])
    masked = torch.tensor([CLS, MASK, 500, 12, 13, SEP])
    labels = torch.tensor([IGNORE_INDEX, 10, 11, 12, IGNORE_INDEX, IGNORE_INDEX])
    assert masking_kinds(masked, labels, MASK).tolist() == [NOT_SELECTED, MASKED, RANDOM,
                                                            KEPT, NOT_SELECTED, NOT_SELECTED]
    rates = masking_rates(masked, labels, MASK, SPECIALS)
    assert rates["tokens"] == 4 and rates["n_selected"] == 3
    assert rates["selected"] == 0.75
    assert rates["mask"] == rates["random"] == rates["kept"] == pytest.approx(1 / 3)
    assert x.tolist()[1:5] == [10, 11, 12, 13]


# ---------------------------------------------------------- static vs dynamic masking

def test_static_masks_repeat_every_epoch_and_dynamic_ones_do_not(data):
    kw = dict(mask_id=MASK, vocab_size=V, special_ids=SPECIALS)
    static = StaticMasking(data, generator=gen(), **kw)
    e0, e1, e5 = static(0), static(1), static(5)
    assert torch.equal(e0[0], e1[0]) and torch.equal(e0[1], e5[1])
    rows = torch.tensor([3, 1])
    assert torch.equal(static(2, rows)[0], e0[0][rows])
    tenfold = StaticMasking(data, 10, generator=gen(), **kw)  # RoBERTa's duplicated data
    masks = [tenfold(e)[1] for e in range(40)]
    assert all(torch.equal(masks[e], masks[e % 10]) for e in range(40))
    assert len({tuple(m[0].tolist()) for m in masks}) == 10  # ten different masks
    dynamic = DynamicMasking(data, generator=gen(), **kw)
    assert not torch.equal(dynamic(0)[1], dynamic(0)[1])
    spans = static_masks(data[:4], 2, masker=mask_spans, generator=gen(), **kw)
    assert len(spans) == 2 and not torch.equal(spans[0][1], spans[1][1])


def test_replace_80_10_10_hits_the_rates_and_leaves_the_rest(data):
    selected = (torch.rand(data.shape, generator=gen(3)) < 0.5) & ~torch.isin(
        data, torch.tensor(SPECIALS))
    masked, labels = replace_80_10_10(data, selected, MASK, V, SPECIALS, generator=gen())
    n = int(selected.sum())
    assert torch.equal(masked[~selected], data[~selected])  # unselected: untouched
    assert torch.equal(labels != IGNORE_INDEX, selected)
    assert torch.equal(labels[selected], data[selected])
    kinds = masking_kinds(masked, labels, MASK)
    for kind, p in ((MASKED, 0.8), (RANDOM, 0.1 * (1 - 1 / POOL)), (KEPT, 0.1 + 0.1 / POOL)):
        assert within(int((kinds == kind).sum()), n, p), (kind, int((kinds == kind).sum()), n)
    assert not torch.isin(masked[kinds == RANDOM], torch.tensor(SPECIALS)).any()
    unit = torch.zeros_like(data).view(-1)  # one unit: every selected token decides alike
    one = replace_80_10_10(data[:1], selected[:1], MASK, V, SPECIALS, unit=unit[:data.shape[1]],
                           generator=gen())[0]
    changed = one[selected[:1]] == MASK
    assert changed.all() or not changed.any()
    with pytest.raises(ValueError, match="selected must be a bool tensor shaped like"):
        replace_80_10_10(data, selected.long(), MASK, V, SPECIALS)


def test_static_masking_by_visit_counts_each_rows_own_passes(data):
    kw = dict(mask_id=MASK, vocab_size=V, special_ids=SPECIALS)
    static = StaticMasking(data[:4], 3, generator=gen(), **kw)
    width = torch.zeros(2, 7)
    first = static.by_visit([0, 2], width)
    assert first[0].shape == (2, 7) and torch.equal(first[1], static(0, [0, 2])[1][:, :7])
    static.by_visit([2], width)
    assert torch.equal(static.by_visit([2, 0], width)[1],
                       torch.stack([static(2, 2)[1], static(1, 0)[1]])[:, :7])
    assert static.visits[2] == 3 and static.visits[0] == 2 and static.visits[1] == 0


# ------------------------------------------------------------------- pictures

def test_plot_masking_draws_one_box_per_token():
    from lmcourse.viz.masking import plot_masking

    tokens = ["[CLS]", "the", "cat", "sat", "[SEP]"]
    shown = ["[CLS]", "[MASK]", "dog", "sat", "[SEP]"]
    labels = torch.tensor([IGNORE_INDEX, 5, 6, 7, IGNORE_INDEX])
    fig = plot_masking(tokens, shown, labels=labels, title="one draw")
    ax = fig.axes[0]
    boxes = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert len(boxes) == 5
    texts = [t.get_text() for t in ax.texts]
    assert texts[::1][:2] == ["[CLS]", "[MASK]"]
    assert {"the", "cat", "sat"} <= set(texts) and "dog" in texts  # labels below the boxes
    thick = [b.get_linewidth() > 1 for b in boxes]
    assert thick == [False, True, True, True, False]  # predicted positions framed
    colours = {tuple(b.get_facecolor()) for b in boxes}
    assert len(colours) == 4  # not selected, [MASK], random, kept
    assert ax.get_legend() is not None
    plt.close(fig)
    fig = plot_masking(tokens, shown, [0, 1, 2, 3, 0])  # kind codes give the same picture
    assert [tuple(b.get_facecolor()) for b in fig.axes[0].patches] == \
        [tuple(b.get_facecolor()) for b in boxes]
    plt.close(fig)
    with pytest.raises(ValueError, match="kinds"):
        plot_masking(tokens, shown, [0, 1])


def test_plot_masking_rates_shows_the_numbers():
    from lmcourse.viz.masking import plot_masking_rates, target_rates

    measured = {"selected": 0.14, "mask": 0.79, "random": 0.11, "kept": 0.1}
    fig = plot_masking_rates(measured, target_rates(0.15, 0.8, 0.1))
    heights = [round(b.get_height(), 6) for b in fig.axes[0].patches]
    assert heights == [0.14, 0.79, 0.11, 0.1, 0.15, 0.8, 0.1, 0.1]
    plt.close(fig)


def test_masking_figure_rates_track_the_settings():
    from lmcourse.viz.masking import SCHEMES, masking_figure

    fig = masking_figure(prob=0.3, mask_frac=0.6, random_frac=0.2, rate_draws=400)
    assert len(fig.axes) == len(SCHEMES) + 1
    bars = fig.axes[-1].patches
    assert len(bars) == 4 * (len(SCHEMES) + 1)
    selected = [b.get_height() for b in bars[0::4]]  # first bar of each series
    assert selected[-1] == pytest.approx(0.3)  # the target
    assert all(abs(s - 0.3) < 0.05 for s in selected[:-1])
    plt.close(fig)


def test_widget_builds_headless_with_a_wordpiece_tokenizer():
    from lmcourse.pretrained import minilm_path
    from lmcourse.tokenizers import WordPiece
    from lmcourse.viz.masking import encode_for_masking, masking_widget

    wp = WordPiece.from_file(minilm_path() / "vocab.txt")
    text = "the unbelievable tokenization of hypatia"
    example = encode_for_masking(text, wp.tokenize)
    assert example.tokens == ["[CLS]", *wp.tokenize(text), "[SEP]"]
    assert example.input_ids.tolist() == wp.encode(text)
    assert len(example.vocab) == len(wp.vocab)  # random tokens from the real vocabulary
    assert example.is_continuation.any()
    box = masking_widget(text, wp.tokenize, rate_draws=50)
    assert len(box.static_figure.axes) == 4
    controls = box.controls
    for scheme in ("whole word", "span", "token"):
        controls["scheme"].value = scheme
    before = [t.get_text() for t in box.state["figure"].axes[0].texts]
    controls["resample"].click()
    assert box.state["seed"] == 1
    controls["prob"].value = 0.6
    after = [t.get_text() for t in box.state["figure"].axes[0].texts]
    assert before != after
    controls["mask_frac"].value = 0.95  # with random 0.1 too much: a message, no figure
    assert box.state["figure"].axes[0].texts  # the last good figure stays
    controls["text"].value = "a different sentence"
    assert box.state["example"].tokens[1:-1] == wp.tokenize("a different sentence")
    plt.close("all")


def test_widget_accepts_tokens_and_a_hugging_face_tokenizer():
    from lmcourse.pretrained import load_hf_tokenizer
    from lmcourse.viz.masking import encode_for_masking, masking_widget

    box = masking_widget(["my", "own", "token", "##s"], rate_draws=20)
    assert box.state["example"].tokens == ["[CLS]", "my", "own", "token", "##s", "[SEP]"]
    hf = load_hf_tokenizer()
    example = encode_for_masking("masking whole words", hf)
    assert example.input_ids.tolist() == hf("masking whole words")["input_ids"]
    assert example.vocab[example.mask_id] == "[MASK]"
    plt.close("all")


def test_word_spans_never_cut_a_word_and_count_words():
    """SpanBERT's spans are whole words: every span starts at a word's first piece and ends at
    a word's last, its length in words follows the span-length distribution, and about 15% of
    the tokens are selected (a long last word may overshoot by its extra pieces)."""
    g = torch.Generator().manual_seed(3)
    rows, length = 300, 200
    special = torch.zeros(rows, length, dtype=torch.bool)
    special[:, 0] = special[:, -1] = special[:, 90] = True
    cont = torch.rand(rows, length, generator=g) < 0.4  # many multi-piece words
    cont[special] = False
    pmf = geometric_pmf(0.2, 10, "truncate")
    k = np.arange(1, 11)
    mean = (k * pmf).sum()
    words_per_span = []
    for r in range(rows):
        spans = choose_spans(special[r], 0.15, 0.2, 10, g, is_continuation=cont[r])
        covered = torch.zeros(length, dtype=torch.int)
        for start, n in spans:
            assert not cont[r, start] or special[r, start - 1]  # starts a word
            end = start + n
            assert end == length or not cont[r, end] or special[r, end - 1]  # ends one
            assert not special[r, start:end].any()
            covered[start:end] += 1
            words_per_span.append(int((~cont[r, start:end]).sum()))
        assert covered.max() <= 1
        n_free = int((~special[r]).sum())
        longest_word = 1 + max(len(run) for run in "".join(
            "c" if c else " " for c in cont[r].tolist()).split(" "))
        assert 0.15 * n_free - 1 < int(covered.sum()) < 0.15 * n_free + longest_word
    assert abs(np.mean(words_per_span) - mean) < 0.6  # budget cuts pull the mean down a little


def test_mask_spans_with_word_flags_masks_whole_words(data):
    g = torch.Generator().manual_seed(5)
    cont = torch.rand(data.shape, generator=g) < 0.3
    cont[torch.isin(data, torch.tensor(SPECIALS))] = False
    masked, labels = mask_spans(data, MASK, V, SPECIALS, generator=gen(9), is_continuation=cont)
    selected = labels != IGNORE_INDEX
    # a continuation piece is selected exactly when the piece before it is (same word)
    inner = cont[:, 1:] & ~torch.isin(data[:, :-1], torch.tensor(SPECIALS))
    assert torch.equal(selected[:, 1:][inner], selected[:, :-1][inner])
    with pytest.raises(ValueError, match="one flag per token"):
        mask_spans(data, MASK, V, SPECIALS, is_continuation=cont[:, 1:])
