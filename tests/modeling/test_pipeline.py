"""pipeline("text-clustering"): output format, top_k, batching order, devices and bad input."""

import pytest
import torch
from transformers import pipeline

import hf_textcluster  # noqa: F401
from hf_textcluster import SCCLModel
from hf_textcluster.editing import initialize_clusters
from hf_textcluster.models.aecl.trainer_aecl import set_reference_texts
from hf_textcluster.models.building import from_encoder_pretrained


@pytest.fixture(scope="module")
def model_dir(tiny_encoder_dir, toy_corpus, tmp_path_factory):
    torch.manual_seed(0)
    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    initialize_clusters(model, toy_corpus[0])
    model.config.id2label = {0: "oracle · sql", 1: "java · class", 2: "haskell · monad"}
    path = tmp_path_factory.mktemp("sccl")
    model.save_pretrained(path)
    return path


def test_outputs_cluster_label_score(model_dir, toy_corpus):
    clusterer = pipeline("text-clustering", model=str(model_dir))
    model = SCCLModel.from_pretrained(model_dir)
    texts = toy_corpus[0][:10]
    results = clusterer(texts)
    assert [r["cluster"] for r in results] == model.predict(texts).tolist()
    probs = model.predict_proba(texts)
    for r, p in zip(results, probs):
        assert r["label"] == model.config.id2label[r["cluster"]]
        assert r["score"] == pytest.approx(float(p.max()), rel=1e-4)
    single = clusterer(texts[0])
    assert single == results[0]


def test_top_k_is_sorted_and_sums_below_one(model_dir, toy_corpus):
    clusterer = pipeline("text-clustering", model=str(model_dir))
    result = clusterer(toy_corpus[0][:3], top_k=3)
    for ranked in result:
        scores = [r["score"] for r in ranked]
        assert scores == sorted(scores, reverse=True) and sum(scores) == pytest.approx(1.0, rel=1e-4)
    with pytest.raises(ValueError, match="top_k"):
        clusterer(toy_corpus[0][:3], top_k=4)


def test_batching_keeps_input_order(model_dir, toy_corpus):
    clusterer = pipeline("text-clustering", model=str(model_dir), device="cpu")
    texts = toy_corpus[0][:37]
    one_by_one = [clusterer(t)["cluster"] for t in texts]
    assert [r["cluster"] for r in clusterer(texts, batch_size=8)] == one_by_one


@pytest.mark.parametrize(
    "bad,match", [([], "empty"), (["ok", ""], "1"), ([None], "item 0"), ("", "item 0|empty|blank")]
)
def test_bad_inputs(model_dir, bad, match):
    clusterer = pipeline("text-clustering", model=str(model_dir))
    with pytest.raises((ValueError, TypeError), match=match):
        clusterer(bad)


def test_unfitted_model_is_refused(tiny_encoder_dir, tmp_path):
    from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3).save_pretrained(tmp_path)
    with pytest.raises(RuntimeError, match="never initialised"):
        pipeline("text-clustering", model=str(tmp_path))


def test_a_list_in_one_go_gives_the_per_text_results(model_dir, toy_corpus, monkeypatch):
    """Lists go to the model in batches (length-sorted, answered in input order); generators stream: same answers."""
    clusterer = pipeline("text-clustering", model=str(model_dir))  # loads its own copy of the model's tokenizer
    texts = toy_corpus[0][:30]
    calls = []
    cluster_batch = clusterer.model.cluster_batch
    monkeypatch.setattr(
        clusterer.model,
        "cluster_batch",
        lambda inputs, *a, **k: calls.append(len(inputs["input_ids"])) or cluster_batch(inputs, *a, **k),
    )
    batched = clusterer(texts, batch_size=7, top_k=2)
    assert calls == [7, 7, 7, 7, 2], "a list did not go to the model in batches"
    streamed = list(clusterer((t for t in texts), batch_size=7, top_k=2))
    assert [[r["cluster"] for r in row] for row in batched] == [[r["cluster"] for r in row] for row in streamed]
    for row_b, row_s in zip(batched, streamed):
        for a, b in zip(row_b, row_s):
            assert a["label"] == b["label"] and abs(a["score"] - b["score"]) < 1e-5


