"""The shared contract on a CUDA GPU, for every registered method: training runs there (k-means initialisation
included, bf16 where the GPU has it), a model saved on the GPU loads on the CPU and back with the same clusters, the
pipeline serves on ``device=0``, and a seeded fp32 run gives the clusters of the same run on the CPU. Skipped without
CUDA (see conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.optimize import linear_sum_assignment
from transformers import AutoModel, pipeline

import hf_textcluster  # noqa: F401
import hf_textcluster.editing.kmeans as kmeans_module
from hf_textcluster import train_clusterer
from hf_textcluster.data import load_texts
from hf_textcluster.models import METHODS

pytestmark = pytest.mark.cuda
METHOD_NAMES = sorted(METHODS)
TRAIN = dict(per_device_train_batch_size=16, save_strategy="no", logging_steps=1, disable_tqdm=True, max_steps=3)


def _train(method, encoder, corpus, output_dir, **overrides):
    if method == "deccrl":
        pytest.importorskip("gensim", reason="DEC-CRL's word embeddings need gensim (the deccrl extra)")
    texts, labels = corpus
    torch.manual_seed(0)
    return train_clusterer(
        method,
        load_texts(texts, labels),
        str(output_dir),
        encoder=str(encoder),
        training_overrides={**TRAIN, **overrides},
        evaluate=False,
    )


def _same_cluster_share(a: np.ndarray, b: np.ndarray) -> float:
    """The share of texts in the same cluster once the clusters of ``b`` are matched to those of ``a``."""
    k = int(max(a.max(), b.max())) + 1
    counts = np.zeros((k, k), dtype=int)
    np.add.at(counts, (a, b), 1)
    rows, cols = linear_sum_assignment(-counts)
    return counts[rows, cols].sum() / len(a)


@pytest.fixture(scope="module")
def gpu_runs(tiny_encoder_dir, toy_corpus, tmp_path_factory):
    """``gpu_runs(method)``: (the training result of a 3-step run on the GPU with automatic precision, the torch
    k-means calls it made)."""
    runs = {}

    def get(method):
        if method not in runs:
            calls = []
            original = kmeans_module.torch_kmeans

            def spy(features, *args, **kwargs):
                calls.append(features.device.type)
                return original(features, *args, **kwargs)

            kmeans_module.torch_kmeans = spy
            try:
                result = _train(method, tiny_encoder_dir, toy_corpus, tmp_path_factory.mktemp(method) / "run")
            finally:
                kmeans_module.torch_kmeans = original
            runs[method] = (result, calls)
        return runs[method]

    return get


def test_torch_kmeans_on_the_gpu_finds_what_sklearn_finds():
    from sklearn.cluster import KMeans
    from sklearn.datasets import make_blobs
    from sklearn.metrics import adjusted_rand_score

    x, y = make_blobs(n_samples=2000, centers=8, n_features=32, random_state=0)
    x = x.astype(np.float32)
    fitted = kmeans_module.fit_kmeans(torch.from_numpy(x).cuda(), 8, n_init=5, random_state=0)
    assert isinstance(fitted, kmeans_module.TorchKMeans) and fitted.centers.is_cuda
    assert adjusted_rand_score(y, fitted.labels_) == 1.0
    assert fitted.inertia_ == pytest.approx(KMeans(8, n_init=5, random_state=0).fit(x).inertia_, rel=1e-3)
    sampled = kmeans_module.fit_kmeans(torch.from_numpy(x).cuda(), 8, n_init=2, random_state=0, max_samples=500)
    assert sampled.labels_.shape == (2000,) and adjusted_rand_score(y, sampled.labels_) > 0.99


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_training_runs_on_the_gpu_with_its_kmeans_and_precision(method, gpu_runs):
    result, calls = gpu_runs(method)
    trainer = result.trainer
    assert trainer.args.device.type == "cuda" and next(result.model.parameters()).is_cuda
    assert calls and set(calls) == {"cuda"}  # k-means initialisation ran on the GPU
    assert trainer.args.dataloader_pin_memory and trainer.encode_batch_size == 1024
    run = json.loads((Path(result.output_dir) / "training_run.json").read_text())
    expected = "bf16" if torch.cuda.is_bf16_supported() else "fp32"
    assert run["precision"].startswith(f"{expected} (auto; GPU")


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_saved_on_the_gpu_loads_on_the_cpu_and_back(method, gpu_runs, toy_corpus):
    texts = toy_corpus[0]
    result, _ = gpu_runs(method)
    on_gpu = result.model.eval()
    expected = on_gpu.predict_proba(texts, precision="fp32")
    on_cpu = AutoModel.from_pretrained(result.output_dir)
    assert next(on_cpu.parameters()).device.type == "cpu"
    np.testing.assert_allclose(on_cpu.predict_proba(texts, precision="fp32"), expected, atol=1e-4)
    back = on_cpu.to("cuda")
    np.testing.assert_allclose(back.predict_proba(texts, precision="fp32"), expected, atol=1e-4)
    np.testing.assert_array_equal(back.predict(texts, precision="fp32"), expected.argmax(-1))


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_pipeline_serves_on_device_0(method, gpu_runs, toy_corpus):
    texts = toy_corpus[0]
    result, _ = gpu_runs(method)
    clusterer = pipeline("text-clustering", model=str(result.output_dir), device=0, precision="fp32")
    assert clusterer.model.device.type == "cuda"
    clusters = [r["cluster"] for r in clusterer(texts)]
    assert clusters == AutoModel.from_pretrained(result.output_dir).predict(texts, precision="fp32").tolist()


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_seeded_fp32_run_gives_the_cpu_clusters(method, tiny_encoder_dir, toy_corpus, tmp_path):
    texts = toy_corpus[0]
    cpu = _train(method, tiny_encoder_dir, toy_corpus, tmp_path / "cpu", bf16=False, use_cpu=True)
    gpu = _train(method, tiny_encoder_dir, toy_corpus, tmp_path / "gpu", bf16=False)
    a = cpu.model.predict(texts, precision="fp32")
    b = gpu.model.predict(texts, precision="fp32")
    # k-means starts from scikit-learn's centres on the CPU and the torch k-means' on the GPU (cluster ids may be
    # permuted) and the arithmetic differs in the last bits: the clusters agree up to a few texts
    assert _same_cluster_share(a, b) >= 0.9
