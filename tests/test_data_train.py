"""lmcourse.data (corpora, Vocab, LM batches) and lmcourse.train (perplexity, clipping, BPTT)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from lmcourse.data import Vocab, lm_batches, load_corpus, tokenize
from lmcourse.train import (
    clip_gradients,
    detach_state,
    evaluate_lm,
    grad_norm,
    lm_loss,
    perplexity,
)

# ---- corpora --------------------------------------------------------------------------------


def test_lee_corpus_is_real_english_text():
    docs = load_corpus("lee")
    assert len(docs) == len(set(docs)) == 293  # the file holds 300 lines, 7 of them twice
    text = " ".join(docs)
    assert len(text) > 300_000
    words = tokenize(text)
    common = {w for w, _ in Vocab(words).counts.most_common(10)}
    assert {"the", "of", "to"} <= common


def test_each_document_comes_once_and_in_the_files_order(monkeypatch, tmp_path):
    import lmcourse.data.corpora as corpora

    path = tmp_path / "lee_background.cor"
    path.write_text("b first\n\na second\nb first\n c third \na second\n")
    monkeypatch.setattr(corpora, "gensim_file", lambda name: path)
    assert load_corpus("lee") == ["b first", "a second", "c third"]


def test_document_split_holds_out_whole_documents():
    from lmcourse.data import document_split

    docs = ["a" * 40, "b" * 30, "c" * 20, "d" * 10]
    text = "\n".join(docs)
    cut = document_split(text, 0.8)
    assert text[:cut].split() == docs[:3] and text[cut:] == docs[3]
    assert cut >= 0.8 * len(text)
    assert document_split(text, len(docs[0]) / len(text) - 0.01) == len(docs[0]) + 1
    for fraction in (0, 1, 1.5):
        with pytest.raises(ValueError, match="strictly between 0 and 1"):
            document_split(text, fraction)
    with pytest.raises(ValueError, match="no document starts"):
        document_split("one long document without a newline", 0.5)


def test_the_lee_splits_share_no_article():
    from lmcourse.course.reference.bilm_lee import lee_windows
    from lmcourse.course.reference.lm_char import char_split
    from lmcourse.data import document_split

    docs = [d.lower() for d in load_corpus("lee")]
    text = "\n".join(docs)
    cut = document_split(text)
    train, held = set(text[:cut].split("\n")) - {""}, set(text[cut:].split("\n"))
    assert not train & held and 0.08 < len(text[cut:]) / len(text) < 0.12
    tr, ho, _ = char_split()
    assert len(ho) == len(text) - cut
    tune_train, tune, _ = char_split("tuning")
    assert len(tune_train) + len(tune) == len(tr) and abs(len(tune) - len(ho)) < 3_000
    windows = lee_windows()
    assert windows["train"][1] == windows["held_out"][0]
    assert windows["held_out"][1] - windows["held_out"][0] > 0.08 * len(windows["windows"])


def test_unknown_corpus_name_raises():
    with pytest.raises(ValueError, match="unknown corpus"):
        load_corpus("wikipedia")


def test_missing_gensim_says_how_to_install_it(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "gensim.test.utils", None)  # import now fails
    with pytest.raises(ImportError, match="gensim is not installed.*make lab"):
        load_corpus("lee")


def test_missing_corpus_file_says_how_to_repair_gensim(monkeypatch, tmp_path):
    import gensim.test.utils

    monkeypatch.setattr(gensim.test.utils, "datapath", lambda name: str(tmp_path / name))
    with pytest.raises(FileNotFoundError, match="force-reinstall"):
        load_corpus("lee")


def test_tokenize_lowercases_and_drops_punctuation():
    assert tokenize("It's 9pm. The END!") == ["it's", "9pm", "the", "end"]


# ---- vocabulary -----------------------------------------------------------------------------


def test_vocab_encode_decode_round_trip():
    text = "the cat sat on the mat the end".split()
    vocab = Vocab(text, reserved=["<pad>"])
    assert vocab.itos[:3] == ["<unk>", "<pad>", "the"]  # reserved first, then by frequency
    assert vocab.decode(vocab.encode(text), sep=" ") == " ".join(text)
    assert len(vocab) == 2 + len(set(text))
    assert "cat" in vocab and "dog" not in vocab


def test_vocab_unknown_tokens_and_min_freq():
    tokens = list("aaabbc")
    vocab = Vocab(tokens, min_freq=2)
    assert vocab.itos == ["<unk>", "a", "b"]
    assert vocab.encode(["a", "c", "z", "b"]) == [1, vocab.unk_id, vocab.unk_id, 2]
    assert vocab.decode([1, 0, 2]) == "a<unk>b"


def test_vocab_ties_are_alphabetical():
    vocab = Vocab(list("bbaacd"))
    assert vocab.itos == ["<unk>", "a", "b", "c", "d"]


# ---- minibatches ----------------------------------------------------------------------------

CORPUS = list(range(1000))  # token i has id i, so positions are easy to read off


@pytest.mark.parametrize("sequential", [True, False])
def test_targets_are_inputs_shifted_by_one(sequential):
    g = torch.Generator().manual_seed(0)
    batches = lm_batches(CORPUS, 4, 7, sequential=sequential, generator=g)
    assert batches
    for x, y in batches:
        assert x.shape == y.shape == (4, 7)
        assert torch.equal(y, x + 1)
        assert torch.equal(x[:, 1:], x[:, :-1] + 1)  # each row is a contiguous piece


def test_sequential_rows_continue_across_minibatches():
    batches = lm_batches(CORPUS, 4, 7, sequential=True, generator=torch.Generator().manual_seed(1))
    assert len(batches) > 2
    for (x1, _), (x2, _) in zip(batches, batches[1:], strict=False):
        assert torch.equal(x2[:, 0], x1[:, -1] + 1)  # row b picks up where it stopped


def test_random_partition_does_not_repeat_subsequences():
    g = torch.Generator().manual_seed(2)
    batches = lm_batches(CORPUS, 4, 7, sequential=False, generator=g)
    starts = torch.cat([x[:, 0] for x, _ in batches]).tolist()
    assert len(set(starts)) == len(starts)
    assert len({s % 7 for s in starts}) == 1  # all on the same grid of offset + k * num_steps
    neighbours = [int(b[0][0, 0]) for b in batches[:2]]
    assert neighbours[1] != neighbours[0] + 7  # not simply consecutive


@pytest.mark.parametrize("sequential", [True, False])
def test_every_offset_leaves_a_batch_at_the_minimum_length(sequential):
    batch_size, num_steps = 3, 5
    corpus = list(range((batch_size + 1) * num_steps))
    for seed in range(30):
        g = torch.Generator().manual_seed(seed)
        assert lm_batches(corpus, batch_size, num_steps, sequential=sequential, generator=g)


@pytest.mark.parametrize("sequential", [True, False])
def test_too_short_corpus_raises_a_clear_error(sequential):
    with pytest.raises(ValueError, match="too short"):
        lm_batches(list(range(20)), 4, 5, sequential=sequential)
    # one token short of (batch_size + 1) * num_steps: some random offsets would leave
    # no batch at all (an empty epoch), so it is refused up front
    with pytest.raises(ValueError, match="at least 25"):
        lm_batches(list(range(24)), 4, 5, sequential=sequential)
    with pytest.raises(ValueError, match=">= 1"):
        lm_batches(CORPUS, 0, 5, sequential=sequential)


# ---- training helpers -----------------------------------------------------------------------


class Uniform(nn.Module):
    """A language model that gives every one of V tokens the same probability."""

    def __init__(self, vocab_size: int):
        super().__init__()
        self.vocab_size = vocab_size
        self.dummy = nn.Parameter(torch.zeros(()))

    def forward(self, x, state=None):
        return torch.zeros(*x.shape, self.vocab_size) + 0 * self.dummy, state


@pytest.mark.parametrize("vocab_size", [2, 27, 1000])
def test_perplexity_of_a_uniform_model_is_the_vocabulary_size(vocab_size):
    torch.manual_seed(0)
    x = torch.randint(vocab_size, (3, 11))
    y = torch.randint(vocab_size, (3, 11))
    model = Uniform(vocab_size)
    assert lm_loss(model(x)[0], y).item() == pytest.approx(math.log(vocab_size))
    assert perplexity(math.log(vocab_size)) == pytest.approx(vocab_size)
    assert evaluate_lm(model, [(x, y), (y, x)]) == pytest.approx(vocab_size)


def test_perplexity_does_not_overflow():
    assert math.isfinite(perplexity(1e6))


def _params_with_grads(*grads):
    params = []
    for g in grads:
        p = nn.Parameter(torch.zeros_like(g))
        p.grad = g.clone()
        params.append(p)
    return params


def test_clip_gradients_rescales_to_the_threshold_and_keeps_direction():
    torch.manual_seed(0)
    grads = [torch.randn(3, 4) * 10, torch.randn(5) * 10]
    params = _params_with_grads(*grads)
    norm_before = torch.cat([g.flatten() for g in grads]).norm().item()
    returned = clip_gradients(params, 1.0)
    assert returned == pytest.approx(norm_before)
    assert grad_norm(params) == pytest.approx(1.0)
    for p, g in zip(params, grads, strict=True):
        assert torch.allclose(p.grad, g * (1.0 / norm_before), atol=1e-6)


def test_clip_gradients_leaves_small_gradients_alone():
    grads = [torch.tensor([0.3, -0.4])]  # norm 0.5
    params = _params_with_grads(*grads)
    assert clip_gradients(params, 1.0) == pytest.approx(0.5)
    assert torch.equal(params[0].grad, grads[0])


def test_detach_state_cuts_the_graph():
    w = torch.ones(3, requires_grad=True)
    h = w * 2
    c = w * 3
    assert detach_state(None) is None
    cut = detach_state(h)
    assert not cut.requires_grad and cut.grad_fn is None and torch.equal(cut, h)
    h2, c2 = detach_state((h, c))
    assert h2.grad_fn is None and c2.grad_fn is None
    # the loss after the cut sends no gradient back through the state
    loss = (cut * w).sum()
    loss.backward()
    assert torch.equal(w.grad, h.detach())  # only the direct path, not d(h)/dw
