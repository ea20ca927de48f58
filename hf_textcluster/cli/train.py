"""``hf-textcluster train``: train a clusterer on a benchmark or on your own file.

The command line becomes one :class:`~hf_textcluster.runs.request.TrainingRequest` (:func:`training_request`): each
option whose destination is a field of the request goes there as given, and the request checks them all; a
``Clusterer`` made from it trains it (``Clusterer.from_request(request).fit()``, as from Python). Its Trainer
options are the ``ClusteringTrainingArguments`` fields a user reaches for first, listed in ``train --help`` with their
defaults; they go to the Trainer as pass-through flags, as does any other ``TrainingArguments`` field
(``--save-steps 100``). It ends with a block saying what the model serves, its clusters (size
and name) and the next commands.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import os
import shlex
import sys

from transformers import HfArgumentParser

from ..choosing.auto_k import describe_k_selection
from ..choosing.criteria import PRETRAINED
from ..data import load_text_file
from ..editing.kmeans import KMEANS_INITS
from ..modeling.encoding_passes import DEFAULT_ENCODE_BATCH_SIZE
from ..modeling.precision import PRECISION_ENV, PRECISIONS, check_precision
from ..modeling.validation import describe
from ..models import METHODS, get_method
from ..representation.summary import read_cluster_summary
from ..runs.clusterer import Clusterer
from ..runs.first_save import TrainingStopped
from ..runs.folder import RunFolder
from ..runs.request import AUGMENTATIONS, TrainingRequest
from ..runs.signals import CACHED_SIGNALS, DEFAULT_SIGNALS, SIGNALS, describe_partition
from ..training.arguments import GPU_ENCODE_BATCH_SIZE, OPTION_NAMES, ClusteringTrainingArguments
from ._args import (
    BATCH_SIZE_HELP,
    ENCODER_HELP,
    TEXT_COLUMN_HELP,
    add_data_args,
    add_k_selection_args,
    count_or_fraction,
    format_scores,
    num_clusters_or_auto,
    print_kmeans_scores,
)

# In `train --help` order; the recipe sets the schedule, so those defaults are the recipe's.
LISTED = (
    "max_steps",
    "num_train_epochs",
    "per_device_train_batch_size",
    "learning_rate",
    "head_learning_rate",
    "serve",
    "kmeans_init",
    "early_stopping_tol",
    "frozen_layers",
    "calibration_sample_size",
    "encode_batch_size",
)
# Fields that `train` sets through an option of its own: as pass-through flags they are refused, naming it.
SET_BY_OPTION = {
    "bf16": "--precision bf16",
    "fp16": "--precision fp16",
    **{name: f"--{flag}" for name, flag in OPTION_NAMES.items()},
}
# Listed options with a fixed set of values: refused by the parser, offered as recluster offers them.
CHOICES = {"kmeans_init": list(KMEANS_INITS)}
FROM_RECIPE = {"max_steps", "num_train_epochs", "per_device_train_batch_size", "learning_rate", "head_learning_rate"}
PREFIX = "trainer__"
# The defaults the reference page (docs/cli.md) shows where the dataclass's is not the one used: the recipe's, or
# chosen by the Trainer at run time (None in the dataclass).
DOC_DEFAULTS = {
    **dict.fromkeys(FROM_RECIPE, "the recipe's"),
    "encode_batch_size": f"{DEFAULT_ENCODE_BATCH_SIZE} on a CPU, {GPU_ENCODE_BATCH_SIZE} on a GPU",
}
# Where the field's own help does not fit a command line that starts from a recipe.
FLAG_HELP = {
    "head_learning_rate": "Learning rate of the heads and centroids (default: the recipe's; without one, 100 x "
    "learning_rate, as in SCCL).",
    "max_steps": "Training steps; overrides --num-train-epochs (default: the recipe's schedule; cpu: 10 epochs of the "
    "training texts within 30 to 300 steps).",
    "encode_batch_size": f"{BATCH_SIZE_HELP} (default: {DOC_DEFAULTS['encode_batch_size']})",
    "serve": "What the saved model serves. Default method (auto): 'auto' (default: the BERTopic way, saved first, "
    "replaced at the end by a trained candidate only when the label-free choice and its guard confirm one) or a "
    "candidate by name, e.g. contrastive/umap_kmeans, pretrained/kmeans or consensus (training_run.json lists them). "
    "With --method: 'auto' (the label-free choice among its head, k-means and UMAP k-means on its embeddings, each "
    "refined or not) or one of them by name ('head': the paper's output). Must be "
    f"{describe(ClusteringTrainingArguments._parameter_constraints['serve'], none=False)}. Under the default, also "
    "a candidate's name.",
}


def _help(field: dataclasses.Field) -> str:
    if field.name in FLAG_HELP:
        return FLAG_HELP[field.name]
    text = " ".join(str(field.metadata.get("help", "")).split()).replace("%", "%%")
    if field.name in ClusteringTrainingArguments._parameter_constraints:  # what the Trainer's table allows
        text += f" Must be {describe(ClusteringTrainingArguments._parameter_constraints[field.name], none=False)}."
    if "default" in text.lower():
        return text
    default = "the recipe's" if field.name in FROM_RECIPE else field.default
    return f"{text} (default: {default})".strip()


def add_trainer_flags(parser: argparse.ArgumentParser) -> None:
    """The listed Trainer options as a group of ``parser`` (each parsed as text, typed by ``HfArgumentParser``).

    Args:
        parser: the ``train`` parser.

    Example:
        >>> add_trainer_flags(train_parser)  # doctest: +SKIP
    """
    fields = {f.name: f for f in dataclasses.fields(ClusteringTrainingArguments)}
    group = parser.add_argument_group(
        "Trainer options",
        "Passed to ClusteringTrainingArguments (a transformers TrainingArguments); any other of its fields passes "
        "through the same way, e.g. --save-steps 100 or --logging-steps 10 (its precision fields are set by "
        "--precision).",
    )
    for name in LISTED:
        flag = OPTION_NAMES.get(name, name.replace("_", "-"))
        action = group.add_argument(
            f"--{flag}",
            dest=PREFIX + name,
            default=argparse.SUPPRESS,  # not given: the recipe's or the Trainer's own value
            help=_help(fields[name]),
            choices=CHOICES.get(name),
            metavar=None if name in CHOICES else flag.upper().replace("-", "_"),
        )
        default = fields[name].default
        action.doc_default = DOC_DEFAULTS.get(name, "–" if default is None else f"`{default}`")  # docs/cli.md's


def check_pass_through(extra: list[str]) -> None:
    """A pass-through flag that ``train`` sets through an option of its own (``--bf16``: ``--precision bf16``) is
    refused in one line naming that option: each setting has one name."""
    for arg in extra:
        name = arg.lstrip("-").split("=", 1)[0].replace("-", "_") if arg.startswith("--") else None
        if name in SET_BY_OPTION:
            raise ValueError(f"{arg.split('=', 1)[0]} is not an option of train: pass {SET_BY_OPTION[name]}.")


HELP = "Train a clusterer (Trainer options and any other TrainingArguments --flag pass through)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # The method, what it trains on (a benchmark corpus or the user's file) and where the run goes.
    parser.add_argument(
        "--method",
        default="auto",
        choices=["auto", *sorted(METHODS)],
        help="auto (default): saves the BERTopic way first (UMAP -> k-means on the pretrained encoder), then trains "
        "cheap objectives on the pretrained encoder's cached embeddings (see --signals) and serves the partition a "
        "label-free criterion chooses among theirs, the pretrained encoder's and their consensus, when it beats the "
        "BERTopic way in every held-out view; or one paper's method.",
    )
    texts = parser.add_mutually_exclusive_group()
    texts.add_argument("--dataset", help="A benchmark corpus name (or use --input).")
    texts.add_argument("--input", help="Your own texts: csv / jsonl / parquet / txt.")
    parser.add_argument("--text-column", default="text", help=TEXT_COLUMN_HELP)
    parser.add_argument(
        "--label-column", help="Known classes of your file: only scored against (ACC / NMI), never trained on."
    )
    parser.add_argument(
        "--output-dir",
        required=True,
        help="Where checkpoints, the trained model and training_run.json go (an interrupted run resumes there).",
    )
    # The model trained: encoder, recipe, views, K, seed and config overrides.
    parser.add_argument("--encoder", help=ENCODER_HELP)
    parser.add_argument("--recipe", default="cpu", help="Recipe variant: 'cpu' (default) or 'paper'.")
    parser.add_argument(
        "--augmentation",
        default="recipe",
        choices=["recipe", *AUGMENTATIONS],
        help="The two augmented views of each text that SCCL, DEC-CRL and AECL train on. 'recipe' (default): the "
        "recipe's views; where the recipe names the papers' precomputed views (files that come as a Dataset's "
        "text_aug1 / text_aug2 columns), dropout-only views ('virtual': both views are the text itself; a line says "
        "so); name an augmenter (word_deletion, word_swap, wordnet, contextual) for text views of your texts.",
    )
    parser.add_argument(
        "--num-clusters",
        type=num_clusters_or_auto,
        metavar="K|auto",
        help="K, or 'auto' to choose it from the embeddings of the training texts (see --k-range and "
        "--k-criterion). Default: 'auto', except with --label-column or a benchmark --dataset (their number of "
        "classes).",
    )
    add_k_selection_args(parser)
    parser.add_argument(
        "--seed", type=int, default=0, help="Seed of the model's initialisation, k-means and the views."
    )
    parser.add_argument(
        "--config",
        action="append",
        type=config_item,
        dest="config_overrides",
        metavar="KEY=VALUE",
        help="Model config override of one method, e.g. --method sccl --config eta=5 (refused with --method auto, "
        "whose signals each have their own configuration).",
    )
    parser.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="auto",
        help="Training's and its encoding passes' precision: auto (bf16 where the device runs it natively: a GPU "
        f"with bf16, a CPU with AVX-512-BF16 / AMX; else fp32; ${PRECISION_ENV} overrides), fp32, bf16 or fp16.",
    )
    # What happens to --output-dir's checkpoints and earlier model, and the held-out texts.
    parser.add_argument(
        "--no-resume", dest="resume", action="store_false", help="Ignore checkpoints already in --output-dir."
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="Replace a trained model already in --output-dir (by default a folder holding one is only "
        "written to when this run resumes its own checkpoints there).",
    )
    parser.add_argument(
        "--keep-checkpoints",
        action="store_true",
        help="Keep the checkpoint-* folders in --output-dir (with --method auto: in each signals/<name>, kept then) "
        "after a successful run (by default they are removed once the model is saved; a failed or interrupted run "
        "always keeps them, to resume from).",
    )
    parser.add_argument(
        "--keep-signals",
        action="store_true",
        help="Keep each trained signal's model (signals/<name>, an encoder each) after a successful default run; by "
        "default only the served model and every candidate's partition are kept (refine --serve NAME then fits a "
        "head for that partition on the served model).",
    )
    parser.add_argument(
        "--signals",
        nargs="+",
        choices=[*CACHED_SIGNALS, *SIGNALS],
        metavar="SIGNAL",
        help=f"What the default run trains, in any mix: {', '.join(DEFAULT_SIGNALS)} (the default), adapter "
        "(objectives on the pretrained encoder's cached embeddings, seconds on a CPU), contrastive, self_training (the "
        "encoder fine-tuned with SCCL and with DEC self-training: many times the BERTopic way's time on a CPU).",
    )
    parser.add_argument(
        "--time-budget",
        type=float,
        metavar="SECONDS",
        help="Stop the default run's training after this many seconds, keeping the model it saved first (the "
        "BERTopic way); running the same command again resumes training.",
    )
    parser.add_argument(
        "--stop-words",
        type=lambda value: None if value == "none" else value,
        default="english",
        metavar="LANGUAGE",
        help="The language of the texts, whose stop words the clusters' keywords leave out: english (default), "
        "french, german, spanish, ... (the stop-words package's lists), or none. Saved with the model.",
    )
    parser.add_argument(
        "--outliers",
        action="store_true",
        help="Leave the texts far from every cluster at -1, as BERTopic's topic -1: farther from their cluster's "
        "centre than 99%% of its training texts (about 1%% of them). predict then flags such texts too; "
        "reduce-outliers puts them in their nearest cluster. By default every text is in a cluster.",
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
    """``--max-steps 10 --logging-steps 5`` style TrainingArguments flags, parsed by HfArgumentParser into typed
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


