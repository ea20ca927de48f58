"""num_clusters="auto": the criteria of hf_textcluster.choosing.auto_k on synthetic data, their errors, and the wiring
(train_clusterer, EmbeddingKMeans, the CLI)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from hf_textcluster.choosing.auto_k import DEFAULT_CRITERION, compare_criteria, default_k_max, estimate_num_clusters
from hf_textcluster.choosing.criteria import K_CRITERIA, cosine_silhouette
from hf_textcluster.choosing.layout_k import candidate_ks


def blobs(k: int, per_cluster: int = 40, seed: int = 0):
    return make_blobs(n_samples=k * per_cluster, n_features=16, centers=k, cluster_std=1.0, random_state=seed)


@pytest.mark.parametrize("k", [4, 8, 15])
def test_every_criterion_recovers_k_of_well_separated_blobs(k):
    x, _ = blobs(k, seed=k)
    results = compare_criteria(x, k_min=2, k_max=30, random_state=0)
    assert set(results) == set(K_CRITERIA)
    for method, result in results.items():
        assert result.num_clusters == k, (method, result.num_clusters)
        assert result.criterion == method and (result.k_min, result.k_max) == (2, 30)
        assert k in result.scores and min(result.scores) == 2 and max(result.scores) <= 30
    # one criterion alone gives the same answer as in the comparison (same sample, same k-means fits)
    alone = estimate_num_clusters(x, k_min=2, k_max=30, criterion="silhouette")
    assert alone.num_clusters == k and alone.scores == results["silhouette"].scores


def test_default_criterion_and_range():
    x, _ = blobs(6, per_cluster=30)
    result = estimate_num_clusters(x)
    assert result.criterion == DEFAULT_CRITERION and result.num_clusters == 6
    assert (result.k_min, result.k_max) == (2, default_k_max(180)) == (2, 40)
    assert default_k_max(2472) == 149 and default_k_max(20000) == 200 and default_k_max(1_000_000) == 200
    record = result.to_dict()
    assert record["num_clusters"] == 6 and record["criterion"] == DEFAULT_CRITERION and record["k_range"] == [2, 40]
    json.dumps(record)


def test_large_n_is_searched_on_a_seeded_sample():
    x, _ = make_blobs(n_samples=3000, n_features=8, centers=5, cluster_std=0.5, random_state=1)
    a = estimate_num_clusters(x, k_max=12, criterion="calinski_harabasz", sample_size=500, random_state=3)
    b = estimate_num_clusters(x, k_max=12, criterion="calinski_harabasz", sample_size=500, random_state=3)
    assert a.num_clusters == b.num_clusters == 5 and a.scores == b.scores
    assert a.sample_size == 500 and a.num_texts == 3000


def test_grid_is_dense_then_geometric():
    assert candidate_ks(2, 10) == list(range(2, 11))
    grid = candidate_ks(2, 200)
    assert grid[:15] == list(range(2, 17)) and grid[-1] == 200 and len(grid) < 45
    assert all(b / a <= 1.14 for a, b in zip(grid[15:], grid[16:]))  # ~10% steps, rounded
    assert candidate_ks(20, 25)[0] == 20 and candidate_ks(7, 7) == [7]


def test_cosine_silhouette_is_sklearns():
    from sklearn.metrics import silhouette_score

    x, _ = blobs(5, per_cluster=20)
    labels = np.random.default_rng(0).integers(0, 4, len(x))
    labels[0] = 7  # a singleton cluster
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    assert cosine_silhouette(unit, labels) == pytest.approx(silhouette_score(unit, labels, metric="cosine"), abs=1e-9)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"k_min": 1}, "`k_min` must be at least 2"),
        ({"k_min": 10, "k_max": 5}, r"`k_max` \(5\) is smaller than `k_min` \(10\); pass k_max >= 10"),
        ({"k_min": 60}, r"`k_min` \(60\) is not smaller than the number of texts \(60\)"),
        (
            {"k_max": 100},
            r"`k_max` \(100\) is not smaller than the number of texts \(60\): more clusters than texts; pass k_max <= "
            r"59",
        ),
        ({"criterion": "elbow"}, "Unknown `criterion` 'elbow'.*eigengap"),
        ({"sample_size": 2}, "`sample_size` must be at least 3"),
    ],
)
def test_bad_arguments_name_the_argument_and_the_fix(kwargs, match):
    x, _ = blobs(3, per_cluster=20)
    with pytest.raises(ValueError, match=match):
        estimate_num_clusters(x, **kwargs)


def test_bad_embeddings():
    with pytest.raises(ValueError, match="2-D"):
        estimate_num_clusters(np.zeros(10))
    with pytest.raises(ValueError, match="row 1 holds NaN"):
        estimate_num_clusters(np.array([[0.0, 1.0], [np.nan, 0.0], [1.0, 0.0], [1.0, 1.0]]))
    with pytest.raises(TypeError, match="k_min"):
        estimate_num_clusters(np.eye(5), k_min=2.5)
    with pytest.raises(ValueError, match="distinct"):  # 40 copies of 2 texts: no K >= 3 to choose
        estimate_num_clusters(np.repeat(np.eye(2), 20, axis=0), k_min=3)


def test_train_clusterer_chooses_and_records_k(tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch):
    from hf_textcluster import train_clusterer
    from hf_textcluster.data import load_texts
    from hf_textcluster.modeling.modeling_utils import TextClusteringPreTrainedModel

    texts, labels = toy_corpus
    calls = []
    embed = TextClusteringPreTrainedModel.embed
    monkeypatch.setattr(
        TextClusteringPreTrainedModel, "embed", lambda self, *a, **k: calls.append(len(a[0])) or embed(self, *a, **k)
    )
    out = tmp_path / "auto"
    result = train_clusterer(
        "sccl",
        load_texts(texts, labels),
        str(out),
        encoder=str(tiny_encoder_dir),
        augmentation="word_deletion",
        num_clusters="auto",
        k_range=(2, 6),
        seed=0,
        evaluate=False,
        training_overrides={
            "max_steps": 2,
            "per_device_train_batch_size": 8,
            "save_strategy": "no",
            "bf16": False,
            "disable_tqdm": True,
            "serve": "head",
        },  # the choice of what to serve encodes again
    )
    k = result.model.config.num_clusters
    assert 2 <= k <= 6 and result.trainer.state.global_step == 2
    assert calls == [len(texts)]  # one encoding pass: choosing K and the k-means initialisation share it
    run = json.loads((out / "training_run.json").read_text())
    selection = run["k_selection"]
    assert selection["num_clusters"] == k and selection["criterion"] == DEFAULT_CRITERION
    assert selection["k_range"][0] == 2 and selection["k_range"][1] <= 6 and selection["requested_k_range"] == [2, 6]
    # every K tried up to the dense clusters HDBSCAN found (at most k_max)
    assert set(map(int, selection["scores"])) == set(range(2, selection["k_range"][1] + 1)) and k in range(2, 7)
    assert json.loads((out / "config.json").read_text())["num_clusters"] == k
    assert result.k_selection == selection


def test_a_resumed_auto_run_keeps_its_k(tiny_encoder_dir, toy_corpus, tmp_path, monkeypatch):
    from hf_textcluster import train_clusterer
    from hf_textcluster.data import load_texts
    from hf_textcluster.modeling.modeling_utils import TextClusteringPreTrainedModel

    texts, labels = toy_corpus
    out = tmp_path / "resumed"
    kwargs = dict(
        encoder=str(tiny_encoder_dir),
        augmentation="word_deletion",
        num_clusters="auto",
        k_range=(2, 6),
        k_criterion="silhouette",
        evaluate=False,
        save=False,
    )
    overrides = {
        "per_device_train_batch_size": 8,
        "bf16": False,
        "disable_tqdm": True,
        "save_steps": 1,
        "serve": "head",
    }  # no encoding pass at all on resume (the choice of what to serve makes one)
    first = train_clusterer(
        "sccl", load_texts(texts, labels), str(out), training_overrides={**overrides, "max_steps": 1}, **kwargs
    )
    calls = []
    monkeypatch.setattr(TextClusteringPreTrainedModel, "embed", lambda self, *a, **k: calls.append(1))
    again = train_clusterer(
        "sccl", load_texts(texts, labels), str(out), training_overrides={**overrides, "max_steps": 2}, **kwargs
    )
    assert again.trainer.state.global_step == 2 and not calls  # resumed from checkpoint-1, nothing re-embedded
    assert again.model.config.num_clusters == first.model.config.num_clusters
    assert again.k_selection == first.k_selection


def test_train_clusterer_rejects_a_bad_k_request(tmp_path):
    from hf_textcluster import train_clusterer

    with pytest.raises(ValueError, match="'auto'"):
        train_clusterer("sccl", "tweet", str(tmp_path), num_clusters="many")
    with pytest.raises(ValueError, match="`k_range` / `k_criterion` apply to num_clusters='auto'"):
        train_clusterer("sccl", "tweet", str(tmp_path), num_clusters=5, k_range=(2, 10))
    with pytest.raises(ValueError, match="Unknown `k_criterion`"):
        train_clusterer("sccl", "tweet", str(tmp_path), num_clusters="auto", k_criterion="gap")


def test_cli_parses_auto_and_k_range():
    from hf_textcluster.cli import build_parser

    parser = build_parser()
    args, _ = parser.parse_known_args(
        [
            "train",
            "--method",
            "sccl",
            "--output-dir",
            "o",
            "--num-clusters",
            "auto",
            "--k-range",
            "2:60",
            "--k-criterion",
            "silhouette",
        ]
    )
    assert args.num_clusters == "auto" and args.k_range == (2, 60) and args.k_criterion == "silhouette"
    args, _ = parser.parse_known_args(["train", "--method", "sccl", "--output-dir", "o", "--num-clusters", "12"])
    assert args.num_clusters == 12 and args.k_range is None and args.k_criterion is None
    assert parser.parse_args(["evaluate", "--num-clusters", "AUTO", "--k-range", ":40"]).k_range == (None, 40)
    assert parser.parse_args(["evaluate", "--num-clusters", "auto", "--k-range", "5:"]).k_range == (5, None)
    assert parser.parse_args(["evaluate", "--num-clusters", "7"]).num_clusters == 7
    for bad in (
        ["train", "--method", "sccl", "--output-dir", "o", "--num-clusters", "lots"],
        ["evaluate", "--num-clusters", "auto", "--k-range", "2-60"],
        ["evaluate", "--num-clusters", "0"],
    ):
        with pytest.raises(SystemExit):
            parser.parse_args(bad)


def test_cli_auto_errors_before_reading_data(tmp_path, capsys):
    from hf_textcluster.cli import main

    assert main(["evaluate", "--baseline", "tfidf-kmeans", "--dataset", "tweet", "--num-clusters", "auto"]) == 2
    assert "works with --baseline embeddings-kmeans" in capsys.readouterr().err
    assert main(["evaluate", "--dataset", "tweet", "--k-range", "2:9"]) == 2
    assert "apply to --num-clusters auto" in capsys.readouterr().err
    assert (
        main(
            [
                "train",
                "--method",
                "sccl",
                "--dataset",
                "tweet",
                "--output-dir",
                str(tmp_path),
                "--num-clusters",
                "5",
                "--k-range",
                "2:9",
            ]
        )
        == 2
    )
    assert "apply to num_clusters='auto'" in capsys.readouterr().err


def test_cli_evaluate_embeddings_kmeans_auto_prints_k(tiny_encoder_dir, toy_corpus, tmp_path, capsys):
    from hf_textcluster.cli import main

    texts, labels = toy_corpus
    data = tmp_path / "labelled.csv"
    data.write_text("text,topic\n" + "\n".join(f"{t},{y}" for t, y in zip(texts, labels)))
    assert (
        main(
            [
                "evaluate",
                "--baseline",
                "embeddings-kmeans",
                "--input",
                str(data),
                "--label-column",
                "topic",
                "--encoder",
                str(tiny_encoder_dir),
                "--num-clusters",
                "auto",
                "--k-range",
                "2:5",
                "--k-criterion",
                "silhouette",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert re.search(r"chosen without labels by silhouette \(-?[0-9.]+\) among K in 2\.\.5", out), out
    assert "the labels have 3 classes" in out
    k = int(out.split("K=")[1].split(",")[0])
    assert 2 <= k <= 5


def test_cluster_count_request_is_parsed_and_checked_once():
    from hf_textcluster.choosing.auto_k import ClusterCountRequest

    request = ClusterCountRequest.parse("AUTO", k_range=(None, 40), k_criterion="silhouette")
    assert request.is_auto and request.k_range == (2, 40) and request.criterion == "silhouette"
    assert request.to_dict() == {"criterion": "silhouette", "k_range": [2, 40]}
    assert ClusterCountRequest.parse(request) is request
    fixed = ClusterCountRequest.parse(12)
    assert not fixed.is_auto and fixed.num_clusters == 12 and ClusterCountRequest.parse(None).num_clusters is None
    with pytest.raises(ValueError, match=r"`k_max` \(5\) is smaller than `k_min` \(10\)"):
        ClusterCountRequest.parse("auto", k_range=(10, 5))  # no data needed to refuse it
    with pytest.raises(ValueError, match="must be a pair"):
        ClusterCountRequest.parse("auto", k_range=(2, 5, 9))
    with pytest.raises(ValueError, match="'auto'"):
        ClusterCountRequest("many")
    with pytest.raises(ValueError, match="not smaller than the number of texts"):
        ClusterCountRequest.parse("auto", k_range=(2, 50)).check(30)
    with pytest.raises(ValueError, match="is fixed"):
        fixed.choose(np.eye(4))
    assert ClusterCountRequest.parse(" Auto ").is_auto and ClusterCountRequest.parse_k_range("5:") == (5, None)
    assert ClusterCountRequest.parse("12").num_clusters == 12  # the command line's text of K, parsed as in the library
    with pytest.raises(ValueError, match=r"`num_clusters` must be an integer >= 2 \(one cluster groups nothing"):
        ClusterCountRequest(1)  # refused when the request is made, before any text is read
    with pytest.raises(ValueError, match="larger than the number of distinct texts"):
        fixed.check(20, texts=["same text"] * 20)  # the one check of a request against the texts
    with pytest.raises(ValueError, match="K_MIN:K_MAX"):
        ClusterCountRequest.parse_k_range("2-60")


def test_baselines_take_a_cluster_count_request(tiny_encoder_dir, toy_corpus):
    from hf_textcluster.choosing.auto_k import ClusterCountRequest
    from hf_textcluster.runs.baselines import make_baseline

    texts, _ = toy_corpus
    with pytest.raises(ValueError, match="works with embeddings-kmeans or umap-kmeans, not tfidf-kmeans"):
        make_baseline("tfidf-kmeans", ClusterCountRequest("auto"))
    assert len(set(make_baseline("tfidf-kmeans", ClusterCountRequest(3)).fit_predict(texts))) == 3
    baseline = make_baseline(
        "embeddings-kmeans",
        ClusterCountRequest.parse("auto", k_range=(2, 5)),
        encoder=str(tiny_encoder_dir),
        show_progress_bar=False,
    )
    baseline.fit_predict(texts)
    assert 2 <= baseline.auto_k_.num_clusters <= 5 and baseline.auto_k_.k_max == 5


def test_alternatives_are_the_other_peaks_best_first_and_describe_says_them():
    from hf_textcluster.choosing.auto_k import AutoKResult

    scores = {2: 0.1, 3: 0.5, 4: 0.2, 5: 0.4, 6: 0.3, 7: 0.35, 8: 0.1}
    result = AutoKResult(3, "umap_silhouette", scores, 2, 8, 100, 100, 0.1)
    assert result.alternatives() == [5, 7] and result.alternatives(1) == [5]
    line = result.describe()
    assert line.startswith("K = 3, chosen without labels by umap_silhouette (0.500) among K in 2..8 (100 of 100 texts")
    assert "next best K = 5 (0.400), K = 7 (0.350)" in line
    assert result.to_dict()["alternatives"] == [5, 7]
    # a lower-is-better criterion's peaks are its valleys
    db = AutoKResult(4, "davies_bouldin", {2: 0.9, 3: 0.5, 4: 0.3, 5: 0.6, 6: 0.4, 7: 0.8}, 2, 7, 100, 100, 0.1)
    assert db.alternatives() == [6]


def test_the_default_reads_k_on_every_text_in_the_layouts_the_bertopic_way_clusters(monkeypatch):
    """umap_silhouette on a run's features: every row (no sample), UMAP laid out once for the K search and the
    BERTopic way's k-means at that K (one reusing_results block), and the K of well-separated groups found."""
    import umap

    from hf_textcluster.choosing.auto_k import ClusterCountRequest
    from hf_textcluster.editing.kmeans import fit_kmeans
    from hf_textcluster.reuse import reusing_results

    fits = []
    fit_transform = umap.UMAP.fit_transform
    monkeypatch.setattr(
        umap.UMAP, "fit_transform", lambda self, *a, **k: fits.append(1) or fit_transform(self, *a, **k)
    )
    x, y = blobs(5, per_cluster=60, seed=3)
    with reusing_results():
        result = ClusterCountRequest.parse("auto", k_range=(2, 12)).choose(x.astype(np.float32), random_state=0)
        drawn = len(fits)
        fit_kmeans(x.astype(np.float32), result.num_clusters, init="umap", random_state=0)
    assert result.criterion == DEFAULT_CRITERION == "umap_silhouette" and result.num_clusters == 5
    assert result.sample_size == result.num_texts == len(x) and set(result.scores) == set(range(2, 13))
    assert drawn == 3 and len(fits) == 3  # the BERTopic way's three layouts, drawn once for both


