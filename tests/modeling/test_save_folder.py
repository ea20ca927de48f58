"""`save_folder`: a folder's new state is written beside it and swapped in at once; the files a save does not write
are carried over as hard links; what an interrupted save left is cleaned up or completed by the next save (a load
only reports a complete new state), with a log line; a damaged or empty folder is one line that says what to do."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from hf_textcluster.modeling import serialization
from hf_textcluster.modeling.serialization import recover_folder, save_folder
from hf_textcluster.runs.folder import load_clusterer


def _write(files: dict[str, str]):
    def write(staging: str) -> None:
        for name, text in files.items():
            Path(staging, name).write_text(text, encoding="utf-8")

    return write


def _files(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_save_replaces_what_it_writes_and_links_the_rest(tmp_path):
    folder = tmp_path / "model"
    save_folder(folder, _write({"config.json": "old", "model.safetensors": "old", "notes.txt": "mine"}))
    (folder / "checkpoint-2").mkdir()
    (folder / "checkpoint-2" / "state").write_text("kept")
    notes = (folder / "notes.txt").stat().st_ino
    save_folder(folder, _write({"config.json": "new", "model-00001-of-00002.safetensors": "new"}))
    assert _files(folder) == {
        "config.json": "new",
        "model-00001-of-00002.safetensors": "new",  # the new weights replace all the old ones
        "notes.txt": "mine",
        os.path.join("checkpoint-2", "state"): "kept",
    }
    assert (folder / "notes.txt").stat().st_ino == notes  # linked, not copied
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # nothing left beside it
    save_folder(folder, _write({"config.json": "newer"}), keep=lambda name: name == "notes.txt")
    assert _files(folder) == {"config.json": "newer", "notes.txt": "mine"}


def test_a_failed_save_leaves_the_folder_as_it_was(tmp_path):
    folder = tmp_path / "model"
    save_folder(folder, _write({"config.json": "old"}))

    def fails(staging):
        _write({"config.json": "half"})(staging)
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        save_folder(folder, fails)
    assert _files(folder) == {"config.json": "old"} and sorted(os.listdir(tmp_path)) == ["model"]


def test_a_folder_reached_by_a_link_is_saved_where_it_lies(tmp_path):
    save_folder(tmp_path / "real", _write({"config.json": "old"}))
    (tmp_path / "link").symlink_to(tmp_path / "real")
    save_folder(tmp_path / "link", _write({"config.json": "new"}))
    assert (tmp_path / "link").is_symlink() and _files(tmp_path / "real") == {"config.json": "new"}


def test_a_save_within_a_save_writes_into_its_staging_folder(tmp_path):
    def write(staging):
        save_folder(staging, _write({"config.json": "inner"}))
        _write({"training_run.json": "outer"})(staging)

    save_folder(tmp_path / "model", write)
    assert _files(tmp_path / "model") == {"config.json": "inner", "training_run.json": "outer"}


@pytest.mark.parametrize("exchange", [True, False])
def test_an_interrupted_save_is_completed_or_cleaned_up_with_a_log_line(tmp_path, monkeypatch, caplog, exchange):
    if not exchange:  # the portable two renames
        monkeypatch.setattr(serialization, "_exchange", lambda a, b: False)
    folder = tmp_path / "model"
    save_folder(folder, _write({"config.json": "old"}))
    old = folder.stat().st_ino
    # killed while writing: its unfinished new state is deleted, the folder keeps its old one
    unfinished = tmp_path / f".model.saving-{old}.partial-{os.getpid()}"
    unfinished.mkdir()
    (unfinished / "config.json").write_text("half")
    with caplog.at_level(logging.WARNING):
        assert recover_folder(folder)
    assert not unfinished.exists() and _files(folder) == {"config.json": "old"}
    assert "the unfinished new state of a save that was interrupted" in caplog.text
    # killed once the new state was complete, before the swap (or between the two renames): the save is completed
    complete = tmp_path / f".model.saving-{old}"
    complete.mkdir()
    (complete / "config.json").write_text("new")
    if not exchange:
        os.rename(folder, f"{complete}.old")
    caplog.clear()
    with caplog.at_level(logging.WARNING):  # a reader reports it and reads the old state, never applies it
        assert recover_folder(folder)
    assert _files(folder) == {"config.json": "old"} and complete.is_dir()
    assert "not applied by this command" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):  # a writer, holding the lock, completes it
        assert not recover_folder(folder, complete=True)
    assert _files(folder) == {"config.json": "new"} and sorted(os.listdir(tmp_path)) == ["model"]
    assert "completed a save that was interrupted" in caplog.text


def test_a_save_with_no_exchange_swaps_by_two_renames(tmp_path, monkeypatch):
    monkeypatch.setattr(serialization, "_exchange", lambda a, b: False)
    save_folder(tmp_path / "model", _write({"config.json": "old"}))
    save_folder(tmp_path / "model", _write({"config.json": "new"}))
    assert _files(tmp_path / "model") == {"config.json": "new"} and os.listdir(tmp_path) == ["model"]


def test_a_saved_model_without_its_config_says_what_is_wrong(tmp_path):
    folder = tmp_path / "run"
    save_folder(folder, _write({"model.safetensors": "w", "training_run.json": "{}", "run_identity.json": "{}"}))
    with pytest.raises(ValueError, match=r"holds model.safetensors and training_run.json but no config.json: the"):
        load_clusterer(folder)
    (folder / "previous").mkdir()
    with pytest.raises(ValueError, match=r"Put its config.json back.*`hf-textcluster restore --model .*run` goes back"):
        load_clusterer(folder)


def test_a_new_folder_whose_save_was_interrupted_points_at_the_command(tmp_path):
    unfinished = tmp_path / f".out.saving-0.partial-{os.getpid()}"
    unfinished.mkdir()
    (unfinished / "config.json").write_text("{}")
    with pytest.raises(ValueError, match=r"out holds no saved model: a save into it was interrupted .* again\.$"):
        load_clusterer(tmp_path / "out")
    assert not unfinished.exists()
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="is an empty folder, not a saved model"):
        load_clusterer(tmp_path / "empty")
