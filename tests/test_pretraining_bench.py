"""The pre-training references (chapters 09-11): one change per arm, equal budgets where the
chapter says so, and the static masker that the static-vs-dynamic comparison rests on."""

from __future__ import annotations

import re

import pytest
import torch

from lmcourse.course.reference import bench_arms as pb
from lmcourse.course.reference.report import bench_table, seed_values
from lmcourse.models.compress import count_params
from lmcourse.models.pretraining import BertForPreTraining


def _differences(name: str, against: str) -> set[str]:
    a, b = pb.BENCH_REFS[name].recipe, pb.BENCH_REFS[against].recipe
    return {k for k in set(a) | set(b) if a.get(k) != b.get(k)}


@pytest.mark.parametrize("name", sorted(pb.ARMS))
def test_each_arm_changes_what_its_title_says_and_nothing_else(name):
    if name == "bench-mlm":
        assert pb.BENCH_REFS[name].recipe == pb.BENCH
        return
    against = ("bench-deberta" if name.startswith("bench-deberta-")
               else "bench-dynamic-40" if name.startswith("bench-static") else "bench-mlm")
    allowed = {"bench-nsp": {"objective"}, "bench-sop": {"objective", "pairs"},
               "bench-dynamic-40": {"train_pairs"}, "bench-static-40": {"masking"},
               "bench-static10-40": {"masking"}, "bench-albert-e32": {"embedding_size"},
               "bench-albert-shared": {"share_layers"},
               "bench-albert": {"embedding_size", "share_layers"},
               "bench-data-25": {"train_pairs"}, "bench-data-50": {"train_pairs"},
               "bench-steps-8000": {"steps"},
               "bench-width-32": {"hidden_size", "intermediate_size"},
               "bench-width-128": {"hidden_size", "intermediate_size"},
               "bench-warmup-20": {"warmup"},
               "bench-batch-256": {"batch", "steps", "lr", "warmup"},
               "bench-batch-256-sqrt": {"batch", "steps", "lr", "warmup"},
               "bench-span": {"masking"},
               "bench-span-sbo": {"masking", "objective"},
               "bench-electra": {"objective", "generator_hidden", "electra_weight", "steps"},
               "bench-deberta": {"model", "k", "terms", "emd", "intermediate_size"},
               "bench-deberta-no-emd": {"emd"}, "bench-deberta-no-c2p": {"terms"},
               "bench-deberta-no-p2c": {"terms"}}
    if name.startswith("bench-deberta-"):  # the width is written "as bench-deberta"
        assert pb.BENCH_REFS[name].recipe["intermediate_size"] == "as bench-deberta"
        allowed[name] = allowed[name] | {"intermediate_size"}
    assert _differences(name, against) == allowed[name]


@pytest.mark.parametrize("name", ["bench-width-32", "bench-mlm", "bench-width-128"])
def test_the_width_arms_build_the_width_they_name(name):
    recipe = pb.BENCH_REFS[name].recipe
    model = pb.build_model(name)
    layer = model.bert.encoder.layer[0]
    assert layer.attention.self.query.weight.shape == (recipe["hidden_size"],) * 2
    assert layer.intermediate.dense.out_features == recipe["intermediate_size"]
    assert pb.step_flops(name) > 0 and (name != "bench-width-128"
                                        or pb.step_flops(name) > 3 * pb.step_flops("bench-mlm"))


def test_the_large_batch_sees_as_many_pairs_with_roberta_s_learning_rate_ratio():
    big, base = pb.BENCH_REFS["bench-batch-256"].recipe, pb.BENCH
    assert big["batch"] * big["steps"] == base["batch"] * base["steps"]
    assert big["lr"] / base["lr"] == pytest.approx(7e-4 / 1e-4)  # RoBERTa: 256 -> 2K
    sqrt = pb.BENCH_REFS["bench-batch-256-sqrt"].recipe
    assert sqrt["batch"] * sqrt["steps"] == base["batch"] * base["steps"]
    assert sqrt["lr"] / base["lr"] == pytest.approx(8 ** 0.5, rel=1e-3)


