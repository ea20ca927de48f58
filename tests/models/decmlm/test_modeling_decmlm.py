"""DECMLMModel: config, the masked-LM head (tied decoder, pretrained or not, never run at inference), save/load
round trips, the pipeline, and the errors a user can hit."""

import json
import logging

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from safetensors import safe_open
from transformers import AutoConfig, AutoModel, BertForMaskedLM, pipeline

import hf_textcluster  # noqa: F401  (registers the Auto classes)
from hf_textcluster import DECMLMConfig, DECMLMModel
from hf_textcluster.editing import initialize_clusters
from hf_textcluster.editing.clusters import init_clusters_from_kmeans
from hf_textcluster.models.building import from_encoder_pretrained
from hf_textcluster.models.decmlm.losses_decmlm import mlm_logits

TINY_ENCODER = {
    "model_type": "bert",
    "vocab_size": 50,
    "hidden_size": 16,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "intermediate_size": 32,
}


@pytest.fixture()
def fitted_model(tiny_encoder_dir, toy_corpus):
    torch.manual_seed(0)
    model = from_encoder_pretrained(DECMLMModel, str(tiny_encoder_dir), num_clusters=3)
    initialize_clusters(model, toy_corpus[0], random_state=0)
    return model


def _mlm_head_calls(model):
    calls = []
    model.mlm_head.register_forward_hook(lambda module, args, output: calls.append(output.shape))
    return calls


def test_config_defaults_and_validation():
    config = DECMLMConfig(encoder=TINY_ENCODER, num_clusters=4)
    assert config.model_type == "decmlm" and config.pooling == "mean" and config.alpha == 1.0
    assert config.mlm_probability == 0.1 and config.mlm_loss_weight == 1.0 and config.cluster_loss_weight == 1.0
    assert (config.mlm_mask_fraction, config.mlm_random_fraction) == (0.8, 0.1)
    assert config.mlm_head_pretrained is False
    assert config.target_refresh_steps is None  # the paper: once per epoch
    assert DECMLMConfig(mlm_loss_weight=0.0).mlm_loss_weight == 0.0  # the "w/o masked LM loss" ablation
    assert DECMLMConfig(pooling="cls").pooling == "cls"  # the "w/o average pooling" ablation
    for kwargs, match in [
        ({"mlm_probability": 0.0}, "mlm_probability"),
        ({"mlm_probability": 1.5}, "mlm_probability"),
        ({"alpha": 0.0}, "alpha"),
        ({"mlm_mask_fraction": 0.9, "mlm_random_fraction": 0.2}, "<= 1"),
        ({"mlm_random_fraction": -0.1}, "mlm_random_fraction"),
        ({"mlm_loss_weight": -1.0}, "mlm_loss_weight"),
        ({"mlm_loss_weight": 0.0, "cluster_loss_weight": 0.0}, "both 0"),
        ({"mlm_probability": "0.1"}, "number"),
        ({"pooling": "max"}, "pooling"),
        ({"num_clusters": 1}, "num_clusters"),
        ({"target_refresh_steps": 0}, "target_refresh_steps"),
        ({"target_refresh_steps": 2.5}, "target_refresh_steps"),
    ]:
        with pytest.raises(ValueError, match=match):
            DECMLMConfig(**kwargs)


def test_init_builds_from_config_without_download():
    config = DECMLMConfig(encoder=TINY_ENCODER, num_clusters=5)
    model = DECMLMModel(config)
    assert model.cluster_head.centroids.shape == (5, 16)
    assert model.mlm_head.dense.weight.shape == (16, 16) and model.mlm_head.bias.shape == (50,)
    assert torch.count_nonzero(model.mlm_head.bias) == 0
    # The decoder is the word embedding matrix itself: no second vocab x hidden parameter exists.
    big = [name for name, p in model.named_parameters() if p.shape == (50, 16)]
    assert big == ["encoder.embeddings.word_embeddings.weight"]
    assert not config.centroids_initialized


def test_mlm_logits_are_the_bert_head_with_tied_decoder(fitted_model, toy_corpus):
    inputs = fitted_model.tokenize(toy_corpus[0][:3])
    hidden = fitted_model.encoder(**inputs).last_hidden_state
    head = fitted_model.mlm_head
    transformed = F.layer_norm(
        F.gelu(hidden @ head.dense.weight.T + head.dense.bias),
        (32,),
        head.layer_norm.weight,
        head.layer_norm.bias,
        eps=1e-12,
    )
    expected = transformed @ fitted_model.encoder.embeddings.word_embeddings.weight.T + head.bias
    torch.testing.assert_close(mlm_logits(fitted_model, hidden), expected)


def test_forward_predict_and_pipeline_never_run_the_mlm_head(fitted_model, toy_corpus):
    texts = toy_corpus[0][:6]
    calls = _mlm_head_calls(fitted_model)
    out = fitted_model(**fitted_model.tokenize(texts))
    assert out.cluster_probs.shape == (6, 3) and out.embeddings.shape == (6, 32)
    torch.testing.assert_close(out.cluster_probs.sum(-1), torch.ones(6))
    fitted_model.predict(texts), fitted_model.predict_proba(texts), fitted_model.embed(texts)
    results = pipeline("text-clustering", model=fitted_model)(texts)
    assert [r["cluster"] for r in results] == fitted_model.predict(texts).tolist()
    assert calls == []
    mlm_logits(fitted_model, out.embeddings)  # the hook itself works
    assert len(calls) == 1


