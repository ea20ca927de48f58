"""``make demo``: the default of ``hf-textcluster train`` (``method="auto"``) on the 2,000 StackOverflow titles shipped
in the package (:func:`~hf_textcluster.data.load_sample`), beside the two ways to cluster them without training: the
BERTopic way (UMAP -> k-means on the pretrained encoder's embeddings) and plain k-means on the same embeddings. It
needs no download, no data folder and no environment variable. The default encodes the texts once and trains on those
cached embeddings, so all 2,000 texts take a minute or two on 2 CPU cores."""

from __future__ import annotations

import os
import time
from collections import Counter
from typing import Any

import numpy as np

from ..choosing.candidate_choice import BERTOPIC_WAY
from ..choosing.criteria import PRETRAINED
from ..data import load_sample
from ..evaluation.metrics import clustering_scores
from .report import model_outputs, render_report
from .report_data import cluster_summaries

DEMO_OUTPUT_DIR = "runs/demo"
# fewer texts than this say little about 20 clusters (and UMAP needs more than 16)
DEMO_MIN_TEXTS = 100
# The report's map projects a sample (UMAP's cost grows with the points); its tables count every text.
DEMO_MAP_SAMPLE = 2000
DEMO_SHOWN = 5
# the two ways without training, as the run names its candidates, and how the demo names them
BASELINES = {BERTOPIC_WAY: "the BERTopic way: UMAP -> k-means", f"{PRETRAINED}/kmeans": "k-means"}


def _rows(rows: list[tuple[str, dict, float]]) -> list[str]:
    """One line per way of clustering: its name, ACC / NMI / ARI in percent and its wall time."""
    width = max(len(name) for name, _, _ in rows)
    return [
        f"  {name:<{width}}   "
        + "   ".join(f"{m.upper()} {100 * scores[m]:5.1f}" for m in ("acc", "nmi", "ari"))
        + f"   ({seconds:.0f}s)"
        for name, scores, seconds in rows
    ]


def run_demo(
    output_dir: str | None = None,
    num_texts: int | None = None,
    seed: int = 0,
    overwrite: bool = False,
) -> int:
    """Train the default (``Clusterer().fit(...)``: ``method="auto"``) on the shipped StackOverflow sample and print
    how what it serves compares with the BERTopic way and with k-means on the pretrained encoder (``make demo``).

    Prints the scores against the tags (they give K and score; never trained on) of the three, each with the wall
    time a user meets (the two without training: loading the encoder and encoding the texts included; the default:
    its whole run, the encoding pass and the two partitions it shares with them included, as its k-means start and its
    own candidates);
    then the clusters the model is surest of; and writes the model and its HTML report (``report.html``) into
    ``output_dir``.

    Args:
        output_dir: Where the trained model goes (default: ``runs/demo``, replaced by each demo).
        num_texts: Texts of the sample clustered (default: all 2,000).
        seed: Seed of the sample's order, the training, k-means and UMAP.
        overwrite: Replace a trained model already in a given ``output_dir``.

    Returns:
        0 (the command's exit status).

    Raises:
        ValueError: ``num_texts`` below :data:`DEMO_MIN_TEXTS`.
        FileExistsError: a given ``output_dir`` holds a trained model and ``overwrite`` is False.

    Example:
        >>> run_demo(num_texts=1000)  # doctest: +SKIP
        0
    """
    from ..reuse import embed, reusing_results
    from ..runs.clusterer import Clusterer
    from ..runs.folder import RunFolder, record_metrics

    if num_texts is not None and num_texts < DEMO_MIN_TEXTS:
        raise ValueError(f"`num_texts` (--train-sample) must be at least {DEMO_MIN_TEXTS}; got {num_texts}.")
    total_start = time.perf_counter()
    if output_dir:  # checked before any work; the default folder holds the last demo
        RunFolder(output_dir).check_may_replace_model(overwrite=overwrite, command="demo")
    output_dir = output_dir or DEMO_OUTPUT_DIR
    sample = load_sample()
    dataset = sample.shuffle(seed=seed).select(range(min(num_texts or len(sample), len(sample))))
    label_names = dataset.features["label"].names
    print(
        f"Clustering {len(dataset):,} StackOverflow question titles (shipped in the package: "
        f"hf_textcluster.data.load_sample) into {len(label_names)} clusters with the default of `hf-textcluster "
        "train`: the BERTopic way saved first, then SCAN trained on the cached embeddings, one partition served by "
        "a label-free choice that keeps the BERTopic way unless every held-out view prefers another. The tags give "
        "the number of clusters and score them; they are never trained on.\n"
    )

    # One scope: the run reuses the baselines' encoding pass, k-means and UMAP k-means (its k-means start and its
    # pretrained candidates), and the served model's embeddings of the texts (its candidates') for the report.
    with reusing_results():
        texts = list(dataset["text"])
        baselines, shared_seconds = _pretrained_baselines(texts, len(label_names), seed)
        start = time.perf_counter()
        clusterer = Clusterer(seed=seed, training_overrides={"save_strategy": "no"}, resume=False, evaluate=False)
        result: Any = clusterer.fit(dataset, output_dir, overwrite=True).training_result_  # overwrite: checked above
        run_seconds = shared_seconds + time.perf_counter() - start
        model, trainer = result.model, result.trainer
        texts, labels = list(result.train_dataset["text"]), np.asarray(result.train_dataset["label"])
        embeddings = embed(model, texts, show_progress_bar=False, **trainer.encode_options)
    outputs: dict[str, Any] = model_outputs(model, embeddings)
    served = result.auto["choice"]["served"]
    served_scores = clustering_scores(labels, result.served_labels)
    record_metrics(output_dir, served_scores)  # the model's card shows what the demo measured (labels score only)

    # the run's own candidates where it made them (the same partitions, as the run would serve them)
    rows = [
        (f"{BASELINES[name]} on MiniLM", clustering_scores(labels, result.candidates.get(name, partition)), seconds)
        for name, (partition, seconds) in baselines.items()
    ]
    rows.append((f"the default `train`: serves {served}", served_scores, run_seconds))
    print(f"\nResults on the {len(texts):,} texts (higher is better; wall time on this machine):")
    print("\n".join(_rows(rows)))

    start = time.perf_counter()
    summaries = cluster_summaries(texts, **outputs)
    report_path = render_report(
        texts,
        embeddings=embeddings,
        output=os.path.join(output_dir, "report.html"),
        labels=labels,
        label_names=label_names,
        keywords={s["cluster"]: s["keywords"] for s in summaries},  # c-TF-IDF once, for the report too
        calibrated=model.is_calibrated,
        sample_size=DEMO_MAP_SAMPLE,
        random_state=seed,
        title=f"The default on {len(texts):,} StackOverflow titles (demo)",
        **outputs,
    )
    report_seconds = time.perf_counter() - start

    # the clusters the model is surest of: keywords, the tag most of their texts have, their typical members
    min_size = min_shown_size(len(texts), model.config.num_clusters)
    shown = most_confident_clusters(summaries, min_size, DEMO_SHOWN)
    what = "calibrated confidence" if model.is_calibrated else "top probability"
    print(
        f"\nWhat the model serves ({served}): {len(summaries)} clusters. The {len(shown)} it is most confident about "
        f"(mean {what}, clusters of >= {min_size} texts), with their keywords, the tag most of their texts have "
        "(scoring only) and their three most typical members:"
    )
    served_clusters = outputs["probabilities"].argmax(-1)
    for s in shown:
        majority, count = Counter(labels[served_clusters == s["cluster"]].tolist()).most_common(1)[0]
        print(
            f"\n  cluster {s['cluster']} [{', '.join(s['keywords'][:5])}]: {s['size']} texts, mean confidence "
            f"{s['mean_confidence']:.2f}, {100 * count / s['size']:.0f}% '{label_names[majority]}'"
        )
        for i in s["typical"]:
            print(f"    - {texts[i]}")
    print(
        f"\nThe report of every cluster (map, keywords, typical members, outliers, confusion against the tags; "
        f"{report_seconds:.0f}s): {os.path.abspath(report_path)}"
    )
    print(f"Precision: {trainer.precision_description()}. Demo total: {time.perf_counter() - total_start:.0f}s.")
    print(
        f"The trained model is in {output_dir}; try:\n  hf-textcluster predict --model {output_dir} --input "
        f"my_texts.txt\n  hf-textcluster report --model {output_dir} --input my_texts.txt --output my_report.html"
    )
    return 0


