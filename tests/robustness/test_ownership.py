"""A trained model is never replaced without being asked: one ownership check for train, recluster, refine and
calibrate; re-clustering in place keeps the model before, and restore goes back; texts unlike the model's own are
announced."""

from __future__ import annotations

import logging
import random
import shutil

import numpy as np
import pytest
import torch
from transformers import AutoModel

import hf_textcluster  # noqa: F401
from hf_textcluster import SCCLModel, train_clusterer
from hf_textcluster.cli import main
from hf_textcluster.data import load_texts
from hf_textcluster.editing import initialize_clusters
from hf_textcluster.models.building import from_encoder_pretrained
from hf_textcluster.runs.folder import RunFolder

TRAIN = dict(per_device_train_batch_size=16, bf16=False, disable_tqdm=True, report_to="none", max_steps=2, save_steps=1)


@pytest.fixture(scope="module")
def trained(tiny_encoder_dir, toy_corpus, tmp_path_factory):
    torch.manual_seed(0)
    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    initialize_clusters(model, toy_corpus[0])
    model.calibrate(toy_corpus[0])
    path = tmp_path_factory.mktemp("trained") / "model"
    model.save_pretrained(path)
    return path


def _copy(trained, tmp_path, name):
    return shutil.copytree(trained, tmp_path / name)


def _train(encoder, corpus, output_dir, **kwargs):
    return train_clusterer(
        "sccl",
        load_texts(*corpus),
        str(output_dir),
        encoder=str(encoder),
        evaluate=False,
        training_overrides=TRAIN,
        **{"keep_checkpoints": True, **kwargs},  # resuming a finished run's own checkpoints is tested here
    )


def test_train_never_replaces_a_saved_model_without_overwrite(trained, tiny_encoder_dir, toy_corpus, tmp_path):
    folder = _copy(trained, tmp_path, "other")
    before = (folder / "model.safetensors").read_bytes()
    with pytest.raises(
        FileExistsError,
        match=rf"output_dir \(--output-dir\) {folder} already holds a trained model, "
        r"which train would replace.*--overwrite",
    ):
        _train(tiny_encoder_dir, toy_corpus, folder)
    assert (folder / "model.safetensors").read_bytes() == before
    _train(tiny_encoder_dir, toy_corpus, folder, overwrite=True)
    assert (folder / "model.safetensors").read_bytes() != before


def test_train_refuses_a_finished_run_whose_checkpoints_were_deleted(tiny_encoder_dir, toy_corpus, tmp_path, capsys):
    run = tmp_path / "run"
    _train(tiny_encoder_dir, toy_corpus, run)
    _train(tiny_encoder_dir, toy_corpus, run)  # its own checkpoints: resumes, replaces nothing
    for checkpoint in run.glob("checkpoint-*"):
        shutil.rmtree(checkpoint)
    with pytest.raises(FileExistsError, match="already holds a trained model"):
        _train(tiny_encoder_dir, toy_corpus, run)
    with pytest.raises(FileExistsError, match="already holds a trained model"):
        _train(tiny_encoder_dir, toy_corpus, run, resume=False)
    (tmp_path / "texts.txt").write_text("\n".join(toy_corpus[0]) + "\n")
    code = main(
        [
            "train",
            "--method",
            "sccl",
            "--input",
            str(tmp_path / "texts.txt"),
            "--num-clusters",
            "3",
            "--encoder",
            str(tiny_encoder_dir),
            "--output-dir",
            str(run),
            "--max-steps",
            "2",
        ]
    )
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert code != 0 and len(errors) == 1
    assert f"{run} already holds a trained model" in errors[0] and "--overwrite" in errors[0]


@pytest.mark.parametrize("command", ["recluster", "calibrate", "refine"])
def test_updating_into_another_models_folder_needs_overwrite(command, trained, toy_corpus, tmp_path, capsys):
    source, other = _copy(trained, tmp_path, "source"), _copy(trained, tmp_path, "other")
    (tmp_path / "train.txt").write_text("\n".join(toy_corpus[0]) + "\n")
    before = (other / "model.safetensors").read_bytes()
    args = [command, "--model", str(source), "--input", str(tmp_path / "train.txt"), "--output-dir", str(other)]
    assert main(args) != 0
    err = capsys.readouterr().err
    assert f"--output-dir {other} already holds a trained model, which {command} would replace" in err
    assert (other / "model.safetensors").read_bytes() == before
    assert main([*args, "--overwrite"]) == 0


