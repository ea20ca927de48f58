"""The hf-textcluster command line: evaluate, train on a user's file, predict, and its errors."""

import json

import pytest
import torch

from hf_textcluster.cli import main
from hf_textcluster.models.building import from_encoder_pretrained


def test_evaluate_a_baseline_on_a_benchmark(data_dir_or_skip, capsys):
    assert (
        main(["evaluate", "--baseline", "tfidf-kmeans", "--dataset", "tweet", "--data-dir", str(data_dir_or_skip)]) == 0
    )
    out = capsys.readouterr().out
    assert "tfidf-kmeans on tweet (N=2472, K=89" in out and "ACC" in out and "NMI" in out and "time" in out


def test_unknown_dataset_lists_the_valid_names(data_dir_or_skip, capsys):
    assert main(["evaluate", "--dataset", "stack", "--data-dir", str(data_dir_or_skip)]) == 2
    assert "stackoverflow" in capsys.readouterr().err


def test_missing_data_file_names_the_path(tmp_path, capsys):
    assert main(["evaluate", "--baseline", "bow-kmeans", "--dataset", "tweet", "--data-dir", str(tmp_path)]) == 2
    assert str(tmp_path / "tweet.csv") in capsys.readouterr().err


def test_train_on_a_file_then_predict(tiny_encoder_dir, toy_corpus, tmp_path, capsys):
    texts, _ = toy_corpus
    data = tmp_path / "texts.jsonl"
    data.write_text("\n".join(json.dumps({"body": t}) for t in texts))
    out_dir = tmp_path / "model"
    code = main(
        [
            "train",
            "--method",
            "sccl",
            "--input",
            str(data),
            "--text-column",
            "body",
            "--num-clusters",
            "3",
            "--encoder",
            str(tiny_encoder_dir),
            "--augmentation",
            "word_deletion",
            "--output-dir",
            str(out_dir),
            "--config",
            "eta=2.5",
            "--max-steps",
            "2",
            "--per-device-train-batch-size",
            "8",
            "--precision",
            "fp32",
            "--save-strategy",
            "no",
            "--disable-tqdm",
            "true",
        ]
    )
    assert code == 0
    run = json.loads((out_dir / "training_run.json").read_text())
    assert run["training_overrides"]["per_device_train_batch_size"] == 8
    assert json.loads((out_dir / "config.json").read_text())["eta"] == 2.5
    capsys.readouterr()

    queries = tmp_path / "queries.txt"
    queries.write_text("\n".join(texts[:4]) + "\n")
    assert main(["predict", "--model", str(out_dir), "--input", str(queries), "--top-clusters", "2"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert [line["text"] for line in lines] == texts[:4]
    assert all(len(line["top_k"]) == 2 for line in lines)
    # the line keeps what it holds without --top-clusters, its confidence included
    assert all({"cluster", "label", "score", "confidence"} <= set(line) for line in lines)
    assert all(line["cluster"] == line["top_k"][0]["cluster"] for line in lines)

    assert main(["predict", "--model", str(out_dir), "--input", str(queries), "--precision", "int8"]) == 0
    int8_lines = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    from hf_textcluster.runs.folder import load_clusterer

    expected = load_clusterer(str(out_dir)).predict_proba(texts[:4], precision="int8").max(axis=1)
    assert [line["score"] for line in int8_lines] == pytest.approx(expected.tolist(), abs=1e-6)


def test_train_on_own_file_without_k_chooses_it_and_says_how(tiny_encoder_dir, toy_corpus, tmp_path, capsys):
    """No --num-clusters and no labels: K is chosen from the texts (the default criterion, no labels), and the run
    prints it with its score and the next best K; the run record keeps every K's score."""
    data = tmp_path / "t.csv"
    data.write_text("text\n" + "\n".join(toy_corpus[0]) + "\n")
    out = tmp_path / "o"
    argv = ["train", "--method", "sccl", "--input", str(data), "--output-dir", str(out)]
    argv += ["--encoder", str(tiny_encoder_dir), "--max-steps", "1", "--per-device-train-batch-size", "8"]
    assert main([*argv, "--precision", "fp32", "--save-strategy", "no", "--k-range", "2:8"]) == 0
    printed = capsys.readouterr().out
    selection = json.loads((out / "training_run.json").read_text())["k_selection"]
    k = selection["num_clusters"]
    assert selection["criterion"] == "umap_silhouette" and 2 <= k <= 8
    assert f"K = {k}, chosen without labels by umap_silhouette ({selection['scores'][str(k)]:.3f})" in printed
    best = max(selection["scores"].values())
    assert selection["scores"][str(k)] == best and str(k) not in map(str, selection["alternatives"])
    if selection["alternatives"]:
        assert "next best K = " in printed


def test_held_out_split_is_stratified_and_never_trained_on(tiny_encoder_dir, toy_corpus, tmp_path, capsys):
    from hf_textcluster.data import load_texts
    from hf_textcluster.runs.train import split_held_out

    texts, labels = toy_corpus
    dataset = load_texts(texts, labels).add_column("row", list(range(len(texts))))
    train, test = split_held_out(dataset, 30, seed=0)
    assert len(test) == 30 and sorted(test["label"]) == [0] * 10 + [1] * 10 + [2] * 10  # stratified
    assert len(train) == 90 and not set(train["row"]) & set(test["row"])
    again_train, again_test = split_held_out(dataset, 30, seed=0)
    assert again_test["text"] == test["text"]  # fixed by the split seed
    for bad in (0, 120, 1.0, -0.1, True):
        with pytest.raises(ValueError, match="`test_size`"):
            split_held_out(dataset, bad)

    data = tmp_path / "texts.csv"
    data.write_text("text,label\n" + "\n".join(f"{t},{y}" for t, y in zip(texts, labels)))
    out_dir = tmp_path / "held"
    assert (
        main(
            [
                "train",
                "--method",
                "sccl",
                "--input",
                str(data),
                "--num-clusters",
                "3",
                "--encoder",
                str(tiny_encoder_dir),
                "--label-column",
                "label",
                "--augmentation",
                "word_deletion",
                "--output-dir",
                str(out_dir),
                "--test-size",
                "0.25",
                "--max-steps",
                "1",
                "--per-device-train-batch-size",
                "8",
                "--precision",
                "fp32",
                "--save-strategy",
                "no",
                "--disable-tqdm",
                "true",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "Scored on the 30 held-out texts" in out and "cluster head" in out
    run = json.loads((out_dir / "training_run.json").read_text())
    assert (run["num_train_texts"], run["num_test_texts"]) == (90, 30)
    with pytest.raises(SystemExit):
        main(
            [
                "train",
                "--method",
                "sccl",
                "--input",
                str(data),
                "--num-clusters",
                "3",
                "--output-dir",
                str(out_dir),
                "--test-size",
                "many",
            ]
        )


def test_a_run_that_would_train_nothing_is_an_error(tiny_encoder_dir, toy_corpus, tmp_path, capsys):
    texts, _ = toy_corpus
    data = tmp_path / "few.txt"
    data.write_text("\n".join(texts[:50]) + "\n")
    code = main(
        [
            "train",
            "--method",
            "sccl",
            "--input",
            str(data),
            "--num-clusters",
            "3",
            "--encoder",
            str(tiny_encoder_dir),
            "--augmentation",
            "word_deletion",
            "--output-dir",
            str(tmp_path / "m"),
            "--precision",
            "fp32",
        ]
    )  # the cpu recipe: batch 64, dataloader_drop_last
    assert code == 2
    err = capsys.readouterr().err
    assert "50 rows" in err and "--per-device-train-batch-size 25" in err and "--dataloader-drop-last false" in err
    assert not (tmp_path / "m" / "model.safetensors").exists()


def test_a_diverging_run_stops_and_saves_nothing(tiny_encoder_dir, toy_corpus, tmp_path, capsys):
    texts, _ = toy_corpus
    data = tmp_path / "texts.txt"
    data.write_text("\n".join(texts) + "\n")
    code = main(
        [
            "train",
            "--method",
            "sccl",
            "--input",
            str(data),
            "--num-clusters",
            "3",
            "--encoder",
            str(tiny_encoder_dir),
            "--augmentation",
            "word_deletion",
            "--output-dir",
            str(tmp_path / "m"),
            "--precision",
            "fp32",
            "--per-device-train-batch-size",
            "16",
            "--max-steps",
            "6",
            "--learning-rate",
            "1e10",
            "--head-learning-rate",
            "1e10",
            "--save-strategy",
            "no",
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "diverged" in err and "learning rate" in err
    assert not (tmp_path / "m" / "model.safetensors").exists()


def test_non_finite_weights_are_never_saved(tiny_encoder_dir, tmp_path):
    import torch

    from hf_textcluster import SCCLModel

    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    with torch.no_grad():
        model.cluster_head.centroids[0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN or inf"):
        model.save_pretrained(tmp_path / "bad")
    assert not (tmp_path / "bad" / "model.safetensors").exists()
    from hf_textcluster.hub.model_card import generate_model_card
    from hf_textcluster.hub.push import check_ready_to_push

    model.config.centroids_initialized = True
    model.tokenizer = object()
    for refuse in (check_ready_to_push, generate_model_card):  # no card, no upload
        with pytest.raises(ValueError, match="NaN or inf"):
            refuse(model)


def test_train_writes_checkpoints_by_default(tmp_path):
    from hf_textcluster.runs.trainer_setup import build_training_arguments

    args = build_training_arguments(str(tmp_path), {"max_steps": 300})
    assert (args.save_strategy, args.save_steps) == ("steps", 30)
    assert build_training_arguments(str(tmp_path), {"max_steps": 300}, {"save_strategy": "no"}).save_strategy == "no"


@pytest.mark.parametrize(
    "argv,match",
    [
        (["--config", "etaa=5"], "Unknown SCCLConfig key 'etaa'; did you mean 'eta'"),
        (["--config", "eta=abc"], "'eta' takes a number"),
        (["--dataset", "stackoverflow"], "argument --dataset: not allowed with argument --input"),
    ],
)
def test_train_arguments_that_would_be_ignored_are_errors(argv, match, tiny_encoder_dir, toy_corpus, tmp_path, capsys):
    import re

    data = tmp_path / "texts.txt"
    data.write_text("\n".join(toy_corpus[0]) + "\n")
    argv = ["train", "--method", "sccl", "--input", str(data), "--num-clusters", "3", *argv]
    try:
        code = main([*argv, "--encoder", str(tiny_encoder_dir), "--output-dir", str(tmp_path / "m")])
    except SystemExit as exit_:  # argparse's own errors
        code = exit_.code
    assert code == 2 and re.search(match, capsys.readouterr().err)


def test_predict_checks_its_output_before_working(tmp_path, capsys):
    texts = tmp_path / "texts.txt"
    texts.write_text("a text\n")
    assert main(["predict", "--model", str(tmp_path), "--input", str(texts), "--output", str(texts)]) == 2
    assert "would replace your texts" in capsys.readouterr().err and texts.read_text() == "a text\n"
    assert (
        main(
            [
                "predict",
                "--model",
                str(tmp_path),
                "--input",
                str(texts),
                "--output",
                str(tmp_path / "missing" / "out.jsonl"),
            ]
        )
        == 2
    )
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["predict", "--model", str(tmp_path), "--input", str(texts), "--top-clusters", "0"])


def test_unexpected_errors_are_one_line_unless_debug(tmp_path, capsys, monkeypatch):
    import hf_textcluster.cli.evaluate as evaluate_command

    def broken(args, extra):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(evaluate_command, "run", broken)
    assert main(["evaluate", "--dataset", "tweet"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: OSError:") and "No space left" in err and "--debug" in err
    with pytest.raises(OSError):
        main(["--debug", "evaluate", "--dataset", "tweet"])


def test_forward_on_a_never_initialised_model_is_an_error(tiny_encoder_dir):
    from hf_textcluster import SCCLModel

    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    with pytest.raises(RuntimeError, match="never initialised"):
        model(**model.tokenize(["a text"]))


def test_resume_refuses_another_runs_checkpoints_and_skips_incomplete_ones(tiny_encoder_dir, toy_corpus, tmp_path):
    import shutil

    from hf_textcluster import train_clusterer
    from hf_textcluster.data import load_texts
    from hf_textcluster.training.checkpoints import last_complete_checkpoint

    texts, labels = toy_corpus
    out = tmp_path / "run"
    common = dict(
        encoder=str(tiny_encoder_dir),
        evaluate=False,
        keep_checkpoints=True,  # a finished run's checkpoints stand for an interrupted run's here
        training_overrides={
            "max_steps": 2,
            "per_device_train_batch_size": 16,
            "bf16": False,
            "save_steps": 1,
            "disable_tqdm": True,
        },
    )
    train_clusterer("sccl", load_texts(texts, labels), str(out), **common)
    assert last_complete_checkpoint(str(out)).endswith("checkpoint-2")
    (out / "checkpoint-2" / "trainer_state.json").unlink()  # as if killed while saving
    assert last_complete_checkpoint(str(out)).endswith("checkpoint-1")
    with pytest.raises(ValueError, match="another run .*texts_sha1.*--no-resume"):
        train_clusterer("sccl", load_texts(texts[:90], labels[:90]), str(out), **common)
    with pytest.raises(ValueError, match="another run .*num_clusters"):
        train_clusterer("sccl", load_texts(texts, labels), str(out), num_clusters=4, **common)
    train_clusterer(
        "sccl", load_texts(texts[:90], labels[:90]), str(out), resume=False, overwrite=True, **common
    )  # start over, replacing the finished model
    shutil.rmtree(out)


@pytest.mark.parametrize(
    "texts,match",
    [
        (["same text"] * 40, "distinct texts \\(1 of 40"),
        (["Same  text", "same text ", "SAME TEXT\u200b"] * 10, "distinct texts \\(1 of 30"),
        (["ok text"] * 5 + ["\u200b\u200b"], "item 5 is empty or only whitespace / invisible"),
    ],
)
def test_degenerate_texts_are_errors(texts, match, tiny_encoder_dir, tmp_path):
    from hf_textcluster import train_clusterer
    from hf_textcluster.data import load_texts

    with pytest.raises(ValueError, match=match):
        train_clusterer(
            "sccl",
            load_texts(texts),
            str(tmp_path / "m"),
            encoder=str(tiny_encoder_dir),
            num_clusters=3,
            augmentation="word_deletion",
            evaluate=False,
            training_overrides={"max_steps": 1},
        )


def test_a_missing_local_path_is_named_as_such(tmp_path, capsys):
    from hf_textcluster import SCCLModel

    missing = str(tmp_path / "no" / "such" / "model")
    for path in (missing, "./nope-model", "runs/a/b"):
        with pytest.raises(FileNotFoundError, match="no such folder"):
            SCCLModel.from_pretrained(path)
    with pytest.raises(FileNotFoundError, match="`encoder`: no such folder"):
        from_encoder_pretrained(SCCLModel, missing, num_clusters=3)
    texts = tmp_path / "t.txt"
    texts.write_text("a text\n")
    assert main(["predict", "--model", missing, "--input", str(texts)]) == 2
    assert "`--model`: no such folder" in capsys.readouterr().err


def test_a_config_of_another_method_over_these_weights_is_an_error(tmp_path):
    import json
    import shutil
    from pathlib import Path

    from transformers import AutoModel

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "saved_models" / "sccl"
    shutil.copytree(fixture, tmp_path / "m")
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    config["model_type"] = "decmlm"
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    # transformers' load report: the tensors a DEC-MLM model has that these weights lack
    with pytest.raises(ValueError, match=r"do not fit a DECMLMModel \('decmlm' in its config.json\): \d+ missing"):
        AutoModel.from_pretrained(tmp_path / "m")


def test_ctrl_c_saves_a_checkpoint_and_the_rerun_resumes(tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch, capsys):
    import os
    import signal

    from transformers import TrainerCallback

    from hf_textcluster import SCCLTrainer

    class CtrlC(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            if state.global_step == 1:
                os.kill(os.getpid(), signal.SIGINT)

    original_init = SCCLTrainer.__init__

    def init_with_ctrl_c(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self.add_callback(CtrlC())

    data = tmp_path / "texts.txt"
    data.write_text("\n".join(toy_corpus[0]) + "\n")
    argv = [
        "train",
        "--method",
        "sccl",
        "--input",
        str(data),
        "--num-clusters",
        "3",
        "--encoder",
        str(tiny_encoder_dir),
        "--augmentation",
        "word_deletion",
        "--output-dir",
        str(tmp_path / "m"),
        "--precision",
        "fp32",
        "--per-device-train-batch-size",
        "16",
        "--max-steps",
        "4",
        "--save-steps",
        "100",
    ]
    monkeypatch.setattr(SCCLTrainer, "__init__", init_with_ctrl_c)
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN when pytest itself runs in the background (nohup, &)
    assert main(argv) == 130
    assert "Interrupted at step 2" in capsys.readouterr().err
    assert (tmp_path / "m" / "checkpoint-2").is_dir() and not (tmp_path / "m" / "model.safetensors").exists()
    assert signal.getsignal(signal.SIGINT) is before  # handlers restored
    monkeypatch.setattr(SCCLTrainer, "__init__", original_init)
    assert main(argv) == 0
    assert (tmp_path / "m" / "model.safetensors").exists()


def test_predict_with_a_broken_or_foreign_model_is_one_line(tiny_encoder_dir, tmp_path, capsys):
    import shutil
    from pathlib import Path

    texts = tmp_path / "t.txt"
    texts.write_text("a text\n")
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "saved_models" / "sccl"
    shutil.copytree(fixture, tmp_path / "m")
    weights = tmp_path / "m" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])  # truncated download
    assert main(["predict", "--model", str(tmp_path / "m"), "--input", str(texts)]) in (1, 2)
    err = capsys.readouterr().err
    assert "corrupted or incomplete" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert main(["predict", "--model", str(tiny_encoder_dir), "--input", str(texts)]) in (1, 2)  # a plain BERT
    err = capsys.readouterr().err
    assert "is not a folder made by hf_textcluster (model_type 'bert'" in err and "Traceback" not in err


@pytest.mark.slow  # the real entry point trained twice in subprocesses
@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGKILL"])
def test_a_signalled_run_rerun_ends_with_the_uninterrupted_weights(signal_name, tiny_encoder_dir, toy_corpus, tmp_path):
    """The real entry point in a subprocess, stopped by a real signal once a checkpoint exists (SIGINT: saves and
    exits 130; SIGKILL: dies at once, perhaps mid-save), then the same command again: the weights equal those of a
    run never interrupted."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from safetensors.torch import load_file

    data = tmp_path / "texts.txt"
    data.write_text("\n".join(toy_corpus[0]) + "\n")

    def command(output_dir):
        return [
            sys.executable,
            "-m",
            "hf_textcluster.cli",
            "train",
            "--method",
            "sccl",
            "--input",
            str(data),
            "--num-clusters",
            "3",
            "--encoder",
            str(tiny_encoder_dir),
            "--augmentation",
            "word_deletion",
            "--output-dir",
            str(output_dir),
            "--precision",
            "fp32",
            "--per-device-train-batch-size",
            "16",
            "--max-steps",
            "120",
            "--save-steps",
            "5",
        ]

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    straight = subprocess.run(command(tmp_path / "straight"), env=env, capture_output=True, text=True)
    assert straight.returncode == 0, straight.stderr[-2000:]
    run = tmp_path / "signalled"
    process = subprocess.Popen(command(run), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not (run / "checkpoint-10" / "trainer_state.json").exists():
        assert process.poll() is None and time.monotonic() < deadline, "the run ended before it could be interrupted"
        time.sleep(0.02)
    process.send_signal(getattr(signal, signal_name))
    _, err = process.communicate(timeout=120)
    assert not (run / "model.safetensors").exists(), "interrupted before the end"
    assert process.returncode == (130 if signal_name == "SIGINT" else -signal.SIGKILL), err[-2000:]
    if signal_name == "SIGINT":
        assert "Interrupted at step" in err and "run the same command again" in err
    again = subprocess.run(command(run), env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "Resuming from" in again.stderr
    expected, resumed = load_file(tmp_path / "straight" / "model.safetensors"), load_file(run / "model.safetensors")
    assert expected.keys() == resumed.keys()
    for name, tensor in expected.items():
        torch.testing.assert_close(resumed[name], tensor, rtol=1e-5, atol=1e-6, msg=name)
