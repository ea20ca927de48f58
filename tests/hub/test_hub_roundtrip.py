"""Hub round trip over real HTTP on 127.0.0.1: push -> load by repo id -> identical predictions.

The server (``tests/hub/hub_server.py``) is a STAND-IN for the Hugging Face Hub: a small standard-library server that
implements the routes huggingface_hub 2.x uses to create a repository, upload (preupload, LFS batch + PUT, ndjson
commit) and download (repository info, tree, resolve). It is not the Hub, and passing here does not prove that the
real Hub accepts the same requests; it does prove that the files go over HTTP through huggingface_hub's real client
code, and that what comes back is what was pushed.

Every client runs in a subprocess (huggingface_hub reads ``HF_ENDPOINT`` at import time).
"""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np
import pytest
import yaml
from hub_client import run_client

from hf_textcluster.models import METHODS
from hf_textcluster.models.remote_code import auto_map, remote_code_files

pytestmark = pytest.mark.timeout(600)

PUSH_AND_LOAD = """
import os
import hf_textcluster
from hf_textcluster.cli import main as cli_main
from hf_textcluster.hub import push_to_hub
from hf_textcluster.runs.folder import RunFolder
from huggingface_hub import HfApi, hf_hub_download
from transformers import AutoModel, pipeline

texts = PAYLOAD["texts"]
run = RunFolder(PAYLOAD["run_dir"]).read_record()
model = AutoModel.from_pretrained(PAYLOAD["run_dir"])
commit = push_to_hub(model, "org/sccl-toy", training_run=run, texts=texts, dataset_name="toy-topics")
cli_exit = cli_main(
    ["push", "--model", PAYLOAD["run_dir"], "--repo-id", "org/sccl-toy-cli", "--commit-message", "pushed by the CLI"]
)
push_to_hub(model, "org/sccl-toy", revision="v2", license="mit", commit_message="to a branch")
model.save_pretrained(PAYLOAD["save_dir"], push_to_hub=True, repo_id="org/sccl-toy-save")

loaded = AutoModel.from_pretrained("org/sccl-toy")
clusterer = pipeline("text-clustering", model="org/sccl-toy")
from_cli = AutoModel.from_pretrained("org/sccl-toy-cli")
api = HfApi()
emit({
    "commit": commit.oid,
    "class": type(loaded).__name__,
    "predictions": loaded.predict(texts).tolist(),
    "probabilities": loaded.predict_proba(texts).tolist(),
    "pipeline": [r["cluster"] for r in clusterer(texts)],
    "cli_exit": cli_exit,
    "cli_predictions": from_cli.predict(texts).tolist(),
    "files": sorted(api.list_repo_files("org/sccl-toy")),
    "cli_files": sorted(api.list_repo_files("org/sccl-toy-cli")),
    "branch_predictions": AutoModel.from_pretrained("org/sccl-toy", revision="v2").predict(texts).tolist(),
    "branch_files": sorted(api.list_repo_files("org/sccl-toy", revision="v2")),
    "save_push_files": sorted(api.list_repo_files("org/sccl-toy-save")),
    "save_dir_files": sorted(os.listdir(PAYLOAD["save_dir"])),
    "readme": open(hf_hub_download("org/sccl-toy", "README.md")).read(),
    "config": json.load(open(hf_hub_download("org/sccl-toy", "config.json"))),
})
"""

PUSH_DECMLM = """
import hf_textcluster
from hf_textcluster.hub import push_to_hub
from hf_textcluster.runs.folder import RunFolder
from huggingface_hub import HfApi, hf_hub_download
from transformers import AutoModel

model = AutoModel.from_pretrained(PAYLOAD["model_dir"])
push_to_hub(model, PAYLOAD["repo_id"], texts=PAYLOAD["texts"], metrics={"acc": 0.5, "nmi": 0.4})
emit({
    "files": sorted(HfApi().list_repo_files(PAYLOAD["repo_id"])),
    "readme": open(hf_hub_download(PAYLOAD["repo_id"], "README.md")).read(),
    "config": json.load(open(hf_hub_download(PAYLOAD["repo_id"], "config.json"))),
})
"""

