"""``make demo``: train a method briefly on a StackOverflow sample with the pip-shipped MiniLM and show it beside
plain k-means on the same embeddings (the run's own k-means initialisation). Its size follows the precision the CPU
computes in (:func:`demo_size`): where bf16 is native (or on a GPU) 4,000 texts and 60 steps; a CPU without native bf16
computes in fp32, several times slower, and gets 2,000 texts and 30 steps, so that the demo stays within a few minutes
on either. The corpus is downloaded once from its public source unless ``data_dir`` (or ``$HF_TEXTCLUSTER_DATA_DIR``)
names a folder holding ``stackoverflow.csv``."""

from __future__ import annotations

import os
import time
from collections import Counter
from typing import Any

import numpy as np

from ..data import AUGMENTATION_FAMILIES, load_benchmark
from ..evaluation.metrics import clustering_scores
from ..models import get_method
from .report import model_outputs, render_report
from .report_data import cluster_summaries

DEMO_DATASET = "stackoverflow"
# (texts, steps) where bf16 is native or on a GPU, and in fp32 (a CPU without native bf16: each pass costs several times
# more, so the demo does half the work twice over: half the texts to encode, half the steps)
DEMO_SIZES = {"bf16": (4000, 60), "fp32": (2000, 30)}
# The report's map projects a sample (UMAP's cost grows with the points); its tables count every text.
DEMO_MAP_SAMPLE = 2000
DEMO_SHOWN = 5


def _row(name: str, scores: dict, seconds: float | None = None) -> str:
    took = f"   ({seconds:.0f}s)" if seconds is not None else ""
    return f"  {name:<40} " + "   ".join(f"{m.upper()} {100 * scores[m]:5.1f}" for m in ("acc", "nmi", "ari")) + took


