"""Bad input on the Hub path, against the stand-in Hub server (see tests/hub/hub_server.py: NOT the real Hub): a repo
id that does not exist, a repository of another library, a push without a trained model, a card without metrics.
Each must give a clear error or warning, and never a silent half-upload."""

from __future__ import annotations

import pytest
from hub_client import run_client

pytestmark = pytest.mark.timeout(600)

BAD_INPUTS = """
import hf_textcluster
from hf_textcluster import SCCLModel, TextClusteringPreTrainedModel, from_encoder_pretrained
from hf_textcluster.cli import main as cli_main
from hf_textcluster.hub import push_to_hub
from huggingface_hub import hf_hub_download
from transformers import AutoModel, pipeline

result = {}
result["missing_sccl"] = error_of(lambda: SCCLModel.from_pretrained("org/does-not-exist"))
result["missing_auto"] = error_of(lambda: AutoModel.from_pretrained("org/does-not-exist"))
result["missing_pipeline"] = error_of(lambda: pipeline("text-clustering", model="org/does-not-exist"))
result["bert_sccl"] = error_of(lambda: SCCLModel.from_pretrained("org/plain-bert"))
result["bert_base"] = error_of(lambda: TextClusteringPreTrainedModel.from_pretrained("org/plain-bert"))
result["bert_pipeline"] = error_of(lambda: pipeline("text-clustering", model="org/plain-bert"))

untrained = from_encoder_pretrained(SCCLModel, PAYLOAD["encoder"], num_clusters=3)
result["untrained_push"] = error_of(lambda: push_to_hub(untrained, "org/untrained"))
untrained.save_pretrained(PAYLOAD["untrained_dir"])
result["untrained_cli_exit"] = cli_main(["push", "--model", PAYLOAD["untrained_dir"], "--repo-id", "org/untrained-cli"])

trained = AutoModel.from_pretrained(PAYLOAD["run_dir"])
tokenizer, trained.tokenizer = trained.tokenizer, None
result["no_tokenizer_push"] = error_of(lambda: push_to_hub(trained, "org/no-tokenizer"))
trained.tokenizer = tokenizer

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    push_to_hub(trained, "org/no-metrics")
result["no_metrics_warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
result["no_metrics_readme"] = open(hf_hub_download("org/no-metrics", "README.md")).read()

from huggingface_hub import HfApi  # a re-push: the code file of an earlier push goes, the user's own file stays

for name in ("standalone_textcluster.py", "handler.py"):
    HfApi().upload_file(path_or_fileobj=b"# old", path_in_repo=name, repo_id="org/no-metrics")
push_to_hub(trained, "org/no-metrics")
result["repushed_files"] = sorted(HfApi().list_repo_files("org/no-metrics"))
emit(result)
"""


@pytest.fixture(scope="module")
def bad_input_results(hub_server, hub_env, trained_run, tiny_encoder_dir, tmp_path_factory):
    files = {p.name: p.read_bytes() for p in tiny_encoder_dir.iterdir() if p.is_file()}
    hub_server.state.add_repo_from_files("model", "org/plain-bert", files)
    payload = {
        "encoder": str(tiny_encoder_dir),
        "run_dir": str(trained_run),
        "untrained_dir": str(tmp_path_factory.mktemp("untrained")),
    }
    return run_client(BAD_INPUTS, hub_env, payload)


def _requests_naming(hub_server, name: str) -> list[dict]:
    return [r for r in hub_server.log if name in r["path"] or name in r["query"]]


def test_a_repo_id_that_does_not_exist(bad_input_results):
    for key in ("missing_sccl", "missing_auto", "missing_pipeline"):  # transformers' own message
        error = bad_input_results[key]
        assert error["type"] == "OSError" and "org/does-not-exist is not a local folder" in error["message"], error


def test_a_repository_of_another_library(bad_input_results):
    for key in ("bert_sccl", "bert_base", "bert_pipeline"):
        error = bad_input_results[key]
        assert error is not None and error["type"] == "ValueError", (key, error)
        assert "not an hf_textcluster" in error["message"] or "not 'sccl'" in error["message"], error


def test_pushing_an_untrained_model_uploads_nothing(bad_input_results, hub_server):
    error = bad_input_results["untrained_push"]
    assert error["type"] == "RuntimeError" and "never initialised" in error["message"]
    assert "Nothing was uploaded" in error["message"]
    assert bad_input_results["untrained_cli_exit"] == 2
    assert _requests_naming(hub_server, "untrained") == []
    assert ("model", "org/untrained") not in hub_server.state.repos


def test_pushing_without_a_tokenizer_uploads_nothing(bad_input_results, hub_server):
    error = bad_input_results["no_tokenizer_push"]
    assert error["type"] == "ValueError" and "tokenizer" in error["message"]
    assert _requests_naming(hub_server, "no-tokenizer") == []


def test_a_re_push_deletes_the_code_files_of_an_earlier_push_only(bad_input_results):
    files = bad_input_results["repushed_files"]
    assert "standalone_textcluster.py" not in files and "handler.py" in files, files
    assert "config.json" in files and any(name.startswith("modeling_") for name in files), files


def test_a_card_without_metrics_warns_and_says_not_measured(bad_input_results):
    warnings = bad_input_results["no_metrics_warnings"]
    assert any(w.startswith("MetricsNotMeasuredWarning") and "not measured" in w for w in warnings), warnings
    readme = bad_input_results["no_metrics_readme"]
    assert "not measured" in readme and "model-index" not in readme
