"""lmcourse.data.wiki: the Wikipedia excerpt, cleaned and split by article."""

from __future__ import annotations

import math

import pytest
import torch

from lmcourse.data import load_corpus
from lmcourse.data.wiki import PARTS, clean_wiki_text, wiki_articles, wiki_split, wiki_text


def test_markup_left_by_filter_wiki_is_stripped_as_documented():
    raw = "'''A''' is ''the'' first  letter.\n\n\n\n==History==\n  Egyptian \n=== Sub ===\nx"
    assert clean_wiki_text(raw) == "A is the first letter.\n\nHistory\nEgyptian\nSub\nx"


def test_the_excerpt_is_about_three_million_characters_of_articles():
    articles = wiki_articles()
    assert len(articles) > 100 and len({t for t, _ in articles}) == len(articles)
    assert 2.5e6 < sum(len(text) for _, text in articles) < 3.5e6
    assert not any("'''" in text or "==" in text for _, text in articles)
    assert load_corpus("wiki") == [text for _, text in articles]


def test_split_is_by_article_disjoint_complete_and_sized():
    split = wiki_split()
    titles = [t for part in PARTS for t in split[part]]
    assert len(titles) == len(set(titles)) == len(wiki_articles())
    total = sum(len(text) for _, text in wiki_articles())
    for part in ("tuning", "held_out"):
        share = sum(len(text) for t, text in wiki_articles() if t in split[part]) / total
        assert 0.1 <= share < 0.2, (part, share)
    assert wiki_text("held_out") == wiki_text("held_out").lower()
    with pytest.raises(ValueError, match="part must be one of"):
        wiki_text("test")


def test_network_and_ngram_are_scored_on_the_same_characters():
    from lmcourse.course.reference.lm_scale import stream_perplexities, streams
    from lmcourse.models.gated import GatedLM
    from lmcourse.models.ngram import NGramLM
    from lmcourse.models.ngram_tuning import NGramCounts, NGramSetting

    gen = torch.Generator().manual_seed(0)
    train, held = torch.randint(0, 7, (3000,), generator=gen), torch.randint(0, 7, (1000,),
                                                                             generator=gen)
    model = GatedLM(7, 16, cell="lstm", num_layers=1, embed=8, impl="torch")
    setting = NGramSetting(3, 0.8)
    out = stream_perplexities(model, NGramCounts(train, 7, 3), setting, held)
    rows = streams(held)
    assert out["network_scored"] == out["ngram_scored"] == rows.numel() - rows.shape[0]
    # the n-gram side equals the readable model reading each stream alone, first unscored
    lm = NGramLM(3, 7, 0.8).fit(train)
    nll = -sum(lm.log_prob(row) - lm.log_prob(row[:1]) for row in rows.numpy())
    assert out["ngram"] == pytest.approx(math.exp(nll / out["ngram_scored"]), rel=1e-9)


def test_the_transformer_reads_the_same_characters_as_the_ngram():
    """No state to carry: each stream is read in windows of 128 moved 64 at a time
    (``windowed_nll``, tested in test_reference), and exactly the characters the n-gram
    scores are scored."""
    from lmcourse.course.reference.lm_scale import stream_perplexities, streams
    from lmcourse.models.ngram_tuning import NGramCounts, NGramSetting
    from lmcourse.models.transformer import TransformerLM

    gen = torch.Generator().manual_seed(0)
    train, held = (torch.randint(0, 7, (n,), generator=gen) for n in (3000, 32 * 300))
    model = TransformerLM(7, 16, 2, 1, 32, max_len=128)
    out = stream_perplexities(model, NGramCounts(train, 7, 3), NGramSetting(3, 0.8), held)
    rows = streams(held)
    assert out["network_scored"] == out["ngram_scored"] == rows.numel() - rows.shape[0]


def test_the_scale_references_match_in_parameters_and_tokens():
    from lmcourse.course.reference.lm_scale import SCALE_REFS, build_model

    sizes = {name: sum(p.numel() for p in build_model(ref.recipe).parameters())
             for name, ref in SCALE_REFS.items() if name.endswith("-full")}
    assert max(sizes.values()) / min(sizes.values()) < 1.01, sizes
    for converged in (False, True):  # the GPU runs without the CPU's step cap differ in it
        shape = {(ref.recipe["batch"], ref.recipe["bptt"], ref.recipe["max_steps"],
                  ref.recipe["patience"], ref.recipe["eval_every"])
                 for name, ref in SCALE_REFS.items() if name.endswith("-converged") == converged}
        assert len(shape) == 1  # the same batches, budget and stopping rule for every network


def test_a_stopped_scale_run_resumes_from_its_checkpoint_and_ends_the_same(tmp_path,
                                                                             monkeypatch):
    """A run killed between two tuning evaluations restarts from the last one and follows
    the same steps (losses, curve, result) as a run that was never stopped; a finished run
    leaves no checkpoint behind."""
    from lmcourse.course.reference import lm_scale

    monkeypatch.setenv("LMCOURSE_CACHE", str(tmp_path))
    recipe = {**lm_scale.recipe_for("lstm", "300k"), "hidden": 16, "embed": 8, "layers": 2,
              "batch": 4, "bptt": 16, "eval_every": 4, "max_steps": 10, "patience": 9,
              "warmup_steps": 2, "train_chars": 4000}
    cpu = torch.device("cpu")
    whole = lm_scale.train(recipe, 0, cpu, progress=False, name="whole")
    real, calls = lm_scale.lm_train_step, []

    def dies_at_step_7(*args, **kwargs):
        calls.append(1)
        if len(calls) == 7:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(lm_scale, "lm_train_step", dies_at_step_7)
    with pytest.raises(KeyboardInterrupt):
        lm_scale.train(recipe, 0, cpu, progress=False, name="cut")
    assert lm_scale.checkpoint_path("cut", 0).exists()  # written at step 4
    trained = []

    def counted(*args, **kwargs):
        trained.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(lm_scale, "lm_train_step", counted)
    resumed = lm_scale.train(recipe, 0, cpu, progress=False, name="cut")
    assert len(trained) == 10 - 4  # steps 5 to 10 only: it resumed, it did not restart
    assert resumed.train_loss == pytest.approx(whole.train_loss, rel=1e-6)
    assert [c[0::2] for c in resumed.curve] == [c[0::2] for c in whole.curve]
    assert resumed.metrics["held_out_ppl"] == whole.metrics["held_out_ppl"]
    assert not lm_scale.checkpoint_path("cut", 0).exists()
    # a checkpoint of another recipe is not used
    lm_scale._save_checkpoint(lm_scale.checkpoint_path("other", 0), {"x": 1}, {"step": 3})
    assert lm_scale._load_checkpoint(lm_scale.checkpoint_path("other", 0), recipe) is None
