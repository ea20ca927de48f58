"""`Clusterer`, the one object that reads and edits a trained clusterer: each method gives what the function it calls
gives on the same model, names and summarises the edited clusters, records the edit; a save in place keeps the
model before in `previous/` and `restore` goes back (also from the command line); the shipped model class has no
editing or reading method of the package."""

from __future__ import annotations

import copy
import json
import shutil

import numpy as np
import pytest
import torch
from transformers import AutoModel

import hf_textcluster
from hf_textcluster import Clusterer, TextClusteringPreTrainedModel, edit_saved_model
from hf_textcluster.choosing.serving import serve_partition
from hf_textcluster.cli import main
from hf_textcluster.editing import initialize_clusters, merge_clusters, split_cluster, start_online, update
from hf_textcluster.editing.describing import closest_merges
from hf_textcluster.representation import rename_clusters
from hf_textcluster.representation.summary import cluster_info
from hf_textcluster.runs.saving import PREVIOUS_FOLDER

K = 4  # the clusters of the `saved` model (conftest.py)


@pytest.fixture()
def folder(saved, tmp_path):
    """A copy of the saved model folder (tests change it)."""
    return shutil.copytree(saved / "model", tmp_path / "model")


def test_the_shipped_model_class_has_no_package_only_methods():
    for name in ("cluster_info", "merge", "split", "reduce", "update", "rename", "refine", "recluster"):
        assert not hasattr(TextClusteringPreTrainedModel, name), name
    assert hf_textcluster.Clusterer is Clusterer and "Clusterer" in hf_textcluster.__all__


def test_load_reads_the_model_its_record_and_its_training_texts(saved, toy_corpus):
    texts = toy_corpus[0]
    clusterer = Clusterer.load(saved / "model")
    model = AutoModel.from_pretrained(saved / "model")
    assert clusterer.texts == texts and clusterer.run.method == "sccl" and clusterer.path == str(saved / "model")
    np.testing.assert_array_equal(clusterer.predict(texts), model.predict(texts))
    expected = cluster_info(model)
    assert clusterer.cluster_info().equals(expected)
    assert clusterer.cluster_info(texts[:30])["size"].sum() == 30


def test_merge_equals_merge_clusters_and_names_the_merged_cluster(saved, toy_corpus):
    texts = toy_corpus[0]
    clusterer = Clusterer.load(saved / "model").merge([[0, 2]])
    expected = merge_clusters(AutoModel.from_pretrained(saved / "model"), [[0, 2]], texts=texts)
    np.testing.assert_array_equal(clusterer.predict(texts), expected.predict(texts))
    assert list(clusterer.model.cluster_mapping_) == [0, 1, 0, 2]
    edit = clusterer.run.edits[-1]
    assert edit["op"] == "merge" and edit["clusters"] == [[0, 2]] and edit["mapping"] == [0, 1, 0, 2]
    table = clusterer.cluster_info()  # the summary recomputed on the training texts
    assert table["size"].tolist() == np.bincount(clusterer.predict(texts), minlength=K - 1).tolist()
    old = AutoModel.from_pretrained(saved / "model").config.id2label
    assert clusterer.model.config.id2label[1] == old[1] and clusterer.model.config.id2label[2] == old[3]


def test_reduce_without_texts_merges_the_saved_summary(saved, toy_corpus):
    clusterer = Clusterer.load(saved / "model")
    clusterer.run.input = None  # no training texts to be found
    before = clusterer.cluster_info()
    clusterer.reduce(3)
    after = clusterer.cluster_info()
    assert after["size"].sum() == before["size"].sum() == len(toy_corpus[0])
    mapping = clusterer.model.cluster_mapping_
    for new in range(3):
        assert after.loc[new, "size"] == before["size"][mapping == new].sum()