def config_item(item: str) -> tuple[str, object]:
    """``--config eta=5``: ``(key, value)``, a JSON-looking value parsed, the rest kept as a string."""
    key, _, value = item.partition("=")
    return key, json.loads(value) if value[:1] in "0123456789-[{tfn" else value


REQUEST_FIELDS = inspect.signature(TrainingRequest).parameters


def training_request(args: argparse.Namespace, extra: list[str]) -> TrainingRequest:
    """The :class:`~hf_textcluster.runs.request.TrainingRequest` of a ``train`` command line, checked before
    ``--input`` is read: every option whose destination is a request field as given, ``--config`` as
    ``config_overrides``, and the Trainer options (listed and pass-through) with ``--precision`` as
    ``training_overrides``."""
    if not (args.dataset or args.input):
        raise ValueError("Pass --dataset (a benchmark corpus) or --input (your file: csv, jsonl, parquet or txt).")
    check_pass_through(extra)
    options, trainer = {}, list(extra)
    for name, value in vars(args).items():  # one pass: a request field as given, or a listed Trainer option
        if name in REQUEST_FIELDS:
            options[name] = value
        elif name.startswith(PREFIX):
            trainer += [f"--{name.removeprefix(PREFIX)}", str(value)]
    options["config_overrides"] = dict(args.config_overrides or [])
    options["training_overrides"] = {**parse_pass_through(trainer), **precision_overrides(args.precision)}
    request = TrainingRequest(**options)
    if not args.input:
        return request
    # where the texts came from, for training_run.json (the card reads its cluster keywords from the file)
    source = {"path": os.path.abspath(args.input), "text_column": args.text_column, "label_column": args.label_column}
    texts = load_text_file(args.input, text_column=args.text_column, label_column=args.label_column)
    return dataclasses.replace(request, dataset=texts, input_file=source)