def test_electra_trains_at_the_masked_lm_s_flops():
    total_mlm = pb.BENCH["steps"] * pb.step_flops("bench-mlm")
    total_electra = pb.electra_steps() * pb.step_flops("bench-electra")
    assert abs(total_electra / total_mlm - 1) < 1e-3
    assert pb.electra_steps() < pb.BENCH["steps"]  # a step runs two networks


def test_deberta_arms_match_bert_s_parameters_and_differ_only_in_one_part():
    bert = count_params(BertForPreTraining(pb.bench_config()))
    full = count_params(pb.build_model("bench-deberta"))
    per_unit = 2 * (2 * pb.BENCH["hidden_size"] + 1)  # one feed-forward unit, both layers
    assert abs(full - bert) <= per_unit / 2 + 1
    no_emd = pb.build_model("bench-deberta-no-emd")
    assert full - count_params(no_emd) == pb.BENCH["max_len"] * pb.BENCH["hidden_size"]
    for name, terms in (("bench-deberta-no-c2p", ("c2c", "p2c")),
                        ("bench-deberta-no-p2c", ("c2c", "c2p"))):
        model = pb.build_model(name)
        assert count_params(model) == full
        assert {layer.terms for layer in model.deberta.layer} == {terms}
        assert model.emd.layer is model.deberta.layer[-1]


def test_the_static_masker_repeats_one_mask_or_cycles_through_ten(monkeypatch):
    from lmcourse.course.reference import bench_arms

    pairs = pb.train_pairs("bench-static-40")[:4]
    ids = torch.full((2, pb.BENCH["max_len"]), 9)  # only the width is read
    maskers = {}
    for copies in (1, 10):
        settings = dict(bench_arms._settings("bench-static10-40"),
                        masking=f"static, {copies} copies")
        monkeypatch.setattr(bench_arms, "_settings", lambda name, s=settings: s)
        maskers[copies] = bench_arms._masker("bench-static10-40", pairs, seed=0)
    one, ten = maskers[1], maskers[10]
    first = one([0, 1], ids)
    assert all(torch.equal(a, b) for a, b in zip(first, one([0, 1], ids), strict=True))
    seen = [ten([2], ids)[1] for _ in range(11)]
    assert not all(torch.equal(seen[0], s) for s in seen[1:10])  # ten different masks
    assert torch.equal(seen[0], seen[10])  # the eleventh visit is the first mask again
    assert ten.__self__.visits[2] == 11 and ten.__self__.visits[0] == 0


@pytest.mark.parametrize("masking, copies", [("static, 1 copy", 1), ("static, 3 copies", 3),
                                             ("static, 10 copies", 10), ("static", 1)])
def test_a_static_arm_gets_the_number_of_copies_its_masking_names(masking, copies, monkeypatch):
    from lmcourse.course.reference import bench_arms

    settings = dict(bench_arms._settings("bench-static10-40"), masking=masking)
    monkeypatch.setattr(bench_arms, "_settings", lambda name: settings)
    pairs = pb.train_pairs("bench-static-40")[:4]
    assert len(bench_arms._masker("bench-static10-40", pairs, seed=0).__self__.masks) == copies


def test_small_arms_train_on_the_first_pairs_only_and_sop_on_sop_pairs():
    assert len(pb.train_pairs("bench-static-40")) == pb.SMALL_PAIRS
    assert pb.train_pairs("bench-static-40") == pb.train_pairs("bench-dynamic-40")
    assert pb.train_pairs("bench-mlm") is pb.bench().train_pairs
    sop = pb.train_pairs("bench-sop")
    assert len(sop) == len(pb.train_pairs("bench-nsp")) and sop != pb.train_pairs("bench-nsp")