def test_mean_pooling_by_default_and_cls_as_option(tiny_encoder_dir, toy_corpus):
    mean = from_encoder_pretrained(DECMLMModel, str(tiny_encoder_dir), num_clusters=3)
    cls = from_encoder_pretrained(DECMLMModel, str(tiny_encoder_dir), num_clusters=3, pooling="cls")
    inputs = mean.tokenize(toy_corpus[0][:2])
    hidden = mean.encoder(**inputs).last_hidden_state
    mask = inputs["attention_mask"].unsqueeze(-1).float()
    torch.testing.assert_close(mean.encode(**inputs), (hidden * mask).sum(1) / mask.sum(1))
    torch.testing.assert_close(cls.encode(**inputs), hidden[:, 0])


def test_encoder_without_mlm_head_warns_and_records_it(tiny_encoder_dir, caplog):
    with caplog.at_level(logging.WARNING, logger="hf_textcluster"):
        model = from_encoder_pretrained(DECMLMModel, str(tiny_encoder_dir), num_clusters=3)
    assert "has no masked-LM head" in caplog.text and "untrained" in caplog.text
    assert model.config.mlm_head_pretrained is False
    reference = AutoModel.from_pretrained(tiny_encoder_dir)
    for name, tensor in reference.state_dict().items():
        torch.testing.assert_close(model.encoder.state_dict()[name], tensor)


def test_encoder_with_mlm_head_loads_it(tiny_mlm_encoder_dir, toy_corpus, caplog):
    with caplog.at_level(logging.WARNING, logger="hf_textcluster"):
        model = from_encoder_pretrained(DECMLMModel, str(tiny_mlm_encoder_dir), num_clusters=3)
    assert "masked-LM head" not in caplog.text
    assert model.config.mlm_head_pretrained is True
    reference = BertForMaskedLM.from_pretrained(tiny_mlm_encoder_dir).eval()
    inputs = model.tokenize(toy_corpus[0][:3])
    hidden = model.encoder(**inputs).last_hidden_state
    torch.testing.assert_close(hidden, reference.bert(**inputs).last_hidden_state)
    torch.testing.assert_close(mlm_logits(model, hidden), reference(**inputs).logits, rtol=1e-5, atol=1e-5)


def test_round_trip_keeps_predictions_and_the_mlm_head(fitted_model, toy_corpus, tmp_path):
    texts, _ = toy_corpus
    with torch.no_grad():
        fitted_model.mlm_head.bias.normal_()  # as after training: not the initial zeros
    fitted_model.save_pretrained(tmp_path)
    files = set(p.name for p in tmp_path.iterdir())
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= files
    assert not any(name.endswith((".bin", ".pt", ".pkl")) for name in files)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["model_type"] == "decmlm" and saved["mlm_head_pretrained"] is False
    with safe_open(tmp_path / "model.safetensors", "pt") as f:
        keys = set(f.keys())
    assert {
        "mlm_head.dense.weight",
        "mlm_head.dense.bias",
        "mlm_head.layer_norm.weight",
        "mlm_head.layer_norm.bias",
        "mlm_head.bias",
        "cluster_head.centroids",
    } <= keys
    loaded, info = AutoModel.from_pretrained(tmp_path, output_loading_info=True)
    assert not any(info[key] for key in ("missing_keys", "unexpected_keys", "mismatched_keys")), info
    assert isinstance(loaded, DECMLMModel) and isinstance(AutoConfig.from_pretrained(tmp_path), DECMLMConfig)
    assert loaded.tokenizer is not None
    np.testing.assert_array_equal(loaded.predict(texts), fitted_model.predict(texts))
    np.testing.assert_allclose(loaded.predict_proba(texts), fitted_model.predict_proba(texts), rtol=1e-5, atol=1e-6)
    for name, tensor in fitted_model.mlm_head.state_dict().items():
        torch.testing.assert_close(loaded.mlm_head.state_dict()[name], tensor)
    inputs = fitted_model.tokenize(texts[:2])
    hidden = fitted_model.encoder(**inputs).last_hidden_state
    torch.testing.assert_close(mlm_logits(loaded, hidden), mlm_logits(fitted_model, hidden))


def test_pipeline_from_a_saved_directory(fitted_model, toy_corpus, tmp_path):
    fitted_model.config.id2label = {0: "a", 1: "b", 2: "c"}
    fitted_model.save_pretrained(tmp_path)
    texts = toy_corpus[0][:5]
    clusterer = pipeline("text-clustering", model=str(tmp_path))
    assert isinstance(clusterer.model, DECMLMModel)
    calls = _mlm_head_calls(clusterer.model)
    results = clusterer(texts)
    assert [r["cluster"] for r in results] == fitted_model.predict(texts).tolist()
    assert all(r["label"] == "abc"[r["cluster"]] for r in results)
    assert calls == []


def test_predict_requires_fitted_centroids(tiny_encoder_dir, toy_corpus):
    model = from_encoder_pretrained(DECMLMModel, str(tiny_encoder_dir), num_clusters=3)
    with pytest.raises(RuntimeError, match="initialize_clusters"):
        model.predict(toy_corpus[0])
    with pytest.raises(ValueError, match="do not fit"):
        init_clusters_from_kmeans(model, np.zeros((4, 32)))
