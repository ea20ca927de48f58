"""The README's quick start on 300 texts of one's own, with the default schedule: the epochs the corpus-sized rule
gives, a confidence that spreads, clusters saved by name, checkpoints removed, and the block `train` ends with."""

from __future__ import annotations

import json
import random
import shutil

import numpy as np
import pytest
from transformers import AutoModel, pipeline

import hf_textcluster  # noqa: F401
from hf_textcluster.cli import main
from hf_textcluster.runs.recipes import load_recipe
from hf_textcluster.runs.schedule import plan_schedule

NUM_TEXTS = 300


@pytest.fixture(scope="module")
def own_file(toy_corpus, tmp_path_factory):
    """300 short texts in 3 topics (the toy corpus's words, recombined), as a user's csv without labels."""
    rng = random.Random(1)
    texts, labels = toy_corpus
    topics = [sorted({w for t, y in zip(texts, labels) if y == k for w in t.split()}) for k in range(3)]
    own = [" ".join(rng.choice(topics[i % 3]) for _ in range(rng.randint(4, 9))) for i in range(NUM_TEXTS)]
    path = tmp_path_factory.mktemp("own") / "tickets.csv"
    path.write_text("body\n" + "\n".join(own) + "\n")
    return path, own


@pytest.fixture(scope="module")
def first_run(own_file, tiny_encoder_dir, tmp_path_factory):
    path, _ = own_file
    out = tmp_path_factory.mktemp("run") / "tickets"
    argv = ["train", "--method", "sccl", "--input", str(path), "--text-column", "body", "--num-clusters", "3"]
    argv += ["--encoder", str(tiny_encoder_dir), "--output-dir", str(out), "--precision", "fp32"]
    return out, argv


def test_300_texts_train_the_epochs_the_schedule_gives(first_run, own_file, capsys, caplog):
    out, argv = first_run
    with caplog.at_level("WARNING"):
        assert main(argv) == 0
    printed = capsys.readouterr()
    # the rule: 10 epochs of 300 // 64 = 4 full batches = 40 steps (at least 30, at most 300)
    expected = plan_schedule(load_recipe("sccl", "cpu"), NUM_TEXTS)
    assert expected.max_steps == 40 and expected.epochs == pytest.approx(10.0)
    run = json.loads((out / "training_run.json").read_text())
    assert run["schedule"]["max_steps"] == 40 and run["schedule"]["source"] == "corpus"
    state = json.loads((out / "trainer_state.json").read_text())  # kept beside the model, for `plot`
    assert state["global_step"] == 40 and state["max_steps"] == 40
    # said before training, and the end block: the served partition, the clusters by name, the next commands
    assert "40 steps of 64 texts, 10.0 epochs of 300 texts" in caplog.text
    assert "Estimated training time on this machine" in printed.out + printed.err
    assert "Serves " in printed.out and "Next:" in printed.out
    assert f"hf-textcluster predict --model {out}" in printed.out and "--text-column body" in printed.out
    assert f"hf-textcluster info --model {out}" in printed.out
    assert (out / "assignments.csv").read_text().splitlines()[0] == "cluster"
    assert len((out / "assignments.csv").read_text().splitlines()) == NUM_TEXTS + 1  # one per training text
    assert "{'loss'" not in printed.out + printed.err  # the loss terms are in the bar, not raw log dicts
    # a successful run removes its checkpoints (the saved model stays)
    assert not list(out.glob("checkpoint-*")) and (out / "model.safetensors").is_file()


def test_300_texts_names_are_saved_and_returned(first_run, own_file):
    out, _ = first_run
    _, texts = own_file
    config = json.loads((out / "config.json").read_text())
    names = {int(k): v for k, v in config["id2label"].items()}
    assert len(names) == 3 and all(name != f"cluster_{k}" and " · " in name for k, name in names.items())
    results = pipeline("text-clustering", model=str(out))(texts[:10])
    assert [r["label"] for r in results] == [names[r["cluster"]] for r in results]


def test_300_texts_confidence_spreads(first_run, own_file):
    out, _ = first_run
    _, texts = own_file
    model = AutoModel.from_pretrained(out)
    confidence = model.predict_with_confidence(texts, precision="fp32")["confidence"]
    assert (confidence == 1.0).mean() <= 0.05
    assert ((confidence > 0.25) & (confidence < 1.0)).mean() >= 0.5
    assert np.quantile(confidence, 0.9) - np.quantile(confidence, 0.1) >= 0.5  # a range one can threshold in


