"""Reference rt-tiny-bert: the wiki bench's encoder fine-tuned on the Rotten Tomatoes
snippets beside the same network from scratch (lmcourse.course.reference.rt_tiny_bert)."""

from __future__ import annotations

import pytest
import torch

from lmcourse.course.reference import rt_curve, rt_tiny_bert


def test_it_runs_the_sizes_and_seeds_of_rt_curve_so_the_bag_of_words_is_its_rival():
    recipe = rt_tiny_bert.RT_TINY_RECIPE
    assert rt_tiny_bert.RT_TINY_BERT.seeds == rt_curve.RT_CURVE.seeds
    for seed in rt_curve.RT_CURVE.seeds:
        assert (rt_curve.sizes_for(recipe, seed, 9_295)
                == rt_curve.sizes_for(rt_curve.RT_RECIPE, seed, 9_295))
    assert recipe["draw"] == rt_curve.RT_RECIPE["draw"]


def test_each_arm_runs_at_the_best_rate_of_its_grid():
    for arm in rt_tiny_bert.ARMS:
        tried = rt_tiny_bert.LR_DEV_AUC[arm]
        assert tuple(tried) == rt_tiny_bert.LR_GRID
        assert rt_tiny_bert.CHOSEN_LR[arm] == max(tried, key=tried.get)
    assert rt_tiny_bert.RT_TINY_RECIPE["finetune"]["lr"] == rt_tiny_bert.CHOSEN_LR


def test_the_pretrained_arm_starts_from_the_stored_wiki_encoder_and_scratch_does_not():
    from lmcourse.course.reference.result import load_weights

    stored = load_weights(rt_tiny_bert.ENCODER)
    torch.manual_seed(0)
    pretrained, scratch = (rt_tiny_bert._encoder(arm) for arm in rt_tiny_bert.ARMS)
    table = "embeddings.word_embeddings.weight"
    assert torch.equal(pretrained.state_dict()[table], stored[f"bert.{table}"])
    assert scratch.state_dict()[table].shape == stored[f"bert.{table}"].shape
    assert not torch.allclose(scratch.state_dict()[table], stored[f"bert.{table}"])
    with pytest.raises(ValueError, match="unknown arm"):
        rt_tiny_bert._encoder("frozen")


def test_snippets_are_encoded_in_the_wiki_vocabulary():
    from lmcourse.course.reference.pretraining_eval import _data

    ids, mask = rt_tiny_bert._encoded("test")
    assert len(ids) == len(rt_curve.rt_task()[0].test_texts) and ids.shape == mask.shape
    unk = _data("wiki").corpus.pieces.index("[UNK]")
    assert (ids[mask.bool()] == unk).float().mean() < 0.01


def test_rt_prose_bert_differs_from_rt_tiny_bert_in_its_encoder_and_rates_only():
    prose, tiny = rt_tiny_bert.RT_PROSE_RECIPE, rt_tiny_bert.RT_TINY_RECIPE
    changed = sorted(k for k in set(prose) | set(tiny) if prose.get(k) != tiny.get(k))
    assert changed == ["curve_x", "encoder", "encoder_reference", "features", "finetune",
                       "large_sizes_seeds", "name", "sizes"]
    assert {k: v for k, v in prose["finetune"].items() if k != "lr"} == {
        k: v for k, v in tiny["finetune"].items() if k != "lr"}
    assert rt_tiny_bert.RT_PROSE_BERT.seeds == (0, 1, 2, 3, 4)  # five seeds at <= 1,024 labels
    assert max(prose["sizes"]) == 1024
    for arm in rt_tiny_bert.ARMS:
        tried = rt_tiny_bert.PROSE_LR_DEV_AUC[arm]
        assert tuple(tried) == rt_tiny_bert.LR_GRID
        assert prose["finetune"]["lr"][arm] == max(tried, key=tried.get)


def test_the_prose_arms_start_from_the_scaled_encoder_and_its_shape():
    from lmcourse.course.reference.result import load_weights

    name = rt_tiny_bert.PROSE_ENCODER
    stored = load_weights(name)
    torch.manual_seed(0)
    pretrained, scratch = (rt_tiny_bert._encoder(arm, name) for arm in rt_tiny_bert.ARMS)
    table = "embeddings.word_embeddings.weight"
    assert torch.equal(pretrained.state_dict()[table], stored[f"bert.{table}"])
    assert ({k: v.shape for k, v in scratch.state_dict().items()}
            == {k: v.shape for k, v in pretrained.state_dict().items()})
    ids, mask = rt_tiny_bert.snippets("test", rt_tiny_bert.RT_PROSE_RECIPE)
    assert ids.shape == (len(rt_curve.rt_task()[0].test_texts), 64) and mask.shape == ids.shape
    assert int(ids.max()) < stored[f"bert.{table}"].shape[0]