def test_a_cluster_is_split_where_it_holds_clear_groups_alone():
    """The layout's silhouette favours the coarsest split of nested groups: a cluster made of tight groups far apart
    is split at its best k (and a part of it again, two levels down), a cluster of one loose group, or of fewer than
    20 rows, is not."""
    from hf_textcluster.choosing.layout_k import SPLIT_MIN_TEXTS, split_clear_groups

    rng = np.random.default_rng(0)

    def group(centre, n, spread=0.05):
        return rng.normal(centre, spread, (n, 5))

    nested = [group([0, 0, 0, 0, 0], 40), group([0, 0, 0, 0, 2], 40)]  # one group of two tight halves, far apart
    points = np.concatenate([*nested, group([20, 0, 0, 0, 0], 80), group([40, 0, 0, 0, 0], 80, spread=1.0)])
    points = np.concatenate([points, group([0, 40, 0, 0, 0], SPLIT_MIN_TEXTS - 1)])
    labels = np.repeat([0, 0, 1, 2, 3], [40, 40, 80, 80, SPLIT_MIN_TEXTS - 1])  # 0: the nested group, 1: alone
    split = split_clear_groups(points, labels, random_state=0)
    assert len(np.unique(split)) == 5  # cluster 0 in two, the others kept
    assert len(np.unique(split[:80])) == 2 and len(np.unique(split[:40])) == len(np.unique(split[40:80])) == 1
    for rows in (slice(80, 160), slice(160, 240), slice(240, None)):
        assert len(np.unique(split[rows])) == 1 and not set(split[rows]) & set(split[:80])
    deeper = np.concatenate([group([0, 0, 0, 0, 0], 40), group([0, 0, 0, 2, 0], 40), group([100, 0, 0, 0, 0], 80)])
    assert len(np.unique(split_clear_groups(deeper, np.zeros(160, int), random_state=0))) == 3  # two levels


