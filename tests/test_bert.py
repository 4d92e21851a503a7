"""Our BertModel against Hugging Face's on the real MiniLM weights; presets against HF's
architectures for the same shapes; the checkpoint loader's errors."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
import transformers

from lmcourse.models.bert import BertConfig, BertModel
from lmcourse.models.compress import count_params
from lmcourse.models.presets import PRESETS, build
from lmcourse.pretrained import load_hf_tokenizer, minilm_path


@pytest.fixture(scope="module")
def models():
    path = minilm_path()
    ours = BertModel.from_pretrained(path).double()
    ref = transformers.BertModel.from_pretrained(
        str(path), local_files_only=True, attn_implementation="eager").double().eval()
    return ours, ref


@pytest.fixture(scope="module")
def batch():
    """Two sentence pairs of different lengths: padding, two segments."""
    enc = load_hf_tokenizer()(["the bank raised interest rates", "fire broke out near the river"],
                              ["markets fell", "crews worked through the night to contain it"],
                              padding=True, return_tensors="pt")
    assert (enc["attention_mask"] == 0).any() and (enc["token_type_ids"] == 1).any()
    return enc


def test_minilm_outputs_equal_hugging_face(models, batch):
    ours, ref = models
    with torch.no_grad():
        a = ours(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
        b = ref(**batch, output_hidden_states=True, output_attentions=True)
    real = batch["attention_mask"].bool()
    assert len(a.hidden_states) == len(b.hidden_states) == ours.config.num_hidden_layers + 1
    for x, y in zip(a.hidden_states, b.hidden_states, strict=True):
        assert (x - y)[real].abs().max() < 1e-10  # padded positions are never read
    for x, y in zip(a.attentions, b.attentions, strict=True):
        assert x.shape == y.shape == (2, 12, real.shape[1], real.shape[1])
        assert (x - y).transpose(1, 2)[real].abs().max() < 1e-10  # rows of real queries
    assert (a.pooler_output - b.pooler_output).abs().max() < 1e-10
    assert torch.equal(a.last_hidden_state, a.hidden_states[-1])


def test_padding_is_never_attended_to(models):
    ours, _ = models
    ids = torch.tensor([[101, 1996, 2924, 102]])
    padded = torch.tensor([[101, 1996, 2924, 102, 0, 0]])
    with torch.no_grad():
        alone = ours(ids).last_hidden_state
        out = ours(padded, attention_mask=torch.tensor([[1, 1, 1, 1, 0, 0]]))
    assert (out.last_hidden_state[:, :4] - alone).abs().max() < 1e-10
    assert out.attentions[0][..., 4:].abs().max() == 0


def test_defaults_for_mask_and_segments(models):
    ours, _ = models
    ids = torch.tensor([[101, 1996, 2924, 102]])
    with torch.no_grad():
        plain = ours(ids).last_hidden_state
        explicit = ours(ids, torch.ones_like(ids), torch.zeros_like(ids)).last_hidden_state
    assert torch.equal(plain, explicit)


@pytest.mark.parametrize("name,reference", [
    ("bert-base-uncased", lambda: transformers.BertModel(transformers.BertConfig())),
    ("bert-large-uncased", lambda: transformers.BertModel(transformers.BertConfig(
        hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
        intermediate_size=4096))),
    ("distilbert-base-uncased", lambda: transformers.DistilBertModel(
        transformers.DistilBertConfig())),
    ("albert-base-v2", lambda: transformers.AlbertModel(transformers.AlbertConfig(
        vocab_size=30000, embedding_size=128, hidden_size=768, num_attention_heads=12,
        intermediate_size=3072))),
    ("roberta-base", lambda: transformers.RobertaModel(transformers.RobertaConfig(
        vocab_size=50265, max_position_embeddings=514, type_vocab_size=1))),
    ("tinybert-4l-312d", lambda: transformers.BertModel(transformers.BertConfig(
        hidden_size=312, num_hidden_layers=4, intermediate_size=1200))),
])
def test_preset_parameter_count_equals_hugging_faces_architecture(name, reference):
    with torch.device("meta"):  # shapes only: no memory, no initialisation cost
        ours, theirs = build(name), reference()
    assert count_params(ours) == sum(p.numel() for p in theirs.parameters()), name


def test_every_preset_is_tested_and_unknown_names_are_refused():
    assert set(PRESETS) >= {"bert-base-uncased", "bert-large-uncased", "distilbert-base-uncased",
                            "albert-base-v2", "roberta-base", "tinybert-4l-312d"}
    with pytest.raises(ValueError, match="unknown preset 'bert-huge'.*choose one of"):
        build("bert-huge")


def test_shared_layers_are_counted_once():
    shared = BertModel(BertConfig(hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                                  intermediate_size=64, vocab_size=100, share_layers=True))
    separate = BertModel(BertConfig(hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                                    intermediate_size=64, vocab_size=100))
    layer = count_params(separate.encoder.layer[0])
    assert count_params(separate) - count_params(shared) == 3 * layer
    out = shared(torch.tensor([[1, 2, 3]]))
    assert len(out.hidden_states) == 5 and len(out.attentions) == 4


def test_count_params_trainable_only():
    model = build("tinybert-4l-312d")
    model.embeddings.requires_grad_(False)
    frozen = count_params(model.embeddings)
    assert count_params(model, trainable_only=True) == count_params(model) - frozen


def test_from_pretrained_errors_say_what_is_wrong(tmp_path):
    with pytest.raises(FileNotFoundError, match="no config.json there"):
        BertModel.from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    with pytest.raises(ValueError, match="'gpt2' model, not BERT"):
        BertModel.from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_size": 32,
                                                      "num_attention_heads": 4}))
    with pytest.raises(FileNotFoundError, match="no model.safetensors or pytorch_model.bin"):
        BertModel.from_pretrained(tmp_path)


def test_from_pretrained_rejects_weights_of_another_shape(tmp_path):
    shutil.copy(minilm_path() / "model.safetensors", tmp_path / "model.safetensors")
    config = json.loads((minilm_path() / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 7}))
    with pytest.raises(ValueError, match="do not fit a BertModel: missing"):
        BertModel.from_pretrained(tmp_path)


def test_from_pretrained_reads_a_torch_bin_safely(tmp_path):
    config = {"model_type": "bert", "vocab_size": 50, "hidden_size": 16,
              "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 32,
              "max_position_embeddings": 20}
    source = BertModel(BertConfig.from_dict(config)).eval()
    (tmp_path / "config.json").write_text(json.dumps(config))
    torch.save({f"bert.{k}": v for k, v in source.state_dict().items()},
               tmp_path / "pytorch_model.bin")
    loaded = BertModel.from_pretrained(tmp_path)
    ids = torch.tensor([[1, 5, 7, 2]])
    assert torch.equal(loaded(ids).last_hidden_state, source(ids).last_hidden_state)


def test_bad_input_shapes_are_explained(models):
    ours, _ = models
    with pytest.raises(ValueError, match="batch x tokens"):
        ours(torch.tensor([101, 102]))
    with pytest.raises(ValueError, match="attention_mask has shape"):
        ours(torch.tensor([[101, 102]]), attention_mask=torch.ones(1, 3))
    with pytest.raises(ValueError, match="longer than the 512 positions"):
        ours(torch.zeros(1, 513, dtype=torch.long))
