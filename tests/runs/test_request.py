"""A training run's options as a user passes them: each bad one is a one-line error naming it, from
``train_clusterer`` and from ``hf-textcluster train``, before any data is read."""

from __future__ import annotations

import dataclasses

import pytest

from hf_textcluster import train_clusterer
from hf_textcluster.cli import main
from hf_textcluster.runs.request import TrainingRequest

# (method, options, error, what the message says): each fails before the benchmark, which does not exist, is read
BAD_OPTIONS = [
    ("sccl", {"num_cluster": 3}, TypeError, "unknown training option 'num_cluster'; did you mean 'num_clusters'?"),
    ("sccl", {"seed": -1}, ValueError, "`seed` must be an integer >= 0, got -1."),
    ("sccl", {"test_size": 1.5}, ValueError, "`test_size` must be"),
    ("sccl", {"augmentation": "typos"}, ValueError, "`augmentation` must be one of recipe,"),
    ("sccl", {"num_clusters": "many"}, ValueError, "`num_clusters` must be a whole number of clusters or 'auto'"),
    ("sccl", {"num_clusters": 1}, ValueError, "`num_clusters` must be an integer >= 2 (one cluster groups nothing"),
    ("sccl", {"num_clusters": 5, "k_range": (2, 9)}, ValueError, "apply to num_clusters='auto'"),
    ("sccl", {"num_clusters": "auto", "k_range": (9, 2)}, ValueError, "`k_max` (2) is smaller than `k_min` (9)"),
    ("sccl", {"keep_signals": True}, ValueError, "`keep_signals` (--keep-signals), `time_budget`"),
    ("auto", {"config_overrides": {"eta": 5}}, ValueError, "`config_overrides` (--config) configures one method"),
    ("auto", {"time_budget": 0}, ValueError, "`time_budget` must be a number > 0"),
    ("kmeans", {}, ValueError, "`method` must be one of auto, "),
]


@pytest.mark.parametrize("method,options,error,message", BAD_OPTIONS)
def test_a_bad_option_is_one_line_naming_it_before_any_data_is_read(method, options, error, message, tmp_path):
    with pytest.raises(error) as raised:
        train_clusterer(method, "no-such-corpus", str(tmp_path / "run"), data_dir=str(tmp_path), **options)
    assert message in str(raised.value) and "\n" not in str(raised.value)
    assert not (tmp_path / "run").exists()


# (options on the command line, the one line `train` prints): the request's checks, said with the option's name
CLI_ERRORS = [
    (["--seed", "-1"], "error: --seed must be an integer >= 0, got -1.\n"),
    (["--time-budget", "0"], "error: --time-budget must be a number > 0 or None, got 0.0.\n"),
    (["--method", "sccl", "--keep-signals"], "error: `keep_signals` (--keep-signals), `time_budget`"),
    (["--config", "eta=5"], "error: `config_overrides` (--config) configures one method"),
    (["--num-clusters", "5", "--k-range", "2:9"], "error: --k-range / --k-criterion apply to num_clusters='auto'"),
]


@pytest.mark.parametrize("argv,expected", CLI_ERRORS)
def test_a_bad_option_of_train_is_one_line_before_the_input_is_read(argv, expected, tmp_path, capsys):
    missing = tmp_path / "not-written-yet.csv"  # were it read first, the error would be about this file
    code = main(["train", "--input", str(missing), "--output-dir", str(tmp_path / "run"), *argv])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(expected) and err.count("\n") == 1


def test_the_count_of_clusters_is_one_value_every_copy_shares():
    """``num_clusters`` with its range and criterion become one ClusterCountRequest; ``auto``'s copies per signal
    (``dataclasses.replace``) keep it as it is, range included, without its parts given again."""
    request = TrainingRequest(
        "stackoverflow", "runs/so", num_clusters="AUTO", k_range=(3, None), k_criterion="silhouette"
    )
    count = request.num_clusters
    assert count.is_auto and count.k_range == (3, None) and count.criterion == "silhouette"
    signal = dataclasses.replace(request, method="sccl", output_dir="runs/so/signals/contrastive", seed=1)
    assert signal.num_clusters is count
    with pytest.raises(ValueError, match="inside the ClusterCountRequest"):
        dataclasses.replace(request, k_range=(2, 9))


def test_train_names_the_texts_it_needs(tmp_path, capsys):
    assert main(["train", "--output-dir", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err == (
        "error: Pass --dataset (a benchmark corpus) or --input (your file: csv, jsonl, parquet or txt).\n"
    )
