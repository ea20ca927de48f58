"""``hf-textcluster train``: train a clusterer on a benchmark or on your own file."""

from __future__ import annotations

import argparse
import json
import os

from transformers import HfArgumentParser

from ..data import load_text_file
from ..modeling.precision import PRECISION_ENV, PRECISIONS, check_precision
from ..models import METHODS, get_method
from ..runs.api import train_clusterer
from ..runs.train import AUGMENTATIONS
from ..training.arguments import ClusteringTrainingArguments
from ._args import (
    add_data_args,
    add_k_selection_args,
    cluster_count_request,
    count_or_fraction,
    describe_k_selection,
    format_scores,
    num_clusters_or_auto,
    print_kmeans_scores,
)
from ._train_summary import summary
from ._trainer_flags import add_trainer_flags, check_pass_through, trainer_flags

HELP = "Train a clusterer (Trainer options and any other TrainingArguments --flag pass through)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # The method, what it trains on (a benchmark corpus or the user's file) and where the run goes.
    parser.add_argument(
        "--method",
        default="auto",
        choices=["auto", *sorted(METHODS)],
        help="auto (default): SCCL and DEC self-training, every partition of both, the pretrained encoder's and "
        "their consensus, serving the one a label-free criterion chooses (about twice one method's time); or one "
        "paper's method.",
    )
    parser.add_argument("--dataset", help="A benchmark corpus name (or use --input).")
    parser.add_argument("--input", help="Your own texts: csv / jsonl / parquet / txt.")
    parser.add_argument(
        "--text-column", default="text", help="Column of --input holding the texts (csv, jsonl, parquet)."
    )
    parser.add_argument(
        "--label-column", help="Known classes of your file: only scored against (ACC / NMI), never trained on."
    )
    parser.add_argument(
        "--output-dir",
        required=True,
        help="Where checkpoints, the trained model and training_run.json go (an interrupted run resumes there).",
    )
    # The model trained: encoder, recipe, views, K, seed and config overrides.
    parser.add_argument("--encoder", help="Hub id or local path (default: the pip-shipped all-MiniLM-L6-v2).")
    parser.add_argument("--recipe", default="cpu", help="Recipe variant: 'cpu' (default) or 'paper'.")
    parser.add_argument(
        "--augmentation",
        default="recipe",
        choices=["recipe", *AUGMENTATIONS],
        help="The two augmented views of each text that SCCL, DEC-CRL and AECL train on. 'recipe' (default): the "
        "recipe's precomputed views, which exist only for the benchmark corpora: with --input they become "
        "dropout-only views ('virtual': both views are the text itself; a line says so); name an augmenter "
        "(word_deletion, word_swap, wordnet, contextual) for text views of your file.",
    )
    parser.add_argument(
        "--num-clusters",
        type=num_clusters_or_auto,
        metavar="K|auto",
        help="K, or 'auto' to choose it from the embeddings of the training texts (see --k-range). Required with "
        "--input unless --label-column is given (then the default is its number of classes); a benchmark "
        "--dataset defaults to its number of classes.",
    )
    add_k_selection_args(parser)
    parser.add_argument(
        "--seed", type=int, default=0, help="Seed of the model's initialisation, k-means and the views."
    )
    parser.add_argument(
        "--config",
        action="append",
        metavar="KEY=VALUE",
        help="Model config override of one method, e.g. --method sccl --config eta=5 (refused with --method auto, "
        "which trains two methods, each with its own configuration).",
    )
    parser.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="auto",
        help="Training's and its encoding passes' precision: auto (bf16 where the device runs it natively: a GPU "
        f"with bf16, a CPU with AVX-512-BF16 / AMX; else fp32; ${PRECISION_ENV} overrides), fp32, bf16 or fp16.",
    )
    # What happens to --output-dir's checkpoints and earlier model, and the held-out texts.
    parser.add_argument("--no-resume", action="store_true", help="Ignore checkpoints already in --output-dir.")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="Replace a trained model already in --output-dir (by default a folder holding one is only "
        "written to when this run resumes its own checkpoints there).",
    )
    parser.add_argument(
        "--keep-checkpoints",
        action="store_true",
        help="Keep the checkpoint-* folders in --output-dir (with --method auto: in each signals/<name>) after a "
        "successful run (by default they are removed once the model is saved; a failed or interrupted run always "
        "keeps them, to resume from).",
    )
    parser.add_argument(
        "--test-size",
        type=count_or_fraction,
        metavar="N|F",
        help="Hold out N texts (or a fraction F < 1), stratified by label; evaluate on them only.",
    )
    add_data_args(parser)
    add_trainer_flags(parser)