def test_the_tables_read_the_committed_runs():
    table = bench_table({"base": "bench-mlm", "NSP": "bench-nsp"},
                           {"parameters": "params", "nsp_accuracy": "NSP"})
    lines = table.splitlines()
    assert len(lines) == 3 and lines[1].split()[-1] == "-"  # bench-mlm has no NSP head
    values = seed_values("bench-nsp", "nsp_accuracy")
    mean = sum(values) / len(values)
    assert f"{mean:.3f}" in lines[2]


def test_a_rival_row_puts_each_figure_under_its_own_column_whatever_the_labels():
    rival = "a rival whose label is longer than the width asked for"
    table = bench_table({"base": "bench-mlm"}, {"parameters": "params", "mlm_loss": "loss",
                                                "masked_accuracy": "accuracy"},
                        width=10, rivals={rival: {"masked_accuracy": 0.5, "mlm_loss": 2.25}})
    header, arm, row = table.splitlines()
    assert row.startswith(rival) and len(header) == len(arm) == len(row)
    for figure, heading in (("0.500", "accuracy"), ("2.250", "loss")):
        assert row.index(figure) + len(figure) == header.index(heading) + len(heading)
    assert row[len(rival):header.index("params") + len("params")].strip() == ""
    with pytest.raises(KeyError, match="not columns"):
        bench_table({"base": "bench-mlm"}, {"mlm_loss": "loss"}, rivals={"r": {"span": 1.0}})


def test_building_an_arm_draws_the_same_weights_whatever_was_built_before():
    pb.deberta_intermediate.cache_clear()
    torch.manual_seed(0)
    cold = pb.build_model("bench-deberta-no-p2c").state_dict()  # the width is searched here
    torch.manual_seed(0)
    warm = pb.build_model("bench-deberta-no-p2c").state_dict()  # and read from the cache here
    assert all(torch.equal(cold[k], warm[k]) for k in cold)