def test_split_equals_split_cluster_and_needs_texts(saved, toy_corpus):
    texts = toy_corpus[0]
    model = AutoModel.from_pretrained(saved / "model")
    cluster = int(np.bincount(model.predict(texts)).argmax())
    clusterer = Clusterer.load(saved / "model").split(cluster, num_clusters=3)
    expected = split_cluster(model, cluster, n=3, texts=texts)
    np.testing.assert_array_equal(clusterer.predict(texts), expected.predict(texts))
    edit = clusterer.run.edits[-1]
    assert edit["op"] == "split" and edit["clusters"] == [cluster] and edit["new_ids"] == [cluster, K, K + 1]
    assert len(set(clusterer.model.config.id2label.values())) == K + 2
    bare = Clusterer.load(saved / "model")
    bare.run.input = None
    with pytest.raises(ValueError, match="split needs texts"):
        bare.split(cluster)


def test_reduce_merges_the_closest_calibrated_centres(saved, toy_corpus):
    texts = toy_corpus[0]
    source = AutoModel.from_pretrained(saved / "model")
    groups = closest_merges(source.calibration.centres.numpy(), source.calibration.cluster_sizes.numpy(), 2)
    clusterer = Clusterer.load(saved / "model").reduce(2)
    expected = merge_clusters(source, groups, texts=texts)
    np.testing.assert_array_equal(clusterer.predict(texts), expected.predict(texts))
    edit = clusterer.run.edits[-1]
    assert edit["op"] == "merge" and edit["reduced_to"] == 2 and edit["clusters"] == groups
    with pytest.raises(ValueError, match=f"from 2 to {K - 1}"):
        Clusterer.load(saved / "model").reduce(K)


def test_update_equals_the_online_update_started_from_the_training_texts(saved, toy_corpus):
    texts = toy_corpus[0]
    new = texts[:40]
    clusterer = Clusterer.load(saved / "model")
    result = clusterer.update(new)
    model = start_online(AutoModel.from_pretrained(saved / "model"), texts)
    expected = update(model, new)
    np.testing.assert_array_equal(result.clusters, expected.clusters)
    np.testing.assert_allclose(result.moved, expected.moved, atol=1e-6)
    assert clusterer.run.edits[-1]["op"] == "update" and clusterer.run.edits[-1]["texts"] == 40


def test_rename_equals_rename_clusters(saved):
    clusterer = Clusterer.load(saved / "model").rename({1: "refunds"})
    model = AutoModel.from_pretrained(saved / "model")
    assert clusterer.model.config.id2label == rename_clusters(model, {1: "refunds"})
    assert clusterer.cluster_info().loc[1, "name"] == "refunds"  # the saved summary is kept
    with pytest.raises(ValueError, match="names must be unique"):
        clusterer.rename({0: "refunds"})


def test_name_stores_the_generated_names_and_caches_the_answers(folder):
    answers = []

    def generator(prompt):
        answers.append(prompt)
        return f"Topic {len(answers)}"

    clusterer = Clusterer.load(folder)
    sources = clusterer.name(generator)
    assert sources == dict.fromkeys(range(K), "generated")
    assert sorted(clusterer.model.config.id2label.values()) == [f"Topic {i}" for i in range(1, K + 1)]
    clusterer.save()
    assert (folder / "cluster_names.json").is_file() and len(answers) == K
    Clusterer.load(folder).name(generator)  # the cached answers: nothing generated again
    assert len(answers) == K


def test_refine_equals_serve_partition(saved, toy_corpus):
    texts = toy_corpus[0]
    clusterer = Clusterer.load(saved / "model")
    choice = clusterer.refine(serve="kmeans")
    model = AutoModel.from_pretrained(saved / "model")
    expected = serve_partition(model, model.embed(texts), serve="kmeans")
    np.testing.assert_array_equal(choice.labels, expected.labels)
    np.testing.assert_array_equal(clusterer.predict(texts), model.predict(texts))
    assert clusterer.model.is_calibrated and clusterer.run.serving["served"] == "kmeans"


def test_recluster_equals_initialize_clusters_and_calibrate_equals_model_calibrate(saved, toy_corpus):
    texts = toy_corpus[0]
    clusterer = Clusterer.load(saved / "model").recluster(random_state=3)
    model = AutoModel.from_pretrained(saved / "model")
    initialize_clusters(model, embeddings=model.embed(texts), random_state=3)
    np.testing.assert_array_equal(clusterer.predict(texts), model.predict(texts))
    calibrated = Clusterer.load(saved / "model").calibrate(texts[:60], random_state=1)
    expected = copy.deepcopy(AutoModel.from_pretrained(saved / "model")).calibrate(texts[:60], random_state=1)
    torch.testing.assert_close(calibrated.model.calibration.centres, expected.calibration.centres)
    assert calibrated.model.config.num_calibration_texts == 60