def test_under_bf16_the_head_runs_in_fp32_as_in_predict(tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch):
    """Autocast covers the encoder only, in the pipeline's per-text path as in ``predict_proba``: a text alone (no
    padding) gets the same probabilities from both. AECL's head is linear layers, which bf16 would round (~1e-3)."""
    from hf_textcluster import AECLModel
    from hf_textcluster.modeling.precision import PRECISION_ENV

    texts = toy_corpus[0]
    torch.manual_seed(0)
    model = from_encoder_pretrained(AECLModel, str(tiny_encoder_dir), num_clusters=3, projection_dim=8)
    model.config.centroids_initialized = True
    set_reference_texts(model, texts[:20], precision="fp32")
    model.save_pretrained(tmp_path)
    monkeypatch.setenv(PRECISION_ENV, "bf16")  # emulated, slowly, where the CPU has no bf16: a tiny model
    clusterer = pipeline("text-clustering", model=str(tmp_path))
    streamed = list(clusterer((t for t in texts[:5]), batch_size=1, top_k=3))
    for text, ranked in zip(texts, streamed):
        probs = model.predict_proba([text], precision="bf16")[0]
        for r in ranked:
            assert r["score"] == pytest.approx(float(probs[r["cluster"]]), abs=1e-6)


def test_precision_auto_is_resolved_per_call_as_in_predict(model_dir, toy_corpus, monkeypatch):
    """``pipeline(..., precision="auto")`` means what ``predict``'s "auto" means at call time: a later
    $HF_TEXTCLUSTER_PRECISION is seen (it used to be frozen at construction), on both the list and per-text path."""
    from hf_textcluster.modeling.precision import PRECISION_ENV, resolve_precision

    monkeypatch.setenv(PRECISION_ENV, "fp32")
    clusterer = pipeline("text-clustering", model=str(model_dir), precision="auto")
    used = []
    cluster_batch = clusterer.model.cluster_batch

    def spy(inputs, precision="auto", *args, **kwargs):
        used.append(resolve_precision(precision, clusterer.model.device, inference=True))
        return cluster_batch(inputs, precision, *args, **kwargs)

    monkeypatch.setattr(clusterer.model, "cluster_batch", spy)
    monkeypatch.setenv(PRECISION_ENV, "bf16")  # emulated where the CPU has no bf16: a tiny model
    texts = toy_corpus[0][:3]
    clusterer(texts)
    list(clusterer(t for t in texts))
    assert used and set(used) == {"bf16"}


def test_misspelt_or_invalid_options_are_errors(model_dir):
    clusterer = pipeline("text-clustering", model=str(model_dir))
    with pytest.raises(TypeError, match="Unknown text-clustering option.*topk"):
        clusterer(["a text"], topk=3)
    for bad in (0, 1, -5, True):
        with pytest.raises(ValueError, match="max_length"):
            clusterer(["a text"], max_length=bad)
    with pytest.raises(ValueError, match="top_k"):
        clusterer(["a text"], top_k=True)
    assert len(clusterer(["a text", "another"], batch_size=1)) == 2


def test_a_pandas_series_is_a_list_of_texts(model_dir, toy_corpus):
    import pandas as pd

    clusterer = pipeline("text-clustering", model=str(model_dir))
    texts = toy_corpus[0][:5]
    assert clusterer(pd.Series(texts, index=[10, 11, 12, 13, 14])) == clusterer(texts)


def test_int8_serving_gives_predicts_int8_scores_in_both_paths(model_dir, toy_corpus):
    """``precision="int8"`` at construction or per call: the batched and the per-text path give ``predict``'s int8
    scores for the same batches; the fp32 model's encoder is left as it was. Dynamic quantization scales activations
    per batch, so a text's int8 score moves slightly with its batch companions (documented; not so in fp32)."""
    model = SCCLModel.from_pretrained(model_dir)
    texts = toy_corpus[0][:12]
    probs = model.predict_proba(texts, precision="int8")
    alone = [model.predict_proba([t], precision="int8")[0] for t in texts]
    assert type(model.encoder.encoder.layer[0].attention.self.query) is torch.nn.Linear  # not quantized in place
    for clusterer, options in (
        (pipeline("text-clustering", model=str(model_dir), precision="int8"), {}),
        (pipeline("text-clustering", model=str(model_dir)), {"precision": "int8"}),
    ):
        batched = clusterer(texts, **options)
        streamed = list(clusterer((t for t in texts), batch_size=1, **options))
        for r_b, r_s, p, p_alone in zip(batched, streamed, probs, alone):
            assert r_b["cluster"] == int(p.argmax()) and r_b["score"] == pytest.approx(float(p.max()), abs=1e-6)
            assert r_s["cluster"] == int(p_alone.argmax())
            assert r_s["score"] == pytest.approx(float(p_alone.max()), abs=1e-6)
            assert r_s["score"] == pytest.approx(r_b["score"], abs=0.02)
    with pytest.raises(ValueError, match="`precision` must be one of"):
        pipeline("text-clustering", model=str(model_dir))(texts, precision="int4")