def test_rt_prose_tiny_bert_differs_from_rt_tiny_bert_in_its_encoder_rates_and_control_only():
    ours, tiny = rt_tiny_bert.RT_PROSE_TINY_RECIPE, rt_tiny_bert.RT_TINY_RECIPE
    changed = sorted(k for k in set(ours) | set(tiny) if ours.get(k) != tiny.get(k))
    assert changed == ["encoder", "encoder_reference", "features", "finetune", "lr_grid",
                       "name", "random_features"]
    assert {k: v for k, v in ours["finetune"].items() if k != "lr"} == {
        k: v for k, v in tiny["finetune"].items() if k != "lr"}
    assert rt_tiny_bert.RT_PROSE_TINY_BERT.seeds == rt_tiny_bert.RT_TINY_BERT.seeds
    for arm in rt_tiny_bert.ARMS:
        tried = rt_tiny_bert.PROSE_TINY_LR_DEV_AUC[arm]
        assert tuple(tried) == rt_tiny_bert.PROSE_TINY_LR_GRID == tuple(ours["lr_grid"])
        assert ours["finetune"]["lr"][arm] == max(tried, key=tried.get)
        assert min(tried) < ours["finetune"]["lr"][arm] < max(tried)  # inside its grid


def test_an_encoder_pre_trained_in_the_run_replays_its_own_pre_training():
    from lmcourse.course.reference import load

    name = rt_tiny_bert.BENCH_PROSE_ENCODER
    replay = rt_tiny_bert._pretraining_opening(name, 3).train_loss
    committed = load(name).first_losses()[:3]  # prose-bench-mlm's own reference run
    assert len(replay) == 3
    assert max(abs(a - b) / b for a, b in zip(replay, committed, strict=True)) < 2e-3
    with pytest.raises(ValueError, match="not pre-trained in the run"):
        rt_tiny_bert.pretrained_here("wiki-bench-mlm")


def test_the_random_control_is_the_scratch_shape_untrained_and_drawn_with_the_seed():
    from lmcourse.course.reference.bench_arms import build_model

    name = rt_tiny_bert.BENCH_PROSE_ENCODER
    torch.manual_seed(0)
    scratch = rt_tiny_bert._encoder("scratch", name)
    assert ({k: v.shape for k, v in scratch.state_dict().items()}
            == {k: v.shape for k, v in build_model(name).bert.state_dict().items()})
    ids, _ = rt_tiny_bert.snippets("tuning", rt_tiny_bert.RT_PROSE_TINY_RECIPE)
    first, again, other = (rt_tiny_bert._random_vectors("tuning", name, 64, seed)
                           for seed in (0, 0, 1))
    assert first.shape == (len(ids), 128) and torch.equal(first, again)
    assert not torch.allclose(first, other)


def test_an_encoder_pre_trained_in_the_run_is_cached_with_its_losses(tmp_path, monkeypatch):
    from lmcourse.course.reference import bench_arms

    full = bench_arms._pretrain_arm
    monkeypatch.setenv("LMCOURSE_CACHE", str(tmp_path))
    monkeypatch.setattr(bench_arms, "_pretrain_arm",  # two steps stand in for 4,000
                        lambda *args, **kwargs: full(*args, **{**kwargs, "stop_after": 2}))
    name = rt_tiny_bert.BENCH_PROSE_ENCODER
    first = rt_tiny_bert.pretrained_here(name)
    assert len(first["losses"]) == 2 and len(list(tmp_path.glob("*.safetensors"))) == 1
    monkeypatch.setattr(bench_arms, "_pretrain_arm", None)  # a second call reads the cache
    again = rt_tiny_bert.pretrained_here(name)
    assert all(torch.equal(first[k], again[k]) for k in first)
    encoder = rt_tiny_bert._encoder("pretrained", name)
    table = "embeddings.word_embeddings.weight"
    assert torch.equal(encoder.state_dict()[table], first[f"bert.{table}"])
