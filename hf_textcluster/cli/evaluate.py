"""``hf-textcluster evaluate``: ACC / NMI / ARI of a baseline or a trained model on labelled texts."""

import argparse
import time

from ..choosing.auto_k import ClusterCountRequest
from ..data import load_benchmark, load_text_file
from ..evaluation.metrics import clustering_scores
from ..runs.baselines import BASELINES, EMBEDDING_BASELINES, make_baseline
from ..runs.candidate_file import read_candidates, texts_match
from ..runs.folder import load_clusterer
from ..runs.saving import SERVED_KEY
from ..training.evaluation import evaluate_clusterer
from ._args import (
    ENCODER_HELP,
    add_data_args,
    add_device_args,
    add_k_selection_args,
    add_text_column_arg,
    encoding_on,
    format_scores,
    num_clusters_or_auto,
    print_kmeans_scores,
)

HELP = "ACC / NMI / ARI of a baseline or a trained model on a benchmark or your own labelled file."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--baseline",
        default="embeddings-kmeans",
        choices=BASELINES,
        help="The baseline scored when no --model is given: k-means on bag-of-words, TF-IDF or --encoder embeddings, "
        "or umap-kmeans: the BERTopic way (UMAP -> k-means on --encoder embeddings, as train's pretrained/umap_kmeans "
        "partition; needs umap-learn).",
    )
    parser.add_argument("--model", help="Evaluate a trained model (a local folder or a Hub id) instead of a baseline.")
    parser.add_argument("--dataset", help="A benchmark corpus name (or use --input).")
    parser.add_argument("--input", help="Your own labelled texts: csv / jsonl / parquet (with --label-column).")
    add_text_column_arg(parser)
    parser.add_argument("--label-column", help="Column of --input holding the known classes (required with --input).")
    parser.add_argument("--encoder", help=ENCODER_HELP)
    parser.add_argument(
        "--num-clusters",
        type=num_clusters_or_auto,
        metavar="K|auto",
        help="K of a baseline (default: the number of classes); 'auto' (embeddings-kmeans, umap-kmeans): "
        "chosen from the embeddings, without the labels.",
    )
    add_k_selection_args(parser)
    add_device_args(parser)
    parser.add_argument("--seed", type=int, default=0, help="Seed of k-means (and of the K search).")
    add_data_args(parser)


def _evaluation_dataset(args: argparse.Namespace):
    """The labelled texts to score on: a benchmark (``--dataset``) or the user's file (``--input`` +
    ``--label-column``)."""
    if bool(args.dataset) == bool(args.input):
        raise ValueError(
            "Pass exactly one of --dataset <benchmark> or --input <your labelled file> (csv / jsonl / "
            "parquet), " + ("not both." if args.dataset else "to say which texts to score on.")
        )
    if args.dataset:
        if args.label_column or args.text_column != "text":
            raise ValueError("--text-column / --label-column apply to --input (your file), not to --dataset.")
        return load_benchmark(args.dataset, data_dir=args.data_dir), args.dataset
    if not args.label_column:
        raise ValueError(
            f"evaluate --input needs --label-column <the column of {args.input} with the known classes>: "
            "ACC / NMI compare the clusters with those labels (to cluster unlabelled texts, use predict)."
        )
    dataset = load_text_file(args.input, text_column=args.text_column, label_column=args.label_column)
    return dataset, args.input


def run(args: argparse.Namespace, extra: list[str]) -> int:
    auto = args.num_clusters == "auto"  # a bad combination is refused before any data is read
    if auto and (args.model or args.baseline not in EMBEDDING_BASELINES):
        raise ValueError(
            "--num-clusters auto chooses K from encoder embeddings: it works with --baseline "
            "embeddings-kmeans or umap-kmeans"
            + (" (a trained model's K is fixed: drop --num-clusters)." if args.model else f", not {args.baseline}.")
        )
    if not auto and (args.k_range or args.k_criterion):
        raise ValueError("--k-range / --k-criterion apply to --num-clusters auto.")
    dataset, source = _evaluation_dataset(args)
    texts, labels = dataset["text"], dataset["label"]
    num_classes = dataset.features["label"].num_classes
    start = time.perf_counter()
    with encoding_on(args) as device:
        if args.model:
            model = load_clusterer(args.model).to(device)
            num_clusters, name = model.config.num_clusters, args.model
            if args.num_clusters and args.num_clusters != num_clusters:
                raise ValueError(
                    f"--num-clusters {args.num_clusters}: the model {args.model} has {num_clusters} clusters (fixed "
                    "when it was trained); drop --num-clusters."
                )
            metrics = evaluate_clusterer(model, texts, labels, random_state=args.seed, show_progress_bar=True)
        else:
            num_clusters = num_classes if args.num_clusters is None else args.num_clusters
            request = ClusterCountRequest.parse(num_clusters, args.k_range, args.k_criterion)
            kwargs = {"device": device, "encoder": args.encoder} if args.baseline in EMBEDDING_BASELINES else {}
            baseline = make_baseline(args.baseline, request, random_state=args.seed, **kwargs)
            try:
                clusters = baseline.fit_predict(texts)
            except ValueError as err:  # which file and column the texts came from
                where = (
                    f"--dataset {args.dataset}"
                    if args.dataset
                    else f"--input {args.input} (column {args.text_column!r})"
                )
                raise ValueError(f"{where}: {err}") from None
            metrics = clustering_scores(labels, clusters)
            num_clusters = baseline.auto_k_.num_clusters if auto else request.num_clusters
            name = args.baseline
    seconds = time.perf_counter() - start
    print(f"{name} on {source} (N={len(texts)}, K={num_clusters}, {num_classes} classes, seed={args.seed})")
    if auto:
        print(baseline.auto_k_.describe() + f"; the labels have {num_classes} classes")
    print(f"{format_scores(metrics, ('acc', 'nmi', 'ari', 'purity'))}  time {seconds:.1f}s")
    print_kmeans_scores(metrics)
    if args.model:
        _score_kept_candidates(args.model, texts, labels)
    return 0


def _score_kept_candidates(model_dir: str, texts, labels) -> None:
    """The candidates a ``train --method auto`` run kept beside the model, each scored, when ``texts`` are the texts
    they partition (its training texts)."""
    kept = read_candidates(model_dir)
    if kept is None:
        return
    partitions, metadata = kept
    if not texts_match(texts, metadata):
        print(
            f"{model_dir} keeps {len(partitions) - 1} candidate partitions of its {metadata.get('num_train_texts')} "
            "training texts, not of these: score them on its training texts (and their labels)."
        )
        return
    served = partitions.pop(SERVED_KEY, None)
    print(f"The candidates it kept ({len(partitions)}), on these texts (its training texts):")
    width = max(len(name) for name in partitions)
    if served is not None:
        partitions["(served)"] = served
    for name, predicted in partitions.items():
        print(f"  {name:{width}s} {format_scores(clustering_scores(labels, predicted))}")
