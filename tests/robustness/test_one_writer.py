"""One writer at a time per model folder, links never followed, a save that either happened or says so: a second
writer waits for the lock, then is refused naming the holder; a symbolic link in the folder is never written through,
copied into previous/ nor restored from; an edit whose save was killed after (or just before) its swap is not applied
twice; a swap that fails leaves nothing a later command applies; an --output-dir that is the model is refused; the
card follows edits made from Python."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

import hf_textcluster  # noqa: F401
from hf_textcluster import Clusterer
from hf_textcluster.cli import main
from hf_textcluster.editing import initialize_clusters
from hf_textcluster.hub.model_card import write_model_card
from hf_textcluster.modeling import serialization
from hf_textcluster.models import get_method
from hf_textcluster.models.building import from_encoder_pretrained
from hf_textcluster.runs.folder import RunFolder
from hf_textcluster.runs.record import RunRecord
from hf_textcluster.runs.saving import PREVIOUS_FOLDER, write_record

K = 4
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def saved(tiny_encoder_dir, toy_corpus, tmp_path_factory) -> Path:
    """A calibrated model folder with its run record (its texts in texts.txt beside it)."""
    texts, _ = toy_corpus
    root = tmp_path_factory.mktemp("writer")
    torch.manual_seed(0)
    model = from_encoder_pretrained(
        get_method("sccl").model_class, str(tiny_encoder_dir), num_clusters=K, max_length=16
    )
    initialize_clusters(model, texts)
    model.calibrate(texts)
    model.save_pretrained(root / "model")
    (root / "texts.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    write_record(
        root / "model",
        RunRecord(method="sccl", num_clusters=K, input={"path": str(root / "texts.txt"), "text_column": "text"}),
    )
    return root / "model"


@pytest.fixture()
def model(saved, tmp_path) -> Path:
    return Path(shutil.copytree(saved, tmp_path / "model"))


def _config(folder: Path) -> dict:
    return json.loads((folder / "config.json").read_text())


def _edits(folder: Path) -> list[dict]:
    return RunFolder(folder).read_record().edits or []


def _leftovers(folder: Path) -> list[str]:
    return [name for name in os.listdir(folder.parent) if ".saving-" in name or name.endswith(".lock")]


# ----- links ----------------------------------------------------------------------------------------------------------
def test_a_link_in_the_folder_is_never_written_through_nor_copied(model, tmp_path, capsys):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    (model / "README.md").symlink_to(notes)
    assert main(["rename", "--model", str(model), "0=alpha"]) == 0
    assert notes.read_text() == "my notes\n"  # not overwritten with the card
    assert not (model / "README.md").is_symlink() and "alpha" in (model / "README.md").read_text()
    (model / "notes.md").symlink_to(notes)
    assert main(["rename", "--model", str(model), "1=beta"]) == 0
    assert notes.read_text() == "my notes\n"
    assert not (model / PREVIOUS_FOLDER / "notes.md").exists()  # a link's target is not the folder's to keep
    assert (model / "notes.md").is_symlink()  # left as it was, a link


def test_restore_refuses_a_previous_that_is_a_link(model, saved, tmp_path, capsys):
    other = tmp_path / "other"
    other.symlink_to(saved, target_is_directory=True)
    (model / PREVIOUS_FOLDER).symlink_to(other, target_is_directory=True)
    before = (model / "model.safetensors").read_bytes()
    assert main(["restore", "--model", str(model)]) == 2
    assert "is a symbolic link" in capsys.readouterr().err
    assert (model / "model.safetensors").read_bytes() == before and (model / PREVIOUS_FOLDER).is_symlink()


# ----- one writer -------------------------------------------------------------------------------------------------
_HOLDER = """
import fcntl, sys, time
handle = open(sys.argv[1], "a+")
fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
handle.write("process 4242: the other writer\\n"); handle.flush()
print("held", flush=True)
time.sleep(60)
"""


def test_a_second_writer_waits_then_is_refused_naming_the_holder(model, monkeypatch, capsys):
    lock = model.parent / f".{model.name}.lock"
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setattr(serialization, "LOCK_WAIT_SECONDS", 0.3)
        assert main(["rename", "--model", str(model), "0=alpha"]) == 1
        err = capsys.readouterr().err.splitlines()[-1]
        assert err.startswith("error: ") and f"Another process is writing {model.resolve()}" in err
        assert "process 4242: the other writer" in err and str(lock) in err
        assert "alpha" not in json.dumps(_config(model)["id2label"])
    finally:
        holder.kill()
        holder.wait()
    assert main(["rename", "--model", str(model), "0=alpha"]) == 0  # the kernel let go of the dead holder's lock
    assert _leftovers(model) == []


def test_two_edits_at_once_both_land(model):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    command = [sys.executable, "-m", "hf_textcluster.cli", "rename", "--model", str(model)]
    runs = [subprocess.Popen([*command, f"{k}=name{k}"], env=env, stderr=subprocess.PIPE, text=True) for k in (1, 2)]
    for run in runs:
        assert run.wait(timeout=300) == 0, run.stderr.read()
    names = _config(model)["id2label"]
    assert names["1"] == "name1" and names["2"] == "name2"  # neither edit lost
    assert [edit["op"] for edit in _edits(model)] == ["rename", "rename"]


# ----- interrupted and failed saves -------------------------------------------------------------------------------
class Killed(BaseException):
    """The process died here (no cleanup runs)."""


def _merge(model: Path) -> int:
    return main(["merge", "--model", str(model), "0,1"])


@pytest.mark.parametrize("when", ["after the swap", "before the swap"])
def test_an_edit_killed_around_its_swap_is_not_applied_twice(model, when, monkeypatch, capsys, caplog, toy_corpus):
    swap = serialization._swap

    def killed(complete, folder):
        if when == "after the swap":
            assert serialization._exchange(complete, folder)  # swapped; the old state not deleted yet
        raise Killed

    monkeypatch.setattr(serialization, "_swap", killed)
    with pytest.raises(Killed):
        _merge(model)
    monkeypatch.setattr(serialization, "_swap", swap)
    expected = K - 1 if when == "after the swap" else K
    # a reader serves what the folder holds and never applies a new state left beside it
    out = model.parent / "predicted.jsonl"
    (model.parent / "texts.txt").write_text("\n".join(toy_corpus[0][:5]) + "\n")
    assert (
        main(["predict", "--model", str(model), "--input", str(model.parent / "texts.txt"), "--output", str(out)]) == 0
    )
    assert _config(model)["num_clusters"] == expected
    if when == "before the swap":
        assert any(".saving-" in name for name in os.listdir(model.parent))  # reported, kept for a writer
    capsys.readouterr()
    assert _merge(model) == 0  # run again: completes the interrupted save, and merges once only
    assert "this merge is already applied" in capsys.readouterr().err
    assert _config(model)["num_clusters"] == K - 1
    assert [edit["op"] for edit in _edits(model)] == ["merge"]
    assert _leftovers(model) == []
    assert main(["merge", "--model", str(model), "1,2"]) == 0  # another merge is a new edit
    assert [edit["op"] for edit in _edits(model)] == ["merge", "merge"]


def test_a_failed_swap_leaves_nothing_a_later_command_applies(model, saved, monkeypatch, capsys):
    def busy(a, b):
        raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), a, None, b)

    monkeypatch.setattr(serialization, "_exchange", busy)
    assert _merge(model) == 1
    err = capsys.readouterr().err.splitlines()[-1]  # the last line: the error (before it, loading's progress)
    assert err.startswith("error: ") and "cannot be written (Device or resource busy)" in err
    assert "it is unchanged" in err and "--output-dir" in err
    assert _leftovers(model) == []  # its new state deleted: never swapped in later
    monkeypatch.undo()
    assert main(["info", "--model", str(model), "--input", str(saved.parent / "texts.txt")]) == 0
    assert _config(model)["num_clusters"] == K and not _edits(model)


def test_a_read_only_mount_is_one_line_naming_the_folder(model, monkeypatch, capsys):
    def read_only(path, *args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), path)

    monkeypatch.setattr(serialization, "take_lock", read_only)  # the lock file beside the folder is the first write
    assert _merge(model) == 1
    err = capsys.readouterr().err.splitlines()[-1]
    assert err == (
        f"error: {os.path.realpath(model)} cannot be written (Read-only file system): it is unchanged. A save writes a "
        "lock file and the new state beside the folder and swaps the two, which a read-only file system or a mount "
        "point refuses: save to a folder elsewhere (--output-dir, path=)."
    )
    assert _config(model)["num_clusters"] == K and _leftovers(model) == []


def test_ctrl_c_during_a_first_save_says_no_model_was_saved(saved, tmp_path, monkeypatch, capsys):
    def interrupted(staging):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt, match=r"the save into .*new was interrupted; it holds no saved model yet"):
        serialization.save_folder(tmp_path / "new", interrupted)
    model = Path(shutil.copytree(saved, tmp_path / "m"))
    monkeypatch.setattr(serialization, "_link_old_files", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    assert main(["rename", "--model", str(model), "0=a"]) == 130
    assert "it holds its state from before this save" in capsys.readouterr().err


# ----- where an edit goes -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("output", ["{model}/../{name}", "{model}/previous", "{model}/sub/dir"])
def test_an_output_dir_that_is_the_model_or_inside_it_is_refused(model, output, capsys):
    before = (model / "config.json").read_text()
    out = output.format(model=model, name=model.name)
    assert main(["reduce", "--model", str(model), "--to", "2", "--output-dir", out]) == 2
    err = capsys.readouterr().err
    assert f"--output-dir {out} is --model {model} itself or a folder inside it" in err.splitlines()[-1]
    assert (model / "config.json").read_text() == before and not (model / PREVIOUS_FOLDER).exists()


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_the_card_follows_edits_made_from_python(model):
    write_model_card(model)
    assert "zebra" not in (model / "README.md").read_text()
    Clusterer.load(model).rename({0: "zebra"}).save()
    assert "zebra" in (model / "README.md").read_text()
    assert "zebra" not in (model / PREVIOUS_FOLDER / "README.md").read_text()  # the card before, kept with its model


# ----- unclear lines ----------------------------------------------------------------------------------------------
def test_a_run_record_nested_too_deep_is_one_line(model):
    (model / "training_run.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match=r"training_run.json is nested too deep to be read; fix or delete it"):
        RunFolder(model).read_record()


def test_loading_a_folder_without_a_model_says_so(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("x")
    with pytest.raises(ValueError, match=r"notes holds no saved model \(no config.json\)"):
        Clusterer.load(tmp_path / "notes")


def test_waiting_for_a_lock_is_said_once(model, tmp_path, caplog):
    lock = model.parent / f".{model.name}.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_HOLDER).replace("time.sleep(60)", "time.sleep(1.5)"), str(lock)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    start = time.monotonic()
    with serialization.folder_lock(model):
        assert time.monotonic() - start > 0.5
    holder.wait()
    assert "Waiting for another process writing" in caplog.text and not lock.exists()
