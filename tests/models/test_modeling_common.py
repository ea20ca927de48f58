"""The contract every registered method keeps (transformers' test_modeling_common habit): one suite, parametrised over
``hf_textcluster.models.METHODS``, on the tiny encoder. A new method runs it by being registered; its own test folder
keeps only what is specific to its paper."""

from __future__ import annotations

import ast
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModel, TrainerCallback, pipeline
from transformers.dynamic_module_utils import get_class_from_dynamic_module, get_imports

import hf_textcluster  # noqa: F401
from hf_textcluster import train_clusterer
from hf_textcluster.data import load_texts
from hf_textcluster.editing import initialize_clusters
from hf_textcluster.hub import save_pretrained
from hf_textcluster.models import METHODS
from hf_textcluster.models.building import from_encoder_pretrained
from hf_textcluster.models.remote_code import auto_map, remote_code_files

METHOD_NAMES = sorted(METHODS)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "saved_models"
TRAIN = dict(per_device_train_batch_size=16, bf16=False, save_strategy="no", logging_steps=1, disable_tqdm=True)


def _train(method, tiny_encoder_dir, toy_corpus, output_dir, **overrides):
    texts, labels = toy_corpus
    torch.manual_seed(0)
    return train_clusterer(
        method,
        load_texts(texts, labels),
        str(output_dir),
        encoder=str(tiny_encoder_dir),
        training_overrides={**TRAIN, "max_steps": 3, **overrides},
        evaluate=False,
    )


@pytest.fixture(scope="module")
def trained(tiny_encoder_dir, toy_corpus, tmp_path_factory):
    """``trained(method)``: the directory of a real 3-step training run of that method (made on first use)."""
    runs = {}

    def get(method):
        if method not in runs:
            runs[method] = _train(
                method, tiny_encoder_dir, toy_corpus, tmp_path_factory.mktemp(method) / "run"
            ).output_dir
        return Path(runs[method])

    return get


# ----- the registry
# ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHOD_NAMES)
def test_registry_entry_is_complete(method):
    spec = METHODS[method]
    assert spec.config_class.model_type == method and spec.model_class.config_class is spec.config_class
    assert {"paper", "cpu"} <= set(json.loads(spec.recipe_file.read_text()))
    assert spec.card_fragment.is_file() and "## Objective" in spec.card_fragment.read_text()
    assert spec.loss_terms and all(name.isidentifier() for name in spec.loss_terms)
    # one registry feeds the package's names, the Auto classes and the CLI
    assert getattr(hf_textcluster, spec.model_class.__name__) is spec.model_class
    from hf_textcluster.cli import build_parser

    assert build_parser().parse_args(["train", "--method", method, "--output-dir", "x"]).method == method