def _pretrained_baselines(texts: list[str], num_clusters: int, seed: int) -> tuple[dict, float]:
    """k-means and the BERTopic way on the pretrained encoder's embeddings, as the run makes its pretrained candidates
    (the encoder pooled and cut as its first signal's model; the same seed): ``({name: (partition, seconds)},
    seconds they share)``, each timed as a user meets it (loading the encoder and encoding the texts included)."""
    import torch

    from ..choosing.serving import partition_features
    from ..editing.kmeans import fit_kmeans
    from ..modeling.modeling_utils import TextClusteringPreTrainedModel
    from ..models.building import from_encoder_pretrained
    from ..reuse import embed
    from ..runs.cluster_count import EMBEDDING_CONFIG_KEYS
    from ..runs.recipes import load_recipe
    from ..runs.signals import SIGNALS

    start = time.perf_counter()
    config = load_recipe(next(iter(SIGNALS.values())).method, "cpu")["config"]
    encoder = from_encoder_pretrained(
        TextClusteringPreTrainedModel,
        None,
        num_clusters=num_clusters,
        **{k: config[k] for k in EMBEDDING_CONFIG_KEYS if k in config},
    ).to("cuda" if torch.cuda.is_available() else "cpu")
    features = partition_features(encoder, embed(encoder, texts, show_progress_bar=False))
    encoded = time.perf_counter() - start
    baselines, shared = {}, encoded
    for name, init in ((BERTOPIC_WAY, "umap"), (f"{PRETRAINED}/kmeans", "k-means++")):
        start = time.perf_counter()
        fitted = fit_kmeans(features, num_clusters, random_state=seed, init=init)
        partition = np.asarray(getattr(fitted, "groups_", fitted.labels_))
        seconds = time.perf_counter() - start
        baselines[name], shared = (partition, encoded + seconds), shared + seconds
    return baselines, shared


def min_shown_size(num_texts: int, num_clusters: int) -> int:
    """The smallest cluster the demo shows: a quarter of an even share, at least 10 texts (a handful of texts is
    trivially confident and says little)."""
    return max(10, num_texts // (4 * num_clusters))


def most_confident_clusters(summaries: list[dict], min_size: int, count: int = DEMO_SHOWN) -> list[dict]:
    """The ``count`` clusters the model itself is surest of, without labels: highest mean confidence among the
    ``cluster_summaries`` of at least ``min_size`` texts (all of them when none is that large)."""
    large = [s for s in summaries if s["size"] >= min_size] or list(summaries)
    return sorted(large, key=lambda s: -s["mean_confidence"])[:count]