def run(args: argparse.Namespace, extra: list[str]) -> int:
    request = training_request(args, extra)
    try:
        result = Clusterer.from_request(request).fit().training_result_
    except TrainingStopped as stopped:  # the model saved first stays; the run resumes
        print(stopped, file=sys.stdout if stopped.budget_spent else sys.stderr)
        return 0 if stopped.budget_spent else 130
    except KeyboardInterrupt as err:  # Ctrl-C where nothing said what the folder holds (before the first save)
        if str(err) or not request.output_dir:
            raise
        kept = "keeps the model saved there before" if RunFolder(request.output_dir).holds_trained_model() else ""
        raise KeyboardInterrupt(
            f"{request.output_dir} {kept or 'holds no saved model yet'}; run the same command again to go on."
        ) from None
    if result.trainer.is_world_process_zero():  # under several processes, the main one reports
        _print_result(args, result)
    return 0


def _print_result(args: argparse.Namespace, result) -> None:
    m = result.metrics
    what = "the clusterer" if args.method == "auto" else get_method(result.model.config.model_type).display_name
    print(
        f"\nSaved {what} to {result.output_dir} (trained {result.train_seconds:.0f}s, precision "
        f"{result.trainer.precision_description()}; the folder holds {folder_megabytes(result.output_dir):.0f} MB)"
    )
    if result.k_selection is not None:
        print(describe_k_selection(result.k_selection))
    if getattr(result, "auto", None):  # the default: which candidate it serves, and whether training replaced it
        choice = result.auto["choice"]
        by = f"chosen by {choice['criterion']}, no labels used" if choice["criterion"] else "asked for"
        if choice["serving_signal"] == PRETRAINED:
            by = "the model saved first, kept: " + (
                "no trained candidate beat it in every held-out view" if choice["criterion"] else "asked for"
            )
        print(
            f"Serving {choice['served']} of {len(result.auto['candidates'])} candidates ({by}); every candidate's "
            f"partition is kept in {result.output_dir} (refine --serve NAME switches to one)."
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


def folder_megabytes(path: str) -> float:
    """The size of the files under ``path``, in MB."""
    sizes = (os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(path) for name in names)
    return sum(sizes) / 1e6


# Clusters listed by name; the rest are counted (a model with K = 200 would otherwise fill the screen).
MAX_LISTED_CLUSTERS = 20


def cluster_lines(names, max_listed: int = MAX_LISTED_CLUSTERS) -> list[str]:
    """One line per cluster, largest first: id, size, share and name (``ClusterNames`` of the training texts)."""
    total = max(1, names.num_texts)
    order = sorted(names.sizes, key=lambda k: (-names.sizes[k], k))
    width = len(str(max(names.sizes.values(), default=0)))
    lines = [
        f"  {k:>3}  {names.sizes[k]:>{width}} ({100 * names.sizes[k] / total:4.1f}%)  {names.names[k]}"
        for k in order[:max_listed]
    ]
    if len(order) > max_listed:
        rest = sum(names.sizes[k] for k in order[max_listed:])
        lines.append(f"  ... {len(order) - max_listed} more clusters with {rest:,} texts (see the report)")
    return lines


def summary(result, input_path: str | None, text_column: str = "text") -> str:
    """The end-of-training block: the served partition, the clusters by size with their names, the next commands."""
    model, out = result.model, result.output_dir
    served = getattr(model.config, "served_partition", "head")
    choice = getattr(result.trainer, "serving_choice", None) or {}
    why = f", chosen without labels by {choice['criterion']}" if choice.get("criterion") else ""
    lines = [f"Serves {served} ({describe_partition(served)}){why}; K = {model.config.num_clusters}."]
    names = result.cluster_names
    if names is not None and names.num_texts:
        sample = "" if names.num_texts >= len(result.trainer.train_dataset) else " (a seeded sample)"
        lines.append(
            f"Clusters on {names.num_texts:,} training texts{sample}, named after their {names.source} keywords "
            "(saved as the model's id2label):"
        )
        lines += cluster_lines(names)
    saved = read_cluster_summary(model.config) or {}
    if saved.get("outliers"):
        often = f", most often: {', '.join(saved['outlier_keywords'][:5])}" if saved.get("outlier_keywords") else ""
        lines.append(
            f"  {-1:>3}  {saved['outliers']:,} outliers (far from every cluster{often}; `hf-textcluster "
            f"reduce-outliers --model {shlex.quote(out)}` puts them in their nearest cluster)"
        )
    texts = shlex.quote(input_path) if input_path else "TEXTS.csv"
    column = f" --text-column {shlex.quote(text_column)}" if input_path and text_column != "text" else ""
    folder = shlex.quote(out)
    lines += [
        "Next:",
        f"  hf-textcluster info --model {folder}",
        f"  hf-textcluster predict --model {folder} --input {texts}{column} --output predictions.jsonl",
        f"  hf-textcluster report --model {folder} --input {texts}{column} --output report.html",
        f"  hf-textcluster card --model {folder} --output {shlex.quote(out.rstrip('/') + '/README.md')}",
    ]
    return "\n".join(lines)