# ----- training, logging, saving, loading
# ------------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHOD_NAMES)
def test_another_encoder_architecture_trains_and_round_trips_or_is_refused_by_name(
    method, tiny_mpnet_dir, toy_corpus, tmp_path
):
    """MPNet (all-mpnet-base-v2, the stronger pip-shipped encoder): no token type ids, a different attention."""
    if method == "clusterbert":  # TSDAE runs the encoder's architecture as a decoder; transformers has no MPNet one
        with pytest.raises(ValueError, match=r"no decoder version of 'mpnet'.*Pass `encoder=`"):
            _train(method, tiny_mpnet_dir, toy_corpus, tmp_path / "run", max_steps=1)
        return
    run_dir = _train(method, tiny_mpnet_dir, toy_corpus, tmp_path / "run", max_steps=1).output_dir
    model = AutoModel.from_pretrained(run_dir)
    assert model.encoder.config.model_type == "mpnet"
    np.testing.assert_array_equal(
        model.predict(toy_corpus[0]), METHODS[method].model_class.from_pretrained(run_dir).predict(toy_corpus[0])
    )


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_trained_model_round_trips_through_auto_model_and_pipeline(method, trained, toy_corpus):
    texts = toy_corpus[0]
    run_dir = trained(method)
    model = AutoModel.from_pretrained(run_dir)
    assert type(model) is METHODS[method].model_class and model.config.centroids_initialized
    files = {p.name for p in run_dir.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "training_run.json"} <= files
    assert not any(name.endswith((".bin", ".pt", ".pkl")) or name.startswith(".saving-") for name in files)
    predictions = model.predict(texts)
    again = METHODS[method].model_class.from_pretrained(run_dir)
    np.testing.assert_array_equal(again.predict(texts), predictions)
    np.testing.assert_allclose(again.predict_proba(texts), model.predict_proba(texts), rtol=1e-6, atol=1e-7)
    clusterer = pipeline("text-clustering", model=str(run_dir))
    results = clusterer(texts)
    assert [r["cluster"] for r in results] == predictions.tolist()
    # named once at the end of training, on the training texts (c-TF-IDF, or DEC-CRL's learned topics): saved
    names = {int(k): v for k, v in json.loads((run_dir / "config.json").read_text())["id2label"].items()}
    assert all(name != f"cluster_{k}" and " · " in name for k, name in names.items()), names
    assert [r["label"] for r in results] == [names[c] for c in predictions.tolist()]
    # calibrated at the end of training, whatever the head: a confidence per text and outliers on request
    assert model.is_calibrated and model.config.num_calibration_texts == len(texts)
    details = model.predict_with_confidence(texts)
    np.testing.assert_array_equal(details["cluster"], predictions)
    np.testing.assert_allclose([r["confidence"] for r in results], details["confidence"], atol=1e-4)
    # a confidence a user can threshold, whatever partition the model serves: spread, not saturated at 1.0
    confidence = details["confidence"]
    assert (confidence == 1.0).mean() <= 0.05, model.config.served_partition
    assert ((confidence > 0.25) & (confidence < 1.0)).mean() >= 0.5, model.config.served_partition
    flagged = clusterer(texts, flag_outliers=True)
    assert [r["cluster"] == -1 for r in flagged] == details["is_outlier"].tolist()
    run = json.loads((run_dir / "training_run.json").read_text())
    assert run["method"] == method and run["precision"].startswith("fp32 (forced")


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_reclustering_a_trained_model_serves_its_kmeans(method, trained, toy_corpus, tmp_path):
    """``initialize_clusters`` on a trained model: predict gives the nearest k-means centre in the method's k-means
    space (the benchmark's "k-means after"; AECL: the embeddings, not its projector), the stale calibration is
    dropped, and the re-clustered model round-trips."""
    texts = toy_corpus[0]
    model = AutoModel.from_pretrained(trained(method))
    assert model.is_calibrated
    labels = initialize_clusters(model, texts, random_state=1)
    embeddings = torch.from_numpy(model.embed(texts)).to(model.device)
    features = model.kmeans_features(embeddings).detach().numpy()
    if method == "aecl":  # re-clustered on the embeddings themselves
        np.testing.assert_array_equal(features, embeddings.numpy())
    centres = np.stack([features[labels == k].mean(axis=0) for k in range(model.config.num_clusters)])
    nearest = ((features[:, None, :] - centres[None]) ** 2).sum(-1).argmin(1)  # direct recomputation
    np.testing.assert_array_equal(model.predict(texts), labels)
    np.testing.assert_array_equal(nearest, labels)
    assert not model.is_calibrated
    model.save_pretrained(tmp_path / "reclustered")
    np.testing.assert_array_equal(AutoModel.from_pretrained(tmp_path / "reclustered").predict(texts), labels)


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_logged_loss_terms_are_the_registered_ones(method, tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch):
    import transformers.trainer_utils

    warned = []  # the Trainer's "tokenizer has new PAD/BOS/EOS tokens" warning: our configs record them up front
    monkeypatch.setattr(transformers.trainer_utils.logger, "warning", lambda message, *a, **k: warned.append(message))
    result = _train(method, tiny_encoder_dir, toy_corpus, tmp_path / "run", max_steps=2)
    assert not [m for m in warned if "PAD/BOS/EOS" in m], warned
    logged = {
        key[len("loss_") :] for entry in result.trainer.state.log_history for key in entry if key.startswith("loss_")
    }
    assert logged and logged <= set(METHODS[method].loss_terms), logged


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_predict_before_fitting_is_a_clear_error(method, tiny_encoder_dir, toy_corpus, tmp_path):
    model = from_encoder_pretrained(METHODS[method].model_class, str(tiny_encoder_dir), num_clusters=3)
    with pytest.raises(RuntimeError, match="never initialised"):
        model.predict(toy_corpus[0][:3])
    model.save_pretrained(tmp_path)
    with pytest.raises(RuntimeError, match="never initialised"):
        pipeline("text-clustering", model=str(tmp_path))


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_loading_with_another_methods_class_is_a_clear_error(method, trained):
    for other in METHODS.values():
        if other.name != method:
            with pytest.raises(ValueError, match=f"is a '{method}' model"):
                other.model_class.from_pretrained(trained(method))


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_loading_an_encoder_checkpoint_is_a_clear_error(method, tiny_encoder_dir):
    with pytest.raises(ValueError, match=f"is a 'bert' model, not '{method}'"):
        METHODS[method].model_class.from_pretrained(tiny_encoder_dir)


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_an_edited_config_that_no_longer_fits_the_weights(method, trained, tmp_path):
    shutil.copytree(trained(method), tmp_path / "run")
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    config["num_clusters"] = 4
    config.pop("id2label"), config.pop("label2id")
    (tmp_path / "run" / "config.json").write_text(json.dumps(config))
    with pytest.raises((ValueError, RuntimeError), match="(?i)size|shape"):
        METHODS[method].model_class.from_pretrained(tmp_path / "run")