def test_save_in_place_keeps_the_model_before_and_restore_swaps_back(folder, toy_corpus):
    texts = toy_corpus[0]
    before = AutoModel.from_pretrained(folder).predict(texts)
    clusterer = Clusterer.load(folder).merge([[0, 1]])
    assert clusterer.save() == str(folder)
    after = AutoModel.from_pretrained(folder)
    assert after.config.num_clusters == K - 1
    run = json.loads((folder / "training_run.json").read_text())
    assert run["metrics"] == {} and run["metrics_before_edits"] == {"acc": 0.5} and run["num_clusters"] == K - 1
    assert (folder / "assignments.csv").read_text().splitlines()[1:] == [str(k) for k in after.predict(texts)]
    kept = AutoModel.from_pretrained(folder / PREVIOUS_FOLDER)
    np.testing.assert_array_equal(kept.predict(texts), before)
    assert "edits" not in json.loads((folder / PREVIOUS_FOLDER / "training_run.json").read_text())
    restored = clusterer.restore()
    assert restored is clusterer and clusterer.model.config.num_clusters == K
    np.testing.assert_array_equal(AutoModel.from_pretrained(folder).predict(texts), before)
    assert AutoModel.from_pretrained(folder / PREVIOUS_FOLDER).config.num_clusters == K - 1  # restore again: redo
    clusterer.restore()
    assert AutoModel.from_pretrained(folder).config.num_clusters == K - 1


def test_save_elsewhere_leaves_the_folder_and_refuses_another_model(saved, folder, tmp_path):
    config = (folder / "config.json").read_text()
    clusterer = Clusterer.load(folder).rename({0: "billing"})
    clusterer.save(tmp_path / "copy")
    assert (folder / "config.json").read_text() == config and not (folder / PREVIOUS_FOLDER).exists()
    assert AutoModel.from_pretrained(tmp_path / "copy").config.id2label[0] == "billing"
    assert (tmp_path / "copy" / "training_run.json").is_file()
    with pytest.raises(FileExistsError, match="--overwrite"):
        Clusterer.load(folder).rename({0: "other"}).save(saved / "model")
    hub = Clusterer.load(folder)
    hub.path = None  # as loaded from the Hub
    with pytest.raises(ValueError, match="`path` is required"):
        hub.save()


def test_every_edit_command_changes_in_place_and_restore_goes_back(folder, saved, capsys):
    before = (folder / "model.safetensors").read_bytes()
    assert main(["merge", "--model", str(folder), "0,1"]) == 0
    out = capsys.readouterr().out
    assert f"kept in {folder}/previous" in out and f"restore --model {folder}" in out
    assert AutoModel.from_pretrained(folder).config.num_clusters == K - 1
    assert (folder / PREVIOUS_FOLDER / "model.safetensors").read_bytes() == before
    assert main(["rename", "--model", str(folder), "0=billing"]) == 0  # the previous state is the merged one now
    assert AutoModel.from_pretrained(folder / PREVIOUS_FOLDER).config.num_clusters == K - 1
    assert main(["restore", "--model", str(folder)]) == 0
    model = AutoModel.from_pretrained(folder)
    assert model.config.num_clusters == K - 1 and model.config.id2label[0] != "billing"
    edits = [e["op"] for e in json.loads((folder / "training_run.json").read_text())["edits"]]
    assert edits == ["merge"]
    empty = saved / "no-previous"
    shutil.copytree(saved / "model", empty)
    assert main(["restore", "--model", str(empty)]) == 2
    assert "keeps no previous state" in capsys.readouterr().err