def test_the_data_arms_train_on_a_quarter_and_a_half_of_the_pairs():
    n = len(pb.bench().train_pairs)
    assert pb.train_pairs("bench-data-25") == pb.bench().train_pairs[:n // 4]
    assert pb.train_pairs("bench-data-50") == pb.bench().train_pairs[:n // 2]
    assert pb.train_pairs("bench-mlm") == pb.bench().train_pairs


# ---- the same arms on real prose: wiki-bench-* (issue 42) ------------------------------------


def test_a_wiki_arm_is_its_reviews_arm_on_another_corpus():
    for name in pb.ARMS:
        wiki, reviews = pb._settings(pb.WIKI + name), pb._settings(name)
        changed = {k for k in wiki if wiki[k] != reviews.get(k)}
        own = set(pb.ARMS[name][1])  # an arm's own change (a width, a rate) is kept
        allowed = {"corpus", "max_len", "eval"} | (set(pb.WIKI_BENCH) - own)
        assert changed <= allowed | set(pb.WIKI_ARMS.get(name, ("", {}))[1]), (name, changed)
        assert pb.corpus_of(pb.WIKI + name) == "wiki" and pb.corpus_of(name) == "reviews"
    assert pb.WIKI_BENCH_REFS["wiki-bench-mlm"].recipe["max_len"] == 64
    assert set(pb.WIKI_BENCH_REFS) == {pb.WIKI + name for name in pb.ARMS}


def test_the_wiki_bench_reads_training_articles_and_scores_held_out_ones():
    from lmcourse.course.reference import pretraining_eval as pe
    from lmcourse.tokenizers.wiki_pieces import wiki_sentences

    data, b = wiki_sentences(), pe.bench("wiki")
    train = {tuple(s) for s in data.train.sentences()}
    assert all(tuple(a) in train for a, _, _ in b.train_pairs[:500])
    assert not any(tuple(a) in train for a, _, _ in b.test_pairs[:500] if len(a) > 8)
    dev, _, _ = pe.dev_batch("wiki")
    assert not torch.equal(dev["input_ids"][:10], b.eval_batch["input_ids"][:10])
    assert len(pb.train_pairs("wiki-bench-static-40")) == pb.SMALL_PAIRS
    assert pb.bench_config("wiki").vocab_size == len(data.corpus) != pb.bench_config().vocab_size


def test_the_wiki_bench_builds_its_own_width_and_electra_shares_embeddings():
    from lmcourse.course.reference.bench_models import _generator_config

    assert pb.build_model("wiki-bench-mlm").bert.config.hidden_size == pb.WIKI_BENCH["hidden_size"]
    assert pb.bench_config("wiki").hidden_size == pb.WIKI_BENCH["hidden_size"]
    generator = _generator_config("wiki")
    assert generator.hidden_size == pb.WIKI_ARMS["bench-electra"][1]["generator_hidden"]
    assert generator.embedding_size == pb.WIKI_BENCH["hidden_size"]  # to share them
    assert _generator_config().embedding_size is None  # the reviews' arm as committed
    assert pb.keeps_weights("wiki-bench-mlm") and not pb.keeps_weights("bench-mlm")
    assert pb.keeps_weights("bench-deberta") and not pb.keeps_weights("wiki-bench-deberta")


def test_a_prose_arm_is_its_wiki_arm_in_the_pre_training_vocabulary():
    for name in pb.ARMS:
        prose, wiki = pb._settings(pb.PROSE + name), pb._settings(pb.WIKI + name)
        assert {k for k in prose if prose[k] != wiki.get(k)} == {"corpus", "max_len"}, name
        assert pb.corpus_of(pb.PROSE + name) == "prose" and pb._arm(pb.PROSE + name) == name
        assert not pb.keeps_weights(pb.PROSE + name)  # the reference folder's size budget
    ref = pb.PROSE_BENCH_REFS["prose-bench-mlm"]
    assert ref.recipe["max_len"] == 128 and ref.title.startswith("prose bench: ")
    assert pb.PROSE_TUNING in ref.notes
    assert pb.ELECTRA_LR_TUNING in pb.PROSE_BENCH_REFS["prose-bench-electra"].notes


def test_the_prose_bench_reads_whole_sentence_pairs_in_the_pre_training_vocabulary():
    from lmcourse.course.reference import pretraining_eval as pe
    from lmcourse.tokenizers.wiki_pieces import pretraining_wordpiece

    data, b = pe._data("prose"), pe.bench("prose")
    assert data.tokenizer is pretraining_wordpiece()
    assert pb.bench_config("prose").vocab_size == len(data.corpus) \
        > pb.bench_config("wiki").vocab_size
    assert pb.bench_config("prose").max_position_embeddings == 128
    lengths = (b.eval_batch["input_ids"] != data.corpus.pad_id).sum(1)
    cut = (lengths == 128).float().mean()
    assert cut < 0.05, f"{cut:.0%} of held-out pairs are cut at 128 pieces"
    train = {tuple(s) for s in data.train.sentences()}
    assert all(tuple(a) in train for a, _, _ in b.train_pairs[:500])


def test_electra_on_prose_runs_at_the_best_rate_of_its_grid():
    tried = pb.ELECTRA_LR_DEV_AUC
    assert tuple(tried) == pb.ELECTRA_LR_GRID
    assert pb._settings("wiki-bench-electra")["lr"] == max(tried, key=tried.get)
    assert pb.ELECTRA_LR_TUNING in pb.WIKI_BENCH_REFS["wiki-bench-electra"].notes


def test_the_wiki_probe_has_a_tuning_split_apart_from_its_test():
    from lmcourse.course.reference import pretraining_eval as pe

    *_, test_rows = pe.probe_data("wiki")
    *_, tuning_rows = pe.probe_data("wiki", "tuning")
    assert not {t for t, _, _ in test_rows} & {t for t, _, _ in tuning_rows}
    with pytest.raises(ValueError, match="only 'test'"):
        pe.probe_data("reviews", "tuning")


def test_the_wiki_probe_reads_real_snippets_in_the_bench_vocabulary():
    from lmcourse.course.reference import pretraining_eval as pe

    (fit_ids, _), (test_ids, _) = pe.probe_data("wiki")[0]
    _, labels, fit, fit_rows, test_rows = pe.probe_data("wiki")
    assert len(fit_rows) == pe.PROBE_SENTENCES and len(test_rows) == 2570
    assert len(fit_ids) == fit.sum() and len(test_ids) == (~fit).sum() == len(labels) - len(fit_ids)
    unk = pe._data("wiki").corpus.pieces.index("[UNK]")
    assert (test_ids == unk).float().mean() < 0.01  # WordPiece covers what the snippets say


def test_a_development_run_builds_the_shape_it_is_given():
    """dev_scores(arm, hidden_size=...) must train that width, not the arm's own."""
    from lmcourse.course.reference.bench_models import build_model
    from lmcourse.course.reference.bench_recipes import _settings

    own = build_model("bench-mlm")
    wider = build_model("bench-mlm", {**_settings("bench-mlm"), "hidden_size": 128,
                                      "intermediate_size": 512, "num_hidden_layers": 3})
    assert own.bert.config.hidden_size == 64 and len(own.bert.encoder.layer) == 2
    assert wider.bert.config.hidden_size == 128 and len(wider.bert.encoder.layer) == 3


def test_the_large_batch_runs_at_its_own_tuned_rate():
    """Issue 56, item 5: the large batch's rate is the best of its own grid on the
    development masks, inside it, tried over as many rates as the small batch's; the grids
    are the ones the printed notes name."""
    import re

    grid = sorted(pb.BATCH_LR_DEV)
    best = min(grid, key=lambda lr: pb.BATCH_LR_DEV[lr][0])
    assert grid[0] < best < grid[-1], "the chosen rate sits at the edge of its grid"
    assert pb.ARMS["bench-batch-256"][1]["lr"] == pytest.approx(best)
    assert pb.ARMS["bench-batch-256-sqrt"][1]["lr"] == pytest.approx(grid[0], rel=0.01)
    assert len(grid) >= len(pb.LR_GRID)
    named = re.search(r"x = ([^:]+):", pb.LR_TUNING).group(1).split(" / ")
    assert [float(x) for x in named] == list(pb.LR_GRID)
    assert all(f"{round(100 * w)}%" in pb.BATCH_TUNING for w in pb.WARMUP_GRID)
    assert f"{best:.1e}" in pb.BATCH_LR_TUNING and "chosen" in pb.BATCH_LR_TUNING


def test_the_small_batch_gets_as_many_warm_ups_as_the_large_one():
    """Issue 56, item 5: batch 32 tries the same warm-ups as batch 256 did, and its arm in the
    batch comparison runs at the best of them on the development masks."""
    assert tuple(pb.SMALL_BATCH_WARMUP_DEV) == pb.WARMUP_GRID
    best = min(pb.SMALL_BATCH_WARMUP_DEV, key=lambda w: pb.SMALL_BATCH_WARMUP_DEV[w][0])
    assert pb.ARMS["bench-warmup-20"][1]["warmup"] == best == 0.2
    import re

    # the bench's own 10% is the rate search's run at the chosen rate: the same loss
    losses = re.search(r"bench-mlm loss ([^(]+)\(", pb.LR_TUNING).group(1).split(" / ")
    at_rate = float(losses[pb.LR_GRID.index(pb.BENCH["lr"])])
    assert pb.SMALL_BATCH_WARMUP_DEV[pb.BENCH["warmup"]][0] == pytest.approx(at_rate, abs=5e-4)
    assert all(f"{round(100 * w)}%" in pb.SMALL_BATCH_TUNING for w in pb.WARMUP_GRID)


def test_the_wiki_bench_names_as_many_settings_as_it_says_it_tried():
    """The ledger's tuning budget of the wiki bench's masked LM (issue 56) is the number of
    width and rate settings its tuning note reports."""
    cpu_part = pb.WIKI_TUNING.split("the fill-in n-gram")[0]
    assert len(re.findall(r"\bat (?:lr )?\de-\d", cpu_part)) == pb.WIKI_SETTINGS_TRIED


# ---- the blanks an arm trains for: whole words and spans (issues 55 and 56) ------------------

def _words_and_choices(kind: str):
    from lmcourse.course.reference.pretraining_eval import _data

    ids = pb.bench("reviews").eval_batch["input_ids"]
    c = _data("reviews").corpus
    continues = torch.tensor([p.startswith("##") for p in c.pieces])[ids]
    special = torch.isin(ids, torch.tensor(sorted(c.special_ids)))
    masked, labels = pb.held_out_blanks("reviews", kind)
    return ids, continues, special, masked, labels


@pytest.mark.parametrize("kind", sorted(pb.BLANK_KINDS))
def test_held_out_blanks_hide_whole_words_of_the_same_held_out_pairs(kind):
    ids, continues, special, masked, labels = _words_and_choices(kind)
    chosen = labels != -100
    assert masked.shape == ids.shape and torch.equal(labels[chosen], ids[chosen])
    assert not (chosen & special).any() and torch.equal(masked[~chosen], ids[~chosen])
    # a word is hidden whole: a ## piece is chosen exactly when the piece before it is
    inside = continues[:, 1:]
    assert torch.equal(chosen[:, 1:][inside], chosen[:, :-1][inside])
    assert 0.10 < chosen.sum() / (~special).sum() < 0.20
    again = pb.held_out_blanks("reviews", kind)
    assert torch.equal(again[1], labels)  # drawn once: every arm meets the same blanks


def test_span_blanks_run_longer_than_whole_word_blanks():
    def mean_run_in_words(kind):
        _, continues, _, _, labels = _words_and_choices(kind)
        chosen = labels != -100
        starts = chosen & ~continues  # the first piece of each hidden word
        runs = chosen.clone()
        runs[:, 1:] &= ~chosen[:, :-1]  # the first piece of each run of hidden pieces
        return float(starts.sum() / runs.sum())

    assert mean_run_in_words("span") > 1.3 * mean_run_in_words("whole_word")


class _Oracle(torch.nn.Module):
    """Knows the held-out pairs: puts all its weight on the hidden piece (or, ``copy``, on
    the piece it is shown)."""

    def __init__(self, original: torch.Tensor, vocab: int, copy: bool = False):
        super().__init__()
        self.original, self.vocab, self.copy, self.row = original, vocab, copy, 0
        self.weight = torch.nn.Parameter(torch.zeros(1))

    def forward(self, ids, token_type_ids, attention_mask, predict):
        rows = self.original[self.row:self.row + len(ids)]
        self.row = (self.row + len(ids)) % len(self.original)
        answer = (ids if self.copy else rows)[predict]
        logits = torch.full((len(answer), self.vocab), -30.0)
        logits[torch.arange(len(answer)), answer] = 30.0
        return logits, torch.zeros(len(ids), 2)


def test_blank_scores_read_each_kind_of_blank():
    from lmcourse.course.reference.pretraining_eval import _data

    b, vocab = pb.bench("reviews"), len(_data("reviews").corpus)
    perfect = pb.blank_scores(_Oracle(b.eval_batch["input_ids"], vocab), "reviews")
    assert set(perfect) == {f"{k}_{m}" for k in pb.BLANK_KINDS for m in ("accuracy", "mlm_loss")}
    assert all(perfect[f"{k}_accuracy"] == 1.0 and perfect[f"{k}_mlm_loss"] < 1e-6
               for k in pb.BLANK_KINDS)
    # copying the input is right only where 80/10/10 left the piece unchanged (about 10%)
    copying = pb.blank_scores(_Oracle(b.eval_batch["input_ids"], vocab, copy=True), "reviews")
    assert all(0.04 < copying[f"{k}_accuracy"] < 0.2 for k in pb.BLANK_KINDS)