@pytest.mark.parametrize(
    "bad,error,match",
    [
        (None, TypeError, "None"),
        ("one string", TypeError, "list of strings"),
        ([], ValueError, "empty"),
        (["ok", 3], TypeError, "item 1"),
        (["ok", "  "], ValueError, "1"),
    ],
)
@pytest.mark.parametrize("method", METHOD_NAMES)
def test_predict_rejects_bad_texts(method, trained, bad, error, match):
    with pytest.raises(error, match=match):
        AutoModel.from_pretrained(trained(method)).predict(bad)


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_num_clusters_that_disagrees_with_the_checkpoint(method, trained):
    with pytest.raises(ValueError, match="num_clusters=5"):
        METHODS[method].model_class.from_pretrained(trained(method), num_clusters=5)


class _InterruptAfter(TrainerCallback):
    """Interrupts when step ``step`` is done and its checkpoint written (at the start of the next step: on_step_end
    runs before the Trainer saves)."""

    def __init__(self, step):
        self.step = step

    def on_step_begin(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise KeyboardInterrupt


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_an_interrupted_run_resumes_to_the_same_weights(method, tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch):
    straight = _train(method, tiny_encoder_dir, toy_corpus, tmp_path / "straight", max_steps=4).model
    trainer_class = METHODS[method].trainer_class
    original_init = trainer_class.__init__

    def init_with_interrupt(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self.add_callback(_InterruptAfter(2))

    monkeypatch.setattr(trainer_class, "__init__", init_with_interrupt)
    with pytest.raises(KeyboardInterrupt):
        _train(
            method, tiny_encoder_dir, toy_corpus, tmp_path / "resumed", max_steps=4, save_strategy="steps", save_steps=2
        )
    monkeypatch.setattr(trainer_class, "__init__", original_init)
    assert (tmp_path / "resumed" / "checkpoint-2").is_dir()  # there is something to resume from
    resumed = _train(
        method, tiny_encoder_dir, toy_corpus, tmp_path / "resumed", max_steps=4, save_strategy="steps", save_steps=2
    )
    assert resumed.trainer.state.global_step == 4
    for name, tensor in straight.state_dict().items():
        # the calibration is computed from the weights (an encoding pass): their 1e-7 noise reaches it amplified
        atol = 1e-5 if name.startswith("calibration.") else 1e-6
        torch.testing.assert_close(resumed.model.state_dict()[name], tensor, rtol=1e-5, atol=atol, msg=name)


# ----- remote code: the package's own classes, shipped
# -----------------------------------------------------------------
# The standard library, and the third-party packages every transformers install has.
ALLOWED_REMOTE_IMPORTS = set(sys.stdlib_module_names) | {"numpy", "torch", "tqdm", "transformers", "huggingface_hub"}


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_shipped_code_imports_only_torch_numpy_transformers(method, tmp_path):
    files = remote_code_files(method)
    assert f"modeling_{method}.py" in files and "pipelines.py" in files
    for name, source in files.items():
        (tmp_path / name).write_text(source)
        assert set(get_imports(tmp_path / name)) <= ALLOWED_REMOTE_IMPORTS, (name, get_imports(tmp_path / name))
        for node in ast.walk(ast.parse(source)):  # relative imports point at sibling files that are shipped too
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.level == 1 and f"{node.module}.py" in files, (name, node.module)


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_remote_code_predicts_like_the_package(method, trained, toy_corpus, tmp_path):
    """The shipped files, loaded by transformers' dynamic-module machinery, give the package's predictions."""
    texts = toy_corpus[0]
    shutil.copytree(trained(method), tmp_path / "repo")
    repo = tmp_path / "repo"
    package = AutoModel.from_pretrained(repo)
    save_pretrained(package, repo, remote_code=True)
    config = json.loads((repo / "config.json").read_text())
    assert {k: config[k] for k in ("auto_map", "custom_pipelines")} == auto_map(method)
    model_class = get_class_from_dynamic_module(config["auto_map"]["AutoModel"], str(repo))
    assert model_class.__module__.startswith("transformers_modules.") and model_class is not type(package)
    remote, info = model_class.from_pretrained(repo, output_loading_info=True)
    assert not any(info[key] for key in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs")), info
    np.testing.assert_array_equal(remote.predict(texts), package.predict(texts))
    np.testing.assert_allclose(remote.predict_proba(texts), package.predict_proba(texts), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(
        remote.predict_with_confidence(texts)["confidence"],
        package.predict_with_confidence(texts)["confidence"],
        atol=1e-6,
    )
    pipeline_class = get_class_from_dynamic_module(config["custom_pipelines"]["text-clustering"]["impl"], str(repo))
    clusterer = pipeline_class(model=remote, tokenizer=remote.tokenizer)
    assert [r["cluster"] for r in clusterer(texts)] == package.predict(texts).tolist()
    # the remote class saves a complete checkpoint back (cards and remote code are the package's Hub layer's)
    remote.save_pretrained(tmp_path / "resaved")
    np.testing.assert_array_equal(
        AutoModel.from_pretrained(tmp_path / "resaved").predict(texts), package.predict(texts)
    )


# ----- a committed checkpoint loads and predicts what it predicted when it was saved ----------------------------------
@pytest.mark.parametrize("method", sorted(p.name for p in FIXTURES.iterdir()))
def test_a_committed_checkpoint_predicts_the_same(method):
    expected = json.loads((FIXTURES / method / "expected_predictions.json").read_text())
    model = AutoModel.from_pretrained(FIXTURES / method)
    assert type(model) is METHODS[method].model_class
    probs = model.predict_proba(expected["texts"], precision="fp32")
    np.testing.assert_allclose(probs, np.asarray(expected["probs"]), rtol=1e-5, atol=1e-6)
    assert probs.argmax(-1).tolist() == expected["clusters"]


def test_kmeans_init_is_checked_and_starts_the_trainer_from_umap_seeded_kmeans(
    tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch
):
    pytest.importorskip("umap")
    import hf_textcluster.editing.clusters
    from hf_textcluster.editing.kmeans import fit_kmeans
    from hf_textcluster.training.arguments import ClusteringTrainingArguments

    with pytest.raises(ValueError, match="kmeans_init"):
        ClusteringTrainingArguments(output_dir=str(tmp_path / "x"), kmeans_init="kmeans")
    fits = []

    def recording_fit(features, *args, **kwargs):
        fits.append((kwargs.get("init"), fit_kmeans(features, *args, **kwargs)))
        return fits[-1][1]

    monkeypatch.setattr(hf_textcluster.editing.clusters, "fit_kmeans", recording_fit)
    result = _train("sccl", tiny_encoder_dir, toy_corpus, tmp_path / "run", max_steps=1, kmeans_init="umap")
    assert [init for init, _ in fits] == ["umap"]  # the initialisation; the evaluation's k-means is not this one
    np.testing.assert_array_equal(result.trainer.initial_kmeans_labels, fits[0][1].labels_)


# ----- serving a refined partition
# -------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHOD_NAMES)
def test_a_refined_partition_is_served_after_save_load_pipeline_and_remote_code(method, trained, toy_corpus, tmp_path):
    """``serve_partition(serve="kmeans+refined")``: the linear refined head predicts the refined partition of the
    training texts, assigns unseen texts, survives save / AutoModel / the pipeline / remote code, and a later
    re-clustering replaces it."""
    from hf_textcluster.choosing.serving import serve_partition

    texts = toy_corpus[0]
    model = AutoModel.from_pretrained(trained(method))
    choice = serve_partition(model, model.embed(texts), serve="kmeans+refined", random_state=0)
    assert choice.served == model.config.served_partition == "kmeans+refined"
    assert model.config.refined_head_dim > 0 and not model.is_calibrated
    np.testing.assert_array_equal(model.predict(texts), choice.labels)
    # direct recomputation of what the head serves: argmax of W x/|x| + b on the k-means features
    features = model.kmeans_features(torch.from_numpy(model.embed(texts))).detach()
    logits = torch.nn.functional.normalize(features, dim=-1) @ model.refined_head.weight.T + model.refined_head.bias
    np.testing.assert_array_equal(logits.argmax(-1).numpy(), choice.labels)
    model.calibrate(texts)
    unseen = ["a text the model never saw", "another unseen sentence about tables"]
    save_pretrained(model, tmp_path / "refined", remote_code=True)
    reloaded = AutoModel.from_pretrained(tmp_path / "refined")
    assert reloaded.config.served_partition == "kmeans+refined"
    np.testing.assert_array_equal(reloaded.predict(texts), choice.labels)
    np.testing.assert_array_equal(reloaded.predict(unseen), model.predict(unseen))
    clusterer = pipeline("text-clustering", model=str(tmp_path / "refined"))
    assert [r["cluster"] for r in clusterer(texts)] == choice.labels.tolist()
    config = json.loads((tmp_path / "refined" / "config.json").read_text())
    remote = get_class_from_dynamic_module(config["auto_map"]["AutoModel"], str(tmp_path / "refined"))
    np.testing.assert_array_equal(remote.from_pretrained(tmp_path / "refined").predict(texts), choice.labels)
    initialize_clusters(reloaded, texts, random_state=1)  # new centres replace the refined head
    assert reloaded.config.refined_head_dim == 0 and reloaded.config.served_partition == "head"
    assert "refined_head" not in dict(reloaded.named_children())
