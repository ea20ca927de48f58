"""RunFolder: the one place that knows a run folder's files."""

from __future__ import annotations

import json
import os

import pytest

from hf_textcluster.runs.folder import RunFolder
from hf_textcluster.runs.record import RunRecord
from hf_textcluster.runs.saving import write_record


def _fake_model(folder):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"num_clusters": 3}), encoding="utf-8")
    (folder / "model.safetensors").write_bytes(b"weights")


def test_identity_is_recorded_and_guards_resuming(tmp_path):
    folder = RunFolder(tmp_path / "run")
    data = {"text": ["a", "b", "c"]}
    identity = RunFolder.identity_of("sccl", 3, None, {"max_length": 32, "skip": [1]}, data)
    assert identity["encoder"] == "default" and identity["config"] == {"max_length": 32}
    folder.record_identity(identity, resuming=False)
    assert folder.read_identity() == identity
    folder.record_identity(identity, resuming=True)  # the same run resumes
    other = RunFolder.identity_of("sccl", 4, None, {}, data)
    with pytest.raises(ValueError, match=r"holds checkpoints of another run \(its num_clusters, config differ"):
        folder.record_identity(other, resuming=True)


def test_another_seed_does_not_resume_a_run_but_an_older_record_without_one_does(tmp_path):
    folder = RunFolder(tmp_path / "run")
    data = {"text": ["a", "b", "c"]}
    folder.record_identity(RunFolder.identity_of("sccl", 3, None, {}, data, seed=0), resuming=False)
    folder.record_identity(RunFolder.identity_of("sccl", 3, None, {}, data, seed=0), resuming=True)
    with pytest.raises(ValueError, match=r"another run \(its seed differ.*--no-resume"):
        folder.record_identity(RunFolder.identity_of("sccl", 3, None, {}, data, seed=1), resuming=True)
    folder.record_identity(RunFolder.identity_of("sccl", 3, None, {}, data), resuming=False)  # recorded without one
    folder.record_identity(RunFolder.identity_of("sccl", 3, None, {}, data, seed=1), resuming=True)


def test_run_record_round_trips_and_bad_json_is_one_clear_error(tmp_path):
    folder = RunFolder(tmp_path)
    assert folder.read_record() is None
    record = RunRecord(
        method="sccl",
        input={"path": str(tmp_path / "gone.csv"), "text_column": "text", "label_column": None},
        seed=3,
        test_size=0.2,
        serving={"served": "head", "criterion": None, "scores": {}},
        metrics={"acc": 0.5},
        edits=[{"op": "merge", "clusters": [[0, 1]]}],
    )
    write_record(folder.path, record)
    assert folder.read_record() == record
    saved = json.loads((tmp_path / "training_run.json").read_text())
    assert list(saved) == ["method", "input", "seed", "test_size", "serving", "metrics", "edits"]  # None: not written
    texts, why = folder.training_texts()
    assert texts is None and "is no longer there" in why
    (tmp_path / "training_run.json").write_text("{", encoding="utf-8")
    with pytest.raises(ValueError, match="is not valid JSON"):
        folder.read_record()


def test_a_key_the_run_record_does_not_have_is_one_line_naming_the_file(tmp_path):
    (tmp_path / "training_run.json").write_text(json.dumps({"method": "sccl", "metrix": {}}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"training_run.json has keys a run record does not have \('metrix'\): fix"):
        RunFolder(tmp_path).read_record()
    (tmp_path / "training_run.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ValueError, match=r"training_run.json holds list, not an object"):
        RunFolder(tmp_path).read_record()


def test_processes_writing_one_file_at_once_each_rename_their_own_staging_file(tmp_path, monkeypatch):
    """Every process of an `accelerate launch` records the run's identity: the other process writing and renaming
    between this one's write and rename must leave this one's temporary file where it is."""
    folder = RunFolder(tmp_path)
    real_replace, real_getpid = os.replace, os.getpid

    def other_process_in_between(src, dst):
        monkeypatch.setattr(os, "replace", real_replace)
        monkeypatch.setattr(os, "getpid", lambda: real_getpid() + 1)
        write_record(folder.path, RunRecord(method="other"))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", other_process_in_between)
    write_record(folder.path, RunRecord(method="this"))
    assert folder.read_record() == RunRecord(method="this")
    assert not list(tmp_path.glob("*.tmp"))


def test_ownership(tmp_path):
    folder = RunFolder(tmp_path / "model")
    assert not folder.holds_trained_model()
    folder.check_may_replace_model(overwrite=False)  # an empty or missing folder is free
    _fake_model(tmp_path / "model")
    assert folder.holds_trained_model()
    with pytest.raises(FileExistsError, match="already holds a trained model, which train would replace"):
        folder.check_may_replace_model(overwrite=False, command="train")
    folder.check_may_replace_model(overwrite=False, source=str(tmp_path / "model"))  # updated in place


def test_open_needs_a_saved_model(tmp_path):
    with pytest.raises(FileNotFoundError, match="is not a saved model directory"):
        RunFolder(tmp_path).open()
    assert not RunFolder(tmp_path).ships_remote_code()
