"""RunFolder: the one place that knows a run folder's files."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import FrozenInstanceError, fields
from typing import get_type_hints

import pytest

from hf_textcluster.runs.block import Block
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


# a training_run.json with every field and every kind of block, as train, the default run and the edits write them
FULL_RECORD = {
    "method": "sccl",
    "dataset": None,
    "input": {"path": "/data/tickets.csv", "text_column": "text", "label_column": None},
    "recipe": "cpu",
    "seed": 0,
    "training_overrides": {"max_steps": 10, "serve": "auto"},
    "corpus": "stackoverflow",
    "augmentation": "word_deletion",
    "encoder": "sentence-transformers/all-MiniLM-L6-v2",
    "num_train_texts": 40,
    "num_test_texts": 10,
    "test_size": 0.2,
    "split_seed": 0,
    "precision": "fp32 (a CPU)",
    "k_selection": {
        "num_clusters": 4,
        "criterion": "umap_silhouette",
        "alternatives": [3],
        "k_range": [2, 8],
        "sample_size": 40,
        "num_texts": 40,
        "seconds": 0.5,
        "random_state": 0,
        "scores": {"2": 0.1, "3": 0.2, "4": 0.3},
    },
    "serving": {
        "served": "kmeans_refined",
        "criterion": "knn_holdout",
        "scores": {"head": 0.4, "kmeans_refined": 0.5},
        "refinement": {"kmeans_refined": {"rounds": 2, "changed": 0.1, "declined": False, "reason": None}},
        "seconds": 0.2,
    },
    "schedule": {"max_steps": None, "epochs": 8.0, "batch_size": 16, "num_texts": 40, "source": "corpus", "rule": "r"},
    "config_overrides": {"eta": 5, "hidden_dims": [500, 2000]},
    "metrics": {"acc": 0.5, "train_seconds": 3.2},
    "metrics_before_edits": {"acc": 0.6},
    "seconds": {"data": 0.1, "train": 3.0},
    "auto": {
        "num_train_texts": 40,
        "texts_sha1": "ab12",
        "first_save_seconds": 2.0,
        "served_history": [{"served": "pretrained/umap_kmeans", "seconds": 2.0, "by": "first save"}],
        "signals": {
            "contrastive": {
                "method": "sccl",
                "config": {"eta": 10},
                "description": "d",
                "folder": None,
                "steps": 100,
                "batch_size": 16,
                "train_seconds": 3.0,
            }
        },
        "criteria": ["vote"],
        "candidates": {"contrastive/head": {"vote": 0.5}, "pretrained/umap_kmeans": {"vote": 0.4}},
        "choice": {
            "served": "contrastive/head",
            "criterion": "vote",
            "pick": "contrastive/head",
            "guard": "g",
            "serving_signal": "contrastive",
            "head_agreement": 1.0,
            "rule": "r",
        },
        "choose_seconds": 1.0,
        "estimate_seconds": 9.0,
        "cached": {"scan": {"description": "SCAN", "seconds": 0.5}},
        "stopped": {"by": "interrupt"},
    },
    "names": {"generator": "keywords", "generated": 0, "file": "cluster_names.json"},
    "edits": [
        {"op": "merge", "clusters": [[0, 1]], "mapping": [0, 0, 1, 2], "reduced_to": 3, "num_clusters": 3, "id": "e1"},
        {
            "op": "update",
            "clusters": [],
            "texts": 5,
            "far": 0,
            "proposed": None,
            "accepted": False,
            "new_cluster": None,
        },
        {"op": "split", "clusters": [1], "new_ids": [1, 3], "source": "/runs/a", "time": "2026-01-01"},
    ],
    "num_clusters": 3,
}


def _blocks(value):
    """The blocks in ``value``, itself first."""
    if isinstance(value, Block):
        yield value
    for item in value.values() if isinstance(value, Mapping) else value if isinstance(value, (tuple, list)) else ():
        yield from _blocks(item)


def test_a_run_record_is_typed_through_and_writes_back_the_json_it_read(tmp_path):
    assert set(FULL_RECORD) == {f.name for f in fields(RunRecord)}  # every field, so every block, is exercised
    (tmp_path / "training_run.json").write_text(json.dumps(FULL_RECORD), encoding="utf-8")
    record = RunFolder(tmp_path).read_record()
    assert json.loads(json.dumps(record.to_dict())) == {k: v for k, v in FULL_RECORD.items() if v is not None}
    assert RunRecord.from_dict(record.to_dict()) == record
    kinds = {type(block).__name__ for block in _blocks(record)}
    assert kinds == {
        *("RunRecord", "InputFile", "KSelection", "Serving", "Refinement", "Schedule", "AutoRun", "SignalRun"),
        *("AutoChoice", "CachedRun", "Served", "Stopped", "Names", "Edit", "UpdateEdit"),
    }
    for block in _blocks(record):
        hints = get_type_hints(type(block))
        for name, value in block.items():
            assert "Any" not in str(hints[name]), (type(block).__name__, name)
            if isinstance(value, dict):  # one entry per thing, a typed mapping; never an object of fields
                assert re.fullmatch(r"dict\[str, .+\]( \| None)?", str(hints[name])), (type(block).__name__, name)
    assert record.auto.choice.served == record.auto["choice"]["served"] == "contrastive/head"
    record.amend_last_edit(id="e3")
    assert record.edits[-1].id == "e3" and record.edits[-1].new_ids == [1, 3]
    with pytest.raises(FrozenInstanceError):
        record.auto.choice.served = "x"


def test_a_key_a_block_does_not_have_or_lacks_is_one_line_naming_the_file_and_the_block(tmp_path):
    bad = {**FULL_RECORD, "serving": {**FULL_RECORD["serving"], "scorez": {}}}
    (tmp_path / "training_run.json").write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(ValueError, match=r"training_run.json has keys its Serving block does not have \('scorez'\)"):
        RunFolder(tmp_path).read_record()
    bad = {"names": {"generator": "keywords"}}
    (tmp_path / "training_run.json").write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(ValueError, match=r"lacks keys its Names block needs \('generated', 'file'\): fix"):
        RunFolder(tmp_path).read_record()