WITHOUT_THE_PACKAGE = """
import importlib.util
import logging
try:
    import hf_textcluster  # noqa: F401
    hidden = False
except ModuleNotFoundError:
    hidden = True
from transformers import AutoModel, pipeline

class Keep(logging.Handler):  # transformers' warnings (its load report lists missing / unexpected weights)
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []
    def emit(self, record):
        self.messages.append(record.getMessage())
warnings_seen = Keep()
logging.getLogger("transformers").addHandler(warnings_seen)

texts, repo = PAYLOAD["texts"], PAYLOAD["repo_id"]
model, loading = AutoModel.from_pretrained(repo, trust_remote_code=True, output_loading_info=True)
load_warnings = list(warnings_seen.messages)
clusterer = pipeline("text-clustering", model=repo, trust_remote_code=True)
top = clusterer(texts[0], top_k=2)
model.save_pretrained(PAYLOAD["save_dir"])  # the remote class writes the checkpoint back
model.save_pretrained(PAYLOAD["save_dir"] + "-pushed", push_to_hub=True, repo_id=repo + "-resaved")
from huggingface_hub import HfApi
emit({
    "hidden": hidden,
    "class": type(model).__module__ + "." + type(model).__name__,
    "pipeline_class": type(clusterer).__module__ + "." + type(clusterer).__name__,
    "loading": {key: sorted(value) for key, value in loading.items()},
    "load_warnings": load_warnings,
    "predictions": model.predict(texts).tolist(),
    "probabilities": model.predict_proba(texts).tolist(),
    "pipeline": [r["cluster"] for r in clusterer(texts)],
    "top_k": top,
    "loaded_modules": sorted(m for m in sys.modules if m.split(".")[0] == "hf_textcluster"),
    "no_trust": error_of(lambda: pipeline("text-clustering", model=repo)),
    "resaved_files": sorted(HfApi().list_repo_files(repo + "-resaved")),
})
"""

REPO_IDS = {"sccl": "org/sccl-toy", "decmlm": "org/decmlm-toy"}


@pytest.fixture(scope="module")
def pushed(hub_server, hub_env, trained_run, toy_corpus, tmp_path_factory):
    """Push the trained toy model twice (Python API and CLI) and load it back by repo id, in one client process."""
    texts = toy_corpus[0][:40]
    payload = {"run_dir": str(trained_run), "texts": texts, "save_dir": str(tmp_path_factory.mktemp("save-push"))}
    result = run_client(PUSH_AND_LOAD, hub_env, payload)
    return result


@pytest.fixture(scope="module")
def pushed_decmlm(hub_server, hub_env, decmlm_dir, toy_corpus):
    """The fitted DEC-MLM model pushed (Python API, default remote code) to org/decmlm-toy."""
    payload = {"model_dir": str(decmlm_dir), "repo_id": REPO_IDS["decmlm"], "texts": toy_corpus[0][:40]}
    return run_client(PUSH_DECMLM, hub_env, payload)


@pytest.fixture(scope="module")
def pushed_by_method(request):
    """``pushed_by_method(method)``: what the push of that method's model returned (files, config, card)."""
    return lambda method: request.getfixturevalue({"sccl": "pushed", "decmlm": "pushed_decmlm"}[method])


def package_predictions(model_dir, texts):
    from transformers import AutoModel

    import hf_textcluster  # noqa: F401

    model = AutoModel.from_pretrained(model_dir)
    return model.predict(texts).tolist(), model.predict_proba(texts)


@pytest.fixture(scope="module")
def local_predictions(trained_run, toy_corpus):
    return package_predictions(trained_run, toy_corpus[0][:40])


def _front_matter(readme: str) -> dict:
    match = re.match(r"---\n(.*?)\n---\n", readme, flags=re.S)
    assert match, readme[:300]
    return yaml.safe_load(match.group(1))


def test_push_then_load_by_repo_id_gives_identical_predictions(pushed, local_predictions):
    predictions, probabilities = local_predictions
    assert pushed["class"] == "SCCLModel"
    assert pushed["predictions"] == predictions
    assert pushed["pipeline"] == predictions
    np.testing.assert_allclose(np.array(pushed["probabilities"]), probabilities, rtol=1e-5, atol=1e-6)
    assert pushed["cli_exit"] == 0 and pushed["cli_predictions"] == predictions
    assert pushed["branch_predictions"] == predictions  # pushed to a new branch, loaded with revision=


def test_other_ways_to_push(pushed, hub_server):
    repo = hub_server.state.repos[("model", "org/sccl-toy")]
    assert repo.commits[repo.branches["v2"]].title == "to a branch" and repo.branches["v2"] != repo.branches["main"]
    assert "model.safetensors" in pushed["branch_files"]
    # the model's own save-and-push is transformers' (the card and the remote code are the Hub layer's push_to_hub)
    assert "model.safetensors" in pushed["save_push_files"]
    # save_pretrained(push_to_hub=True) also saved locally, without card or remote code (as asked: nothing)
    assert "model.safetensors" in pushed["save_dir_files"] and "README.md" not in pushed["save_dir_files"]


def test_pushed_repository_holds_weights_tokenizer_card_and_remote_code(pushed):
    expected = {
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "README.md",
        "modeling_sccl.py",
        "training_run.json",
    }
    assert expected <= set(pushed["files"])
    assert expected <= set(pushed["cli_files"])


@pytest.mark.parametrize("method", sorted(REPO_IDS))
def test_pushed_repository_ships_the_remote_code_of_its_method(method, pushed_by_method):
    pushed = pushed_by_method(method)
    expected = {"config.json", "model.safetensors", "tokenizer.json", "README.md", f"modeling_{method}.py"}
    assert expected <= set(pushed["files"])
    assert not any(name.endswith((".bin", ".pt", ".pkl")) for name in pushed["files"])
    assert sorted(name for name in pushed["files"] if name.endswith(".py")) == sorted(remote_code_files(method))
    config = pushed["config"]
    assert config["model_type"] == method and config["centroids_initialized"] is True
    assert {k: config[k] for k in ("auto_map", "custom_pipelines")} == auto_map(method)
    assert f'pipeline("text-clustering", model="{REPO_IDS[method]}", trust_remote_code=True)' in pushed["readme"]
    assert "custom_code" in _front_matter(pushed["readme"])["tags"]


