"""Greedy, temperature and top-k sampling (``lmcourse.sampling``)."""

import pytest
import torch

from lmcourse.data import Vocab
from lmcourse.models.rnn import RNNLM
from lmcourse.models.transformer import TransformerLM
from lmcourse.sampling import generate, next_token_distribution, sample_next

LOGITS = torch.tensor([0.3, 2.0, -1.0, 1.5, 0.0, 1.9])


def test_greedy_is_the_argmax():
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        z = torch.randn(30, generator=g)
        assert sample_next(z, temperature=0) == int(z.argmax())


def test_distribution_is_softmax_of_z_over_t():
    for T in (0.5, 1.0, 3.0):
        p = next_token_distribution(LOGITS, T)
        want = torch.exp(LOGITS.double() / T) / torch.exp(LOGITS.double() / T).sum()
        assert torch.allclose(p, want, atol=1e-15)


def test_top_k_renormalises_the_k_largest_and_never_samples_outside_them():
    k = 3
    top = set(LOGITS.topk(k).indices.tolist())  # {1, 5, 3}
    p = next_token_distribution(LOGITS, 1.0, top_k=k)
    full = next_token_distribution(LOGITS, 1.0)
    assert {i for i in range(len(p)) if p[i] > 0} == top
    assert p.sum().item() == pytest.approx(1.0)
    idx = sorted(top)
    assert torch.allclose(p[idx], full[idx] / full[idx].sum())
    g = torch.Generator().manual_seed(0)
    draws = {sample_next(LOGITS, 2.0, top_k=k, generator=g) for _ in range(500)}
    assert draws == top  # every one of the top k appears, nothing else does
    assert next_token_distribution(LOGITS, 1.0, top_k=1).argmax() == LOGITS.argmax()
    with pytest.raises(ValueError, match="top_k"):
        next_token_distribution(LOGITS, 1.0, top_k=0)


def test_low_temperature_approaches_greedy():
    g = torch.Generator().manual_seed(0)
    p_max = [next_token_distribution(LOGITS, T).max().item() for T in (1.0, 0.3, 0.1, 0.01)]
    assert p_max == sorted(p_max) and p_max[-1] > 0.999
    draws = [sample_next(LOGITS, 0.01, generator=g) for _ in range(200)]
    assert draws == [int(LOGITS.argmax())] * 200
    with pytest.raises(ValueError, match="temperature"):
        next_token_distribution(LOGITS, -1.0)


def test_seeded_sampling_is_deterministic_and_seeds_differ():
    g1, g2 = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    s1 = [sample_next(LOGITS, 1.5, top_k=4, generator=g1) for _ in range(50)]
    s2 = [sample_next(LOGITS, 1.5, top_k=4, generator=g2) for _ in range(50)]
    g3 = torch.Generator().manual_seed(8)
    s3 = [sample_next(LOGITS, 1.5, top_k=4, generator=g3) for _ in range(50)]
    assert s1 == s2 and s1 != s3


@pytest.mark.parametrize("kind", ["rnn", "transformer"])
def test_generate_with_a_recurrent_and_a_stateless_model(kind):
    torch.manual_seed(0)
    vocab = Vocab(list("abcdefgh "))
    model = (RNNLM(len(vocab), 16) if kind == "rnn"
             else TransformerLM(len(vocab), 16, 2, 1, 32, max_len=6))
    out = generate(model, vocab, "abc", 20, temperature=0.8, top_k=3,
                   generator=torch.Generator().manual_seed(1))
    again = generate(model, vocab, "abc", 20, temperature=0.8, top_k=3,
                     generator=torch.Generator().manual_seed(1))
    assert out == again and out.startswith("abc") and len(out) == 23
    # greedy decoding by hand: argmax of the logits given the context read so far
    greedy = generate(model, vocab, "abc", 8, temperature=0)
    ids = vocab.encode(list("abc"))
    for _ in range(8):
        ctx = ids if kind == "rnn" else ids[-6:]  # the transformer sees its last max_len tokens
        with torch.no_grad():
            ids.append(int(model(torch.tensor([ctx]))[0][0, -1].argmax()))
    assert greedy == "abc" + vocab.decode(ids[3:], sep="")