def test_the_split_clusters_are_the_bertopic_ways_partition_at_their_number_in_the_block():
    from hf_textcluster.choosing.auto_k import AutoKResult
    from hf_textcluster.choosing.layout_k import split_layout_clusters
    from hf_textcluster.editing.kmeans import fit_kmeans
    from hf_textcluster.reuse import reusing_results

    x, _ = blobs(4, per_cluster=40, seed=1)
    x = x.astype(np.float32)
    rng = np.random.default_rng(0)
    centres = ([0, 0, 0, 0, 0], [0, 0, 0, 0, 2], [20, 0, 0, 0, 0], [20, 0, 0, 0, 2])  # two clusters of two halves
    layout = np.concatenate([rng.normal(c, 0.05, (40, 5)) for c in centres])[rng.permutation(160)]
    labels = (layout[:, 0] > 10).astype(int)  # not the groups of `x`: served only because they were kept
    with reusing_results():
        found = fit_kmeans(x, 4, init="umap", random_state=0).groups_  # kept first: replaced by what is kept next
        groups = split_layout_clusters(x, labels, layout, k_max=10, random_state=0)
        served = fit_kmeans(x, 4, init="umap", random_state=0).groups_
        assert split_layout_clusters(x, labels, layout, k_max=3, random_state=0) is None  # more than k_max
        assert split_layout_clusters(x, groups, layout, k_max=10, random_state=0) is None  # nothing splits
    assert len(np.unique(groups)) == 4
    np.testing.assert_array_equal(served, groups)
    assert not np.array_equal(found, groups)
    split_layout_clusters(x, labels, layout, k_max=10, random_state=0)  # outside a block: nothing kept
    assert not np.array_equal(fit_kmeans(x, 4, init="umap", random_state=0).groups_, groups)
    scores = {2: 0.9, 3: 0.5, 4: 0.6, 5: 0.4}
    result = AutoKResult(7, "umap_silhouette", scores, 2, 5, 100, 100, 0.1, split_from=2)
    said = result.describe()  # what train prints and logs
    assert said.startswith("K = 7, chosen without labels by umap_silhouette (0.900) at K = 2, then split where")
    assert "next best K = 4 (0.600)" in said and str(result) == said
    assert (
        result.to_dict()["split_from"] == 2
        and "split_from" not in AutoKResult(2, "umap_silhouette", scores, 2, 5, 100, 100, 0.1).to_dict()
    )