def test_pushed_card_reports_the_measured_metrics(pushed, trained_run):
    run = json.loads((trained_run / "training_run.json").read_text())
    meta = _front_matter(pushed["readme"])
    assert meta["library_name"] == "hf_textcluster"
    assert {"text-clustering", "sccl", "hf_textcluster"} <= set(meta["tags"])
    assert meta["datasets"] == ["toy-topics"] and meta["license"] == "apache-2.0"
    results = meta["model-index"][0]["results"][0]
    values = {m["type"]: m["value"] for m in results["metrics"]}
    assert values["accuracy"] == pytest.approx(run["metrics"]["eval_acc"], abs=1e-4)
    assert values["nmi"] == pytest.approx(run["metrics"]["eval_nmi"], abs=1e-4)
    assert f"{100 * run['metrics']['eval_acc']:.1f}" in pushed["readme"]
    assert 'pipeline("text-clustering", model="org/sccl-toy", trust_remote_code=True)' in pushed["readme"]
    assert "hf-textcluster train" in pushed["readme"] and "top keywords" in pushed["readme"]


def test_the_bytes_went_over_http(pushed, hub_server, trained_run):
    weights = (trained_run / "model.safetensors").read_bytes()
    oid = hashlib.sha256(weights).hexdigest()
    puts = hub_server.state.requests("PUT", f"^/__lfs__/{oid}$")
    assert puts and puts[0]["status"] == 200 and puts[0]["bytes_in"] == len(weights)
    commits = hub_server.state.requests("POST", r"^/api/models/org/sccl-toy/commit/main$")
    assert commits and commits[0]["status"] == 200
    downloads = [
        r for r in hub_server.state.requests("GET", r"^/org/sccl-toy/resolve/[0-9a-f]{40}/model\.safetensors$")
    ]
    assert downloads and downloads[0]["bytes_out"] == len(weights)
    stored = hub_server.state.repos[("model", "org/sccl-toy")]
    head = stored.commits[stored.branches["main"]]
    assert head.oid == pushed["commit"] and head.files["model.safetensors"].data == weights


@pytest.mark.parametrize("method", sorted(REPO_IDS))
def test_remote_code_works_where_hf_textcluster_is_not_installed(
    method, pushed_by_method, model_dir_of, hub_env, toy_corpus, tmp_path
):
    pushed_by_method(method)
    model_dir = model_dir_of(method)
    texts = toy_corpus[0][:40]
    predictions, probabilities = package_predictions(model_dir, texts)
    payload = {"texts": texts, "repo_id": REPO_IDS[method], "save_dir": str(tmp_path / "saved-back")}
    result = run_client(WITHOUT_THE_PACKAGE, hub_env, payload, hide_package=True)
    assert result["hidden"] and result["loaded_modules"] == []
    model_class = METHODS[method].model_class.__name__
    assert result["class"].startswith("transformers_modules")
    assert result["class"].endswith(f"modeling_{method}.{model_class}")
    assert result["pipeline_class"].endswith("pipelines.TextClusteringPipeline")
    # every weight of the checkpoint has its place in the remote class (DEC-MLM's masked-LM head included)
    assert result["loading"] == {"missing_keys": [], "unexpected_keys": [], "mismatched_keys": [], "error_msgs": []}
    assert not [m for m in result["load_warnings"] if "LOAD REPORT" in m or "weights" in m.lower()], result
    assert result["predictions"] == predictions and result["pipeline"] == predictions
    np.testing.assert_allclose(np.array(result["probabilities"]), probabilities, rtol=1e-5, atol=1e-6)
    assert len(result["top_k"]) == 2 and {"cluster", "label", "score"} <= set(result["top_k"][0])
    assert result["no_trust"] is not None and "trust_remote_code" in result["no_trust"]["message"]

    # What the remote class saved back is the complete checkpoint, which the package loads and predicts with.
    from safetensors.torch import load_file

    saved_back = tmp_path / "saved-back"
    original, written = load_file(model_dir / "model.safetensors"), load_file(saved_back / "model.safetensors")
    assert set(written) == set(original)
    for name, tensor in original.items():
        assert written[name].equal(tensor), name
    # transformers' own save of a remote class copies its code files along
    assert {"config.json", "model.safetensors", "tokenizer.json", f"modeling_{method}.py"} <= {
        p.name for p in saved_back.iterdir()
    }
    assert {"config.json", "model.safetensors", "tokenizer.json", f"modeling_{method}.py"} <= set(
        result["resaved_files"]
    )
    assert package_predictions(saved_back, texts)[0] == predictions
