"""SCCLModel: config, forward, centroids, save/load round trips and the errors a user can hit."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

import hf_textcluster  # noqa: F401  (registers the Auto classes)
from hf_textcluster import SCCLConfig, SCCLModel
from hf_textcluster.editing import initialize_clusters
from hf_textcluster.models.building import from_encoder_pretrained


@pytest.fixture()
def fitted_model(tiny_encoder_dir, toy_corpus):
    texts, _ = toy_corpus
    torch.manual_seed(0)
    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    initialize_clusters(model, texts, random_state=0)
    return model


def test_config_defaults_and_validation():
    config = SCCLConfig(encoder={"model_type": "bert", "hidden_size": 32, "num_attention_heads": 2}, num_clusters=4)
    assert config.encoder.hidden_size == 32 and config.contrast_dim == 128 and config.eta == 10.0
    assert config.id2label == {0: "cluster_0", 1: "cluster_1", 2: "cluster_2", 3: "cluster_3"}
    with pytest.raises(ValueError, match="num_clusters"):
        SCCLConfig(num_clusters=1)
    with pytest.raises(ValueError, match="pooling"):
        SCCLConfig(pooling="max")
    with pytest.raises(ValueError, match="temperature"):
        SCCLConfig(temperature=0.0)
    with pytest.raises(ValueError, match="id2label"):
        SCCLConfig(num_clusters=3, id2label={0: "a", 1: "b"})


def test_init_builds_from_config_without_download():
    config = SCCLConfig(
        encoder={
            "model_type": "bert",
            "vocab_size": 50,
            "hidden_size": 16,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "intermediate_size": 32,
        },
        num_clusters=5,
    )
    model = SCCLModel(config)
    assert model.cluster_head.centroids.shape == (5, 16)
    assert model.contrast_head.out_proj.out_features == 128
    assert not config.centroids_initialized


def test_forward_outputs(fitted_model, toy_corpus):
    inputs = fitted_model.tokenize(toy_corpus[0][:4])
    out = fitted_model(**inputs)
    assert out.embeddings.shape == (4, 32)
    assert out.cluster_probs.shape == (4, 3)
    torch.testing.assert_close(out.cluster_probs.sum(-1), torch.ones(4))
    torch.testing.assert_close(out.logits.exp(), out.cluster_probs)


def test_mean_and_cls_pooling_differ(tiny_encoder_dir, toy_corpus):
    mean = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3, pooling="mean")
    cls = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3, pooling="cls")
    inputs = mean.tokenize(toy_corpus[0][:2])
    hidden = mean.encoder(**inputs).last_hidden_state
    mask = inputs["attention_mask"].unsqueeze(-1).float()
    torch.testing.assert_close(mean.encode(**inputs), (hidden * mask).sum(1) / mask.sum(1))
    torch.testing.assert_close(cls.encode(**inputs), hidden[:, 0])


def test_initialize_clusters_uses_kmeans(fitted_model, toy_corpus):
    from sklearn.cluster import KMeans

    texts, _ = toy_corpus
    embeddings = fitted_model.embed(texts)
    expected = KMeans(n_clusters=3, n_init=10, random_state=0).fit(embeddings).cluster_centers_
    np.testing.assert_allclose(fitted_model.cluster_head.centroids.detach().numpy(), expected, rtol=1e-4, atol=1e-5)
    assert fitted_model.config.centroids_initialized
    with pytest.raises(ValueError, match="larger than the number of texts"):
        initialize_clusters(fitted_model, texts[:2])


def test_corrupted_weights_file(fitted_model, tmp_path):
    fitted_model.save_pretrained(tmp_path)
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(OSError, match="corrupted"):
        SCCLModel.from_pretrained(tmp_path)


def test_missing_tokenizer_is_reported_when_texts_are_used(fitted_model, tmp_path, toy_corpus):
    fitted_model.save_pretrained(tmp_path)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (tmp_path / name).unlink()
    loaded = SCCLModel.from_pretrained(tmp_path)
    with pytest.raises(ValueError, match="no tokenizer"):
        loaded.predict(toy_corpus[0])
    loaded = SCCLModel.from_pretrained(tmp_path, tokenizer=fitted_model.tokenizer)
    assert loaded.predict(toy_corpus[0][:3]).shape == (3,)


@pytest.mark.slow  # a fresh interpreter
def test_pipeline_in_a_fresh_process(fitted_model, toy_corpus, tmp_path):
    fitted_model.save_pretrained(tmp_path)
    expected = fitted_model.predict(toy_corpus[0][:5]).tolist()
    script = (
        "import json, sys, hf_textcluster\n"
        "from transformers import pipeline\n"
        f"clusterer = pipeline('text-clustering', model={str(tmp_path)!r})\n"
        "texts = json.loads(sys.stdin.read())\n"
        "print(json.dumps([r['cluster'] for r in clusterer(texts)]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(toy_corpus[0][:5]),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert json.loads(result.stdout.strip().splitlines()[-1]) == expected