def test_edit_saved_model_refuses_before_any_work(saved, tmp_path):
    with pytest.raises(ValueError, match="`op` must be one of merge, split"):
        edit_saved_model(saved / "model", None, "fit")
    other = shutil.copytree(saved / "model", tmp_path / "other")
    with pytest.raises(FileExistsError, match="which merge would replace"):
        edit_saved_model(saved / "model", other, "merge", clusters=[[0, 1]])
    with pytest.raises(ValueError, match="pass --output-dir"):
        edit_saved_model("your-org/no-such-model", None, "rename", names={0: "x"})


def test_fit_takes_k_from_a_labelled_dataset_by_default(tiny_encoder_dir, toy_corpus, tmp_path):
    import datasets

    # seven label classes over three topics: K chosen from the texts would be about 3
    labels = [i % 7 for i in range(len(toy_corpus[0]))]
    labelled = datasets.Dataset.from_dict({"text": toy_corpus[0], "label": labels})
    train = {"per_device_train_batch_size": 16, "bf16": False, "disable_tqdm": True, "max_steps": 2}
    clusterer = Clusterer(method="sccl", encoder=str(tiny_encoder_dir), evaluate=False, training_overrides=train)
    assert clusterer.fit(labelled, tmp_path / "run").model.config.num_clusters == 7


def test_fit_trains_and_keeps_the_run(tiny_encoder_dir, toy_corpus, tmp_path):
    texts = toy_corpus[0]
    train = {"per_device_train_batch_size": 16, "bf16": False, "disable_tqdm": True, "max_steps": 2}
    clusterer = Clusterer(3, method="sccl", encoder=str(tiny_encoder_dir), evaluate=False, training_overrides=train)
    assert clusterer.fit(texts, tmp_path / "run") is clusterer
    assert clusterer.model.config.num_clusters == 3 and clusterer.texts == texts
    assert clusterer.cluster_info()["size"].sum() == len(texts)
    np.testing.assert_array_equal(clusterer.predict(texts), AutoModel.from_pretrained(tmp_path / "run").predict(texts))


def test_fit_from_a_train_command_line_trains_the_run_train_does(tiny_encoder_dir, toy_corpus, tmp_path, capsys):
    """`train` and `Clusterer.from_request(request).fit()` of the same command line write the same run: one way
    to train, whichever door."""
    from hf_textcluster.cli import parse_command_line
    from hf_textcluster.cli.train import training_request

    data = tmp_path / "texts.csv"
    data.write_text("text\n" + "\n".join(toy_corpus[0]) + "\n")
    argv = ["train", "--method", "sccl", "--input", str(data), "--num-clusters", "3"]
    argv += ["--encoder", str(tiny_encoder_dir)]
    argv += ["--max-steps", "2", "--per-device-train-batch-size", "16", "--precision", "fp32", "--stop-words", "german"]
    argv += ["--save-strategy", "no", "--disable-tqdm", "true", "--output-dir"]
    assert main([*argv, str(tmp_path / "cli")]) == 0
    assert "Saved SCCL" in capsys.readouterr().out
    clusterer = Clusterer.from_request(training_request(*parse_command_line([*argv, str(tmp_path / "fit")]))).fit()
    assert clusterer.path == str(tmp_path / "fit") and clusterer.texts == toy_corpus[0]
    assert clusterer.labels_.shape == (len(toy_corpus[0]),) and clusterer.training_result_.output_dir == clusterer.path
    cli, fit = (json.loads((tmp_path / name / "training_run.json").read_text()) for name in ("cli", "fit"))
    assert sorted(cli) == sorted(fit)
    for key in ("method", "input", "recipe", "training_overrides", "encoder", "num_train_texts", "precision"):
        assert cli[key] == fit[key], key
    saved = [json.loads((tmp_path / name / "config.json").read_text()) for name in ("cli", "fit")]
    assert saved[0]["num_clusters"] == saved[1]["num_clusters"] == 3
    assert saved[0]["keyword_vectorizer"] == saved[1]["keyword_vectorizer"] == {"stop_words": "german"}
    given = toy_corpus[0][:-4]  # texts given to fit replace the file the command line named
    clusterer.fit(given, tmp_path / "given")
    assert clusterer.texts == given and clusterer.labels_.shape == (len(given),)
    assert json.loads((tmp_path / "given" / "training_run.json").read_text())["num_train_texts"] == len(given)
