"""`hf-textcluster merge | split | update` into another folder (--output-dir; the old one left as it was): names,
calibration, card and the history of edits in training_run.json; the edited folder serves through AutoModel and the
pipeline."""

from __future__ import annotations

import json

import numpy as np
import pytest
from transformers import AutoModel, pipeline

import hf_textcluster  # noqa: F401
from hf_textcluster.cli import main
from hf_textcluster.runs.saved_edits import edit_saved_model
from hf_textcluster.runs.saving import ONLINE_STATE_FILE
from tests.curation.conftest import K, fitted_model


@pytest.fixture(scope="module")
def saved(tiny_encoder_dir, toy_corpus, tmp_path_factory):
    """A fitted, calibrated, named SCCL model with a training_run.json and a card, and its texts in a file."""
    texts, _ = toy_corpus
    root = tmp_path_factory.mktemp("curation")
    model = fitted_model(tiny_encoder_dir, texts)
    model.config.id2label = {k: f"topic {k}" for k in range(K)}
    model.config.label2id = {v: k for k, v in model.config.id2label.items()}
    model.save_pretrained(root / "model")
    (root / "texts.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    run = {"method": "sccl", "num_clusters": K, "metrics": {"acc": 0.5, "nmi": 0.4}}
    (root / "model" / "training_run.json").write_text(json.dumps(run), encoding="utf-8")
    (root / "model" / "README.md").write_text("card\n", encoding="utf-8")
    return root


def _serves(folder, texts):
    model = AutoModel.from_pretrained(folder)
    out = pipeline("text-clustering", model=model)(texts[:3])
    assert [o["cluster"] for o in out] == list(model.predict(texts[:3]))
    return model


def test_merge_writes_a_new_folder_with_the_history(saved, toy_corpus, capsys):
    texts, _ = toy_corpus
    before = (saved / "model" / "model.safetensors").read_bytes()
    out = saved / "merged"
    args = ["merge", "--model", str(saved / "model"), "0,2", "--output-dir", str(out)]
    assert main([*args, "--input", str(saved / "texts.txt")]) == 0
    assert "3 clusters now" in capsys.readouterr().out
    assert (saved / "model" / "model.safetensors").read_bytes() == before  # the old folder is kept as it was
    model = _serves(out, texts)
    assert model.config.num_clusters == K - 1 and model.is_calibrated
    names = model.config.id2label
    assert names[1] == "topic 1" and names[2] == "topic 3" and names[0] != "topic 0"  # the merged one renamed
    run = json.loads((out / "training_run.json").read_text())
    edit = run["edits"][-1]
    assert edit["op"] == "merge" and edit["clusters"] == [[0, 2]] and edit["mapping"] == [0, 1, 0, 2]
    assert edit["time"].endswith("Z") and run["num_clusters"] == K - 1
    assert run["metrics"] == {} and run["metrics_before_edits"] == {"acc": 0.5, "nmi": 0.4}
    assert "merged clusters 0 + 2" in (out / "README.md").read_text()
    # an edit of the edit keeps the history
    assert main(["merge", "--model", str(out), "0,1", "--output-dir", str(saved / "merged2")]) == 0
    history = json.loads((saved / "merged2" / "training_run.json").read_text())["edits"]
    assert [e["op"] for e in history] == ["merge", "merge"] and history[1]["num_clusters"] == K - 2


def test_edits_never_replace_another_model_without_overwrite(saved, capsys):
    model_dir = str(saved / "model")
    edit_saved_model(model_dir, saved / "taken", "merge", clusters=[[0, 1]])
    assert main(["merge", "--model", model_dir, "1,2", "--output-dir", str(saved / "taken")]) != 0
    assert f"--output-dir {saved / 'taken'} already holds a trained model" in capsys.readouterr().err
    with pytest.raises(FileExistsError, match="--overwrite"):
        edit_saved_model(model_dir, saved / "taken", "merge", clusters=[[1, 2]])
    clusterer, _ = edit_saved_model(model_dir, saved / "taken", "merge", clusters=[[1, 2]], overwrite=True)
    model = clusterer.model
    assert AutoModel.from_pretrained(saved / "taken").config.num_clusters == model.config.num_clusters == K - 1
    with pytest.raises(SystemExit):
        main(["merge", "--model", model_dir, "7", "--output-dir", str(saved / "x")])
    assert "at least two comma-separated cluster ids" in capsys.readouterr().err
    assert main(["merge", "--model", model_dir, "0,9", "--output-dir", str(saved / "x")]) == 2
    assert "cluster id in 0..3" in capsys.readouterr().err


def test_split_needs_texts_and_names_the_parts(saved, toy_corpus, capsys):
    texts, _ = toy_corpus
    model_dir = str(saved / "model")
    cluster = int(np.bincount(AutoModel.from_pretrained(model_dir).predict(texts)).argmax())
    args = ["split", "--model", model_dir, str(cluster), "--output-dir", str(saved / "split")]
    assert main(args) == 2
    assert "needs texts" in capsys.readouterr().err
    assert main([*args, "--input", str(saved / "texts.txt"), "--parts", "3"]) == 0
    model = _serves(saved / "split", texts)
    assert model.config.num_clusters == K + 2
    edit = json.loads((saved / "split" / "training_run.json").read_text())["edits"][-1]
    assert edit["op"] == "split" and edit["clusters"] == [cluster] and edit["new_ids"] == [cluster, K, K + 1]
    assert len(set(model.config.id2label.values())) == K + 2


def test_update_keeps_its_running_means_and_accepts_a_new_cluster(saved, toy_corpus, tmp_path, capsys):
    texts, _ = toy_corpus
    model_dir = str(saved / "model")
    new = [" ".join(["zzz"] * (3 + i % 4)) + " q" * (i % 3) for i in range(30)]
    (tmp_path / "week1.txt").write_text("\n".join(texts[:40]) + "\n", encoding="utf-8")
    (tmp_path / "week2.txt").write_text("\n".join(texts[40:70] + new) + "\n", encoding="utf-8")
    first = tmp_path / "week1"
    base = ["update", "--reference", str(saved / "texts.txt")]
    assert main([*base, "--model", model_dir, "--input", str(tmp_path / "week1.txt"), "--output-dir", str(first)]) == 0
    assert "no new group proposed" in capsys.readouterr().out
    assert (first / ONLINE_STATE_FILE).is_file()
    second = tmp_path / "week2"
    args = ["update", "--model", str(first), "--input", str(tmp_path / "week2.txt"), "--output-dir", str(second)]
    with pytest.raises(SystemExit) as exit_info:  # refused by its own name in one line, before any loading
        main([*args, "--far-quantile", "1.5"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--far-quantile" in err[0]
    assert main([*args, "--min-new-size", "10", "--far-quantile", "0.9"]) == 0
    assert "proposed (run again with --accept-new" in capsys.readouterr().out
    assert main([*args, "--min-new-size", "10", "--accept-new", "--overwrite"]) == 0
    model = _serves(second, texts + new)
    assert model.config.num_clusters == K + 1 and (model.predict(new) == K).mean() >= 0.5
    edits = json.loads((second / "training_run.json").read_text())["edits"]
    assert [e["op"] for e in edits] == ["update", "update"] and edits[-1]["new_cluster"] == K
    from safetensors.torch import load_file

    assert load_file(str(second / ONLINE_STATE_FILE))["counts"].shape == (K + 1,)