def test_keep_checkpoints_keeps_them_and_predict_says_a_run_is_unfinished(own_file, tiny_encoder_dir, tmp_path, capsys):
    path, _ = own_file
    out = tmp_path / "kept"
    argv = ["train", "--method", "sccl", "--input", str(path), "--text-column", "body", "--num-clusters", "3"]
    argv += ["--encoder", str(tiny_encoder_dir), "--output-dir", str(out), "--keep-checkpoints", "--max-steps", "4"]
    assert main([*argv, "--disable-tqdm", "true", "--precision", "fp32"]) == 0
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-3", "checkpoint-4"]
    run = json.loads((out / "training_run.json").read_text())
    assert run["schedule"]["max_steps"] == 4 and run["schedule"]["source"] == "explicit"
    # the same folder while a run is still training (checkpoints and a run record, no saved model yet)
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    shutil.copytree(out / "checkpoint-4", unfinished / "checkpoint-4")
    shutil.copy(out / "run_identity.json", unfinished / "run_identity.json")
    capsys.readouterr()
    assert main(["predict", "--model", str(unfinished), "--input", str(path), "--text-column", "body"]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "has not finished" in error and "checkpoint-4" in error and "model_type" not in error


def test_a_wrong_column_names_the_flag(own_file, tmp_path, capsys):
    path, _ = own_file
    argv = ["train", "--method", "sccl", "--input", str(path), "--num-clusters", "3", "--output-dir", str(tmp_path)]
    assert main(argv) == 2
    error = capsys.readouterr().err.strip()
    assert (
        error.endswith("Available columns: ['body']. Pass --text-column one of them.") and "text_column=" not in error
    )


def test_train_clusterer_is_quiet_when_asked(own_file, tiny_encoder_dir, tmp_path, capsys, caplog):
    """verbose=False: no bar, nothing printed; the schedule, the estimate and the loss terms are INFO log lines."""
    from hf_textcluster import train_clusterer
    from hf_textcluster.data import add_augmented_views, load_texts

    _, texts = own_file
    train = add_augmented_views(load_texts(texts), "word_deletion")
    with caplog.at_level("INFO", logger="hf_textcluster"):
        result = train_clusterer(
            "sccl",
            train,
            str(tmp_path / "quiet"),
            encoder=str(tiny_encoder_dir),
            num_clusters=3,
            training_overrides={"max_steps": 5, "bf16": False, "serve": "head", "logging_steps": 1},
            verbose=False,
        )
    printed = capsys.readouterr()
    assert "Estimated" not in printed.out + printed.err and "loss" not in printed.out + printed.err
    said = {record.getMessage().split(":")[0]: record.levelname for record in caplog.records}
    assert said["Training SCCL with the cpu recipe"] == "INFO" and said["step 5/5"] == "INFO"
    assert said["Estimated training time on this machine"] == "INFO"
    assert result.schedule.max_steps == 5 and result.cluster_names.num_texts == NUM_TEXTS


def test_the_readme_shell_block_runs_as_written(own_file, tiny_encoder_dir, tmp_path, monkeypatch, capsys):
    """README's shell block for one's own texts, each command as written, on 300 texts of one's own (a tiny encoder
    and a 3-step schedule added to `train`): K chosen and said, a served model, its cluster table as CSV, one
    prediction per text, the HTML report."""
    import csv
    import re
    import shlex
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Your own texts, from the command line", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    commands = [shlex.split(line) for line in block.splitlines() if line.startswith("hf-textcluster ")]
    assert [c[1] for c in commands] == ["train", "info", "predict", "report"]
    _, texts = own_file
    for name in ("tickets.csv", "new_tickets.csv"):
        with open(tmp_path / name, "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([["text"], *([t] for t in texts)])
    monkeypatch.chdir(tmp_path)
    small = ["--encoder", str(tiny_encoder_dir), "--max-steps", "3", "--precision", "fp32", "--disable-tqdm", "true"]
    for command in commands:
        assert main(command[1:] + (small if command[1] == "train" else [])) == 0, command
    printed = capsys.readouterr().out
    assert "--num-clusters" not in commands[0]  # README's first command line leaves K to the texts
    k = int(re.search(r"K = (\d+), chosen without labels by umap_silhouette", printed).group(1))
    assert "Serves " in printed and f"K = {k}." in printed
    with open("clusters.csv", encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    assert len(table) == k and {"cluster", "name", "size", "keywords"} <= set(table[0])
    assert sum(int(row["size"]) for row in table) == len(texts)
    assert len(Path("predictions.jsonl").read_text().splitlines()) == len(texts)
    assert len(Path("runs/tickets/assignments.csv").read_text().splitlines()) == len(texts) + 1
    assert "<html" in Path("report.html").read_text(encoding="utf-8").lower()
