"""After fitting: `hf-textcluster info | reduce | rename` and the folder-level `edit_saved_model` they run; each
result serves after reload, as `merge`'s does."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from transformers import AutoModel, pipeline

import hf_textcluster  # noqa: F401
from hf_textcluster.cli import main
from hf_textcluster.editing.describing import closest_merges
from hf_textcluster.representation.summary import cluster_info
from hf_textcluster.runs.saved_edits import edit_saved_model

K = 4  # the clusters of the `saved` model (conftest.py)


def _errors(capsys) -> list[str]:
    """The error lines of what was printed (argparse's and the commands' own: one line each)."""
    return [line for line in capsys.readouterr().err.splitlines() if "error:" in line]


def _serves(folder, texts):
    model = AutoModel.from_pretrained(folder)
    out = pipeline("text-clustering", model=model)(texts[:3])
    assert [o["cluster"] for o in out] == list(model.predict(texts[:3]))
    return model


def test_info_prints_the_saved_table_and_writes_csv(saved, toy_corpus, capsys):
    csv = saved / "out" / "clusters.csv"
    assert main(["info", "--model", str(saved / "model"), "--output", str(csv)]) == 0
    printed = capsys.readouterr().out
    model = AutoModel.from_pretrained(saved / "model")
    for name in model.config.id2label.values():
        assert name in printed
    assert "keywords:" in printed and "on its training texts" in printed
    table = pd.read_csv(csv)
    assert list(table.columns) == ["cluster", "name", "size", "keywords", "representative_texts", "mean_confidence"]
    assert table["size"].tolist() == np.bincount(model.predict(toy_corpus[0]), minlength=K).tolist()
    assert all(text in toy_corpus[0] for cell in table["representative_texts"] for text in cell.split("\n"))


def test_info_recomputes_on_input_and_asks_for_it_without_a_summary(saved, toy_corpus, tmp_path, capsys):
    few = tmp_path / "few.txt"
    few.write_text("\n".join(toy_corpus[0][:20]) + "\n", encoding="utf-8")
    assert main(["info", "--model", str(saved / "model"), "--input", str(few)]) == 0
    assert "on the 20 texts of" in capsys.readouterr().out
    bare = tmp_path / "bare"
    model = AutoModel.from_pretrained(saved / "model")
    vars(model.config).pop("cluster_summary")
    model.save_pretrained(bare)
    assert main(["info", "--model", str(bare)]) == 2
    (err,) = _errors(capsys)
    assert "pass its training texts with --input FILE" in err


def test_reduce_merges_the_closest_clusters_and_serves_after_reload(saved, toy_corpus, capsys):
    texts = toy_corpus[0]
    out = saved / "reduced"
    assert main(["reduce", "--model", str(saved / "model"), "--to", "2", "--output-dir", str(out)]) == 0
    assert "to 2 clusters" in capsys.readouterr().out
    model = _serves(out, texts)
    assert model.config.num_clusters == 2 and model.is_calibrated
    edit = json.loads((out / "training_run.json").read_text())["edits"][-1]
    assert edit["op"] == "merge" and edit["reduced_to"] == 2 and len(edit["mapping"]) == K
    table = cluster_info(model)  # recomputed on the run's texts (found through training_run.json) and saved
    assert table["size"].tolist() == np.bincount(model.predict(texts), minlength=2).tolist()
    source = AutoModel.from_pretrained(saved / "model")
    centres = source.calibration.centres.numpy()
    assert edit["clusters"] == closest_merges(centres, source.calibration.cluster_sizes.numpy(), 2)


def test_reduce_refuses_a_count_it_cannot_reach(saved, capsys):
    args = ["reduce", "--model", str(saved / "model"), "--output-dir", str(saved / "x")]
    assert main([*args, "--to", str(K)]) == 2
    (err,) = _errors(capsys)
    assert "--to" in err and f"from 2 to {K - 1}" in err
    with pytest.raises(ValueError, match="from 2 to 3"):
        edit_saved_model(saved / "model", saved / "y", "reduce", num_clusters=1)


def test_closest_merges_joins_nearest_centres_first():
    centres = np.array([[1.0, 0.0], [0.95, 0.3], [0.0, 1.0], [0.3, 0.95], [-1.0, 0.0]])
    assert closest_merges(centres, np.ones(5), 3) == [[0, 1], [2, 3]]
    assert closest_merges(centres, np.ones(5), 2) == [[0, 1, 2, 3]]  # the merged pairs are nearer than 4
    assert closest_merges(centres, np.ones(5), 5) == []


def test_a_merged_centre_is_weighted_by_size():
    # 0 and 1 merge first; the merged centre sits by the heavier one, so 2 joins it when 1 is heavy, 3 when 0 is
    angles = np.radians([0.0, 30.0, 75.0, -45.0])
    centres = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    assert closest_merges(centres, np.array([1, 100, 1, 1]), 2) == [[0, 1, 2]]
    assert closest_merges(centres, np.array([100, 1, 1, 1]), 2) == [[0, 1, 3]]


def test_rename_saves_names_in_place_or_elsewhere(saved, tmp_path, capsys):
    folder = tmp_path / "m"
    model = AutoModel.from_pretrained(saved / "model")
    model.save_pretrained(folder)
    (folder / "training_run.json").write_text((saved / "model" / "training_run.json").read_text())
    names_file = tmp_path / "names.json"
    names_file.write_text(json.dumps({"0": "billing", "2": "shipping"}), encoding="utf-8")
    assert main(["rename", "--model", str(folder), "--file", str(names_file), "1=refunds", "2=returns"]) == 0
    assert "Renamed 3 of 4 clusters" in capsys.readouterr().out
    renamed = _serves(folder, ["refund my order please"] * 3)
    assert [renamed.config.id2label[k] for k in range(3)] == ["billing", "refunds", "returns"]
    assert renamed.config.id2label[3] == model.config.id2label[3]
    assert cluster_info(renamed).loc[1, "name"] == "refunds"  # the saved summary is kept
    other, _ = edit_saved_model(folder, tmp_path / "copy", "rename", names={3: "other"})
    assert other.model.config.id2label[3] == "other" and (tmp_path / "copy" / "training_run.json").is_file()
    assert AutoModel.from_pretrained(folder).config.id2label[3] != "other"
    with pytest.raises(ValueError, match="not a local folder: rename saves the model back"):
        edit_saved_model("your-org/no-such-model", None, "rename", names={3: "x"})


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (["7=x"], "not a cluster of this model: give ids from 0 to 3"),
        (["0=a", "1=a"], "names must be unique"),
        (["x=a"], "expected ID=NAME"),
        ([], "rename needs names"),
    ],
)
def test_rename_refuses_bad_names_in_one_line(saved, names, message, capsys):
    before = (saved / "model" / "config.json").read_text()
    try:
        status = main(["rename", "--model", str(saved / "model"), *names])
    except SystemExit as exit_:
        status = exit_.code
    assert status == 2
    (err,) = _errors(capsys)
    assert message in err
    assert (saved / "model" / "config.json").read_text() == before


def test_rename_writes_the_model_card_again_with_the_new_names(saved, tmp_path, capsys):
    folder = tmp_path / "carded"
    AutoModel.from_pretrained(saved / "model").save_pretrained(folder)
    (folder / "training_run.json").write_text((saved / "model" / "training_run.json").read_text())
    (folder / "README.md").write_text("an older card\n", encoding="utf-8")
    assert main(["rename", "--model", str(folder), "0=billing"]) == 0
    capsys.readouterr()
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "an older card" not in card and "billing" in card