def run_demo(
    method: str = "sccl",
    data_dir: str | None = None,
    output_dir: str | None = None,
    max_steps: int | None = None,
    num_texts: int | None = None,
    seed: int = 0,
    overwrite: bool = False,
) -> int:
    """Train ``method`` briefly on a StackOverflow sample and print how it compares with k-means (``make demo``).

    Prints the scores against the labels (used only to score) of k-means on the pretrained embeddings, of what the
    trained model serves and of k-means on its embeddings; then the clusters the model is surest of; and writes the
    model and its HTML report (``report.html``) into ``output_dir``.

    Args:
        method: The method to train (a name of the registry, e.g. ``"sccl"``).
        data_dir: Where the corpus is (default: the builder's download).
        output_dir: Where the trained model goes (default: ``runs/demo-<method>-stackoverflow``, replaced).
        max_steps: Training steps (default: the demo's).
        num_texts: Texts sampled from the corpus (default: the demo's).
        seed: Seed of the sample, the training and k-means.
        overwrite: Replace a trained model already in a given ``output_dir`` (the default folder holds the last
            demo and is always replaced).

    Returns:
        0 (the command's exit status).

    Raises:
        ValueError: an unknown ``method``.
        FileExistsError: ``output_dir`` holds a trained model and ``overwrite`` is False.

    Example:
        >>> run_demo("sccl", max_steps=20, num_texts=1000)  # doctest: +SKIP
        0
    """
    from sklearn.cluster import KMeans

    from ..runs.api import train_clusterer
    from ..runs.folder import RunFolder, record_metrics
    from ..runs.recipes import load_recipe

    total_start = time.perf_counter()
    spec = get_method(method)
    precision, (sized_texts, sized_steps) = demo_size()
    steps = max_steps or sized_steps
    if output_dir:  # checked before any work; the default folder holds the last demo
        RunFolder(output_dir).check_may_replace_model(overwrite=overwrite, command="demo")
    output_dir = output_dir or f"runs/demo-{method}-{DEMO_DATASET}"
    # a seeded sample of the corpus, with the augmented views the method's CPU recipe asks for
    family = load_recipe(method, "cpu", DEMO_DATASET).get("augmentation") if spec.uses_augmented_views else None
    augmentation = family if family in AUGMENTATION_FAMILIES else None
    dataset = load_benchmark(DEMO_DATASET, data_dir=data_dir, augmentation=augmentation)
    dataset = dataset.shuffle(seed=seed).select(range(min(num_texts or sized_texts, len(dataset))))
    texts, labels = list(dataset["text"]), np.asarray(dataset["label"])
    label_names = dataset.features["label"].names
    print(
        f"Clustering {len(texts):,} StackOverflow question titles (a random sample of the corpus) into "
        f"{len(label_names)} clusters with {spec.display_name}; labels are used only to score."
    )
    if not (max_steps or num_texts):
        other = "fp32" if precision == "bf16" else "bf16"
        print(
            f"Sized for this machine, which computes in {precision}: {sized_texts:,} texts and {sized_steps} steps ("
            f"{DEMO_SIZES[other][0]:,} and {DEMO_SIZES[other][1]} in {other}); --num-texts and --max-steps change it.\n"
        )

    start = time.perf_counter()
    result: Any = train_clusterer(
        method,
        dataset,
        output_dir,
        recipe="cpu",
        seed=seed,
        training_overrides={"max_steps": steps, "save_strategy": "no", "logging_steps": 10},
        resume=False,
        evaluate=False,
        overwrite=True,  # checked above
    )
    model, trainer = result.model, result.trainer
    train_seconds = time.perf_counter() - start

    start = time.perf_counter()
    embeddings = model.embed(texts, show_progress_bar=False, precision=trainer.precision)
    outputs: dict[str, Any] = model_outputs(model, embeddings)
    kmeans_trained = KMeans(len(label_names), n_init=10, random_state=seed).fit_predict(embeddings)
    eval_seconds = time.perf_counter() - start
    served, served_clusters = _served_partition(model, trainer), outputs["probabilities"].argmax(-1)
    served_scores, kmeans_scores = clustering_scores(labels, served_clusters), clustering_scores(labels, kmeans_trained)
    # the model's card shows what the demo measured (labels score only)
    record_metrics(output_dir, {**served_scores, **{f"kmeans_{k}": v for k, v in kmeans_scores.items()}})

    print(f"\nResults on the {len(texts):,} texts (higher is better):")
    print(_row("MiniLM embeddings + k-means (before)", clustering_scores(labels, trainer.initial_kmeans_labels)))
    trained = f"{spec.display_name} ({steps} steps x {trainer.args.per_device_train_batch_size}): served ({served})"
    print(_row(trained, served_scores, train_seconds))
    print(_row(f"{spec.display_name}: k-means on its embeddings", kmeans_scores, eval_seconds))

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
        title=f"{spec.display_name} on {len(texts):,} StackOverflow titles (demo)",
        **outputs,
    )
    report_seconds = time.perf_counter() - start

    # the clusters the model is surest of: keywords, the label most of their texts have, their typical members
    min_size = min_shown_size(len(texts), model.config.num_clusters)
    shown = most_confident_clusters(summaries, min_size, DEMO_SHOWN)
    what = "calibrated confidence" if model.is_calibrated else "top probability"
    print(
        f"\nWhat the model serves by default ({served}): {len(summaries)} clusters. The {len(shown)} it is most "
        f"confident about (mean {what}, clusters of >= {min_size} texts), with their keywords, the true label most of "
        "their texts have (scoring only) and their three most typical members:"
    )
    for s in shown:
        majority, count = Counter(labels[served_clusters == s["cluster"]].tolist()).most_common(1)[0]
        print(
            f"\n  cluster {s['cluster']} [{', '.join(s['keywords'][:5])}]: {s['size']} texts, mean confidence "
            f"{s['mean_confidence']:.2f}, {100 * count / s['size']:.0f}% '{label_names[majority]}'"
        )
        for i in s["typical"]:
            print(f"    - {texts[i]}")
    print(
        f"\nThe report of every cluster (map, keywords, typical members, outliers, confusion against the labels; "
        f"{report_seconds:.0f}s): {os.path.abspath(report_path)}"
    )
    print(f"Precision: {trainer.precision_description()}. Demo total: {time.perf_counter() - total_start:.0f}s.")
    print(
        f"The trained model is in {output_dir}; try:\n  hf-textcluster predict --model {output_dir} --input "
        f"my_texts.txt\n  hf-textcluster report --model {output_dir} --input my_texts.txt --output my_report.html"
    )
    return 0


def demo_size() -> tuple[str, tuple[int, int]]:
    """``(precision, (texts, steps))``: the demo's size for the precision training takes here (``"bf16"`` where it is
    native or on a GPU, else ``"fp32"``).

    Example:
        >>> demo_size()  # doctest: +SKIP
        ('bf16', (4000, 60))
    """
    import torch

    from ..modeling.precision import native_bf16

    precision = "bf16" if torch.cuda.is_available() or native_bf16("cpu") else "fp32"
    return precision, DEMO_SIZES[precision]


def min_shown_size(num_texts: int, num_clusters: int) -> int:
    """The smallest cluster the demo shows: a quarter of an even share, at least 10 texts (a handful of texts is
    trivially confident and says little)."""
    return max(10, num_texts // (4 * num_clusters))


def most_confident_clusters(summaries: list[dict], min_size: int, count: int = DEMO_SHOWN) -> list[dict]:
    """The ``count`` clusters the model itself is surest of, without labels: highest mean confidence among the
    ``cluster_summaries`` of at least ``min_size`` texts (all of them when none is that large)."""
    large = [s for s in summaries if s["size"] >= min_size] or list(summaries)
    return sorted(large, key=lambda s: -s["mean_confidence"])[:count]


def _served_partition(model, trainer) -> str:
    """The partition the trained model serves by default: the trainer's label-free choice when it made one."""
    if choice := getattr(trainer, "serving_choice", None):
        return str(choice["served"])
    return str(getattr(model.config, "served_partition", None) or "head")