def parse_pass_through(pairs: list[str]) -> dict:
    """``--max_steps 10 --logging_steps 5`` style TrainingArguments flags, parsed by HfArgumentParser into typed
    values."""
    if not pairs:
        return {}
    parser = HfArgumentParser(ClusteringTrainingArguments)
    (parsed,) = parser.parse_args_into_dataclasses(args=["--output_dir", "unused", *pairs])
    given = {arg.lstrip("-").split("=")[0].replace("-", "_") for arg in pairs if arg.startswith("--")}
    return {name: getattr(parsed, name) for name in given if hasattr(parsed, name)}


def precision_overrides(precision: str) -> dict:
    """``--precision`` as ``TrainingArguments`` fields: ``auto`` leaves ``bf16`` unset (the hardware's choice) unless
    ``$HF_TEXTCLUSTER_PRECISION`` names a precision."""
    if precision == "auto":
        precision = os.environ.get(PRECISION_ENV, "auto")
        check_precision(precision)
    return {} if precision == "auto" else {"bf16": precision == "bf16", "fp16": precision == "fp16"}


def _config_overrides(items: list[str] | None) -> dict:
    """``--config eta=5 --config pooling=cls``: JSON-looking values are parsed, the rest stay strings."""
    pairs = [item.partition("=")[::2] for item in items or []]
    return {key: json.loads(value) if value[:1] in "0123456789-[{tfn" else value for key, value in pairs}


def _user_dataset(args):
    if not args.input:
        raise SystemExit("error: pass --dataset <benchmark> or --input <file> (csv/jsonl/parquet/txt).")
    if args.num_clusters is None and not args.label_column:
        raise SystemExit(
            "error: --num-clusters is required when training on your own file (without --label-column): "
            "a number, or 'auto' to choose it from the embeddings."
        )
    return load_text_file(args.input, text_column=args.text_column, label_column=args.label_column)


def run(args: argparse.Namespace, extra: list[str]) -> int:
    if args.dataset and args.input:
        raise ValueError("Pass either --dataset (a benchmark) or --input (your file), not both.")
    if args.method == "auto" and args.config:
        raise ValueError(
            "--config sets one method's configuration, and --method auto trains two (SCCL and DEC self-training), "
            "each with its own: pass --method sccl (or another) with --config."
        )
    request = cluster_count_request(args)  # a malformed request fails before any data is read
    check_pass_through(extra)
    overrides = {**parse_pass_through(trainer_flags(args) + extra), **precision_overrides(args.precision)}
    result = train_clusterer(
        args.method,
        args.dataset if args.dataset else _user_dataset(args),
        args.output_dir,
        encoder=args.encoder,
        recipe=args.recipe,
        augmentation=args.augmentation,
        num_clusters=request,
        data_dir=args.data_dir,
        seed=args.seed,
        config_overrides=_config_overrides(args.config),
        training_overrides=overrides,
        resume=not args.no_resume,
        overwrite=args.overwrite,
        test_size=args.test_size,
        # where the texts came from, for training_run.json (the card reads its cluster keywords from the file)
        input_file=(
            {"path": os.path.abspath(args.input), "text_column": args.text_column, "label_column": args.label_column}
            if args.input
            else None
        ),
        keep_checkpoints=args.keep_checkpoints,
    )
    if result.trainer.is_world_process_zero():  # under several processes, the main one reports
        _print_result(args, result)
    return 0


def _print_result(args: argparse.Namespace, result) -> None:
    m = result.metrics
    print(
        f"\nSaved {get_method(result.model.config.model_type).display_name} to {result.output_dir} (trained "
        f"{result.train_seconds:.0f}s, "
        f"precision {result.trainer.precision_description()})"
    )
    if result.k_selection is not None:
        print(describe_k_selection(result.k_selection))
    if getattr(result, "auto", None):  # --method auto: which candidate it serves
        choice = result.auto["choice"]
        print(
            f"Serving {choice['served']} of {len(result.auto['candidates'])} candidates (chosen by "
            f"{choice['criterion'] or 'you'}, no labels used); all of them are kept in {result.output_dir}."
        )
    if result.test_dataset is not None:
        print(f"Scored on the {len(result.test_dataset)} held-out texts (never trained on).")
    if "eval_acc" in m:
        if args.label_column:
            print(
                f"Scores against the labels of column {args.label_column!r} (used only for scoring, never trained on):"
            )
        scores = {k[5:]: v for k, v in m.items() if k.startswith("eval_")}
        print(f"cluster head         : {format_scores(scores)}")
        print_kmeans_scores(scores)
    print(summary(result, args.input, args.text_column))