def test_an_output_dir_that_is_a_file_is_one_line(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match=f"--output-dir {tmp_path}/file is a file, not a folder"):
        RunFolder(str(tmp_path / "file")).check_may_replace_model(overwrite=False)


def test_recluster_in_place_keeps_the_model_before(trained, toy_corpus, tmp_path):
    folder = _copy(trained, tmp_path, "model")
    weights = (folder / "model.safetensors").read_bytes()
    (tmp_path / "train.txt").write_text("\n".join(toy_corpus[0]) + "\n")
    assert main(["recluster", "--model", str(folder), "--input", str(tmp_path / "train.txt"), "--seed", "3"]) == 0
    assert (folder / "previous" / "model.safetensors").read_bytes() == weights
    kept = AutoModel.from_pretrained(folder / "previous")
    original = AutoModel.from_pretrained(trained)
    assert kept.predict(toy_corpus[0]).tolist() == original.predict(toy_corpus[0]).tolist()
    reclustered = (folder / "model.safetensors").read_bytes()
    assert main(["recluster", "--model", str(folder), "--input", str(tmp_path / "train.txt"), "--seed", "4"]) == 0
    assert (folder / "previous" / "model.safetensors").read_bytes() == reclustered  # one step back: the last state
    assert main(["restore", "--model", str(folder)]) == 0
    assert (folder / "model.safetensors").read_bytes() == reclustered


# single letters: in the tiny encoder's vocabulary, unlike any training text (whole words)
UNRELATED = [
    " ".join(
        random.Random(i).choice("abcdefghijklmnopqrstuvwxyz") for _ in range(random.Random(i + 1000).randint(2, 12))
    )
    for i in range(200)
]


def test_recluster_on_unrelated_texts_warns_with_the_agreement(trained, toy_corpus, tmp_path, caplog):
    folder = _copy(trained, tmp_path, "model")
    (tmp_path / "train.txt").write_text("\n".join(toy_corpus[0]) + "\n")
    (tmp_path / "other.txt").write_text("\n".join(UNRELATED) + "\n")
    with caplog.at_level(logging.WARNING, logger="hf_textcluster"):
        assert (
            main(
                [
                    "recluster",
                    "--model",
                    str(folder),
                    "--input",
                    str(tmp_path / "train.txt"),
                    "--output-dir",
                    str(tmp_path / "same"),
                ]
            )
            == 0
        )
    assert not [r for r in caplog.records if "agree with the trained head" in r.getMessage()]
    with caplog.at_level(logging.WARNING, logger="hf_textcluster"):
        assert (
            main(
                [
                    "recluster",
                    "--model",
                    str(folder),
                    "--input",
                    str(tmp_path / "other.txt"),
                    "--output-dir",
                    str(tmp_path / "unrelated"),
                ]
            )
            == 0
        )
    warned = [r.getMessage() for r in caplog.records if "agree with the trained head" in r.getMessage()]
    assert len(warned) == 1 and "% of these texts" in warned[0] and "training texts" in warned[0]


def test_agreement_matches_cluster_ids_one_to_one():
    from hf_textcluster.evaluation.metrics import cluster_accuracy as agreement  # recluster's measure

    before = np.array([0, 0, 1, 1, 2, 2])
    assert agreement(before, np.array([2, 2, 0, 0, 1, 1])) == 1.0  # a renaming only
    assert agreement(before, np.array([0, 1, 2, 0, 1, 2])) == 0.5


def test_calibrate_on_unrelated_texts_warns(trained, tmp_path, caplog):
    folder = _copy(trained, tmp_path, "model")
    (tmp_path / "other.txt").write_text("\n".join(UNRELATED) + "\n")
    with caplog.at_level(logging.WARNING, logger="hf_textcluster"):
        assert main(["calibrate", "--model", str(folder), "--input", str(tmp_path / "other.txt")]) == 0
    warned = [
        r.getMessage() for r in caplog.records if "outliers for the model's current calibration" in r.getMessage()
    ]
    assert len(warned) == 1
