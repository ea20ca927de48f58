"""Argument types and helpers shared by several ``hf-textcluster`` commands."""

from __future__ import annotations

import argparse
import contextlib
import os

from ..choosing.auto_k import DEFAULT_CRITERION, ClusterCountRequest
from ..choosing.criteria import K_CRITERIA
from ..modeling.encoding_passes import DEFAULT_ENCODE_BATCH_SIZE
from ..modeling.validation import Interval
from ..runs import folder as runs_folder


class HelpFormatter(argparse.HelpFormatter):
    """``--help`` shows every option's default: appended as ``(default: X)`` unless its help already says it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        shown = action.default not in (None, False, argparse.SUPPRESS) and action.option_strings
        if shown and "default" not in text.lower():
            text += " (default: %(default)s)"
        return text


class CommandParser(argparse.ArgumentParser):
    """The parser of ``hf-textcluster`` and of each of its commands (sub-parsers are made with the parent's class)."""

    def error(self, message: str):  # type: ignore[override]
        """A bad command line is one line (``hf-textcluster predict: error: ...``), not the usage block: ``--help``
        shows the usage."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def add_data_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        default=os.environ.get("HF_TEXTCLUSTER_DATA_DIR"),
        help="Folder with <dataset>.csv (default: $HF_TEXTCLUSTER_DATA_DIR; otherwise the public sources).",
    )


def format_scores(metrics: dict, keys=("acc", "nmi", "ari")) -> str:
    return "  ".join(f"{k.upper()} {100 * metrics[k]:.1f}" for k in keys if k in metrics)


def print_kmeans_scores(metrics: dict) -> None:
    """The scores of k-means on the model's embeddings and, for a head in a space of its own (DEC-CRL's FC_e, AECL's
    projector), of k-means there (what DEC-CRL's recluster serves)."""
    for prefix, what in (("kmeans_", "k-means on embeddings"), ("latent_kmeans_", "k-means in the head's space")):
        if f"{prefix}acc" in metrics:
            print(f"{what}: {format_scores({k[len(prefix) :]: v for k, v in metrics.items() if k.startswith(prefix)})}")


def _number(cast: type, allowed: Interval):
    """An argument type: the option's text as ``cast`` in ``allowed``, or argparse's one-line error saying so."""

    def parse(value: str):
        with contextlib.suppress(ValueError):
            if allowed.is_satisfied_by(number := cast(value)):
                return number
        raise argparse.ArgumentTypeError(f"expected {allowed}, got {value!r}")

    return parse


positive_int = _number(int, Interval(int, 1, None))
# `--outlier-quantile` / `--far-quantile`, refused before any model is loaded
quantile = _number(float, Interval(float, 0, 1, closed="right"))


def _parsed(parse):
    """An argument type of a library parser: its ValueError as argparse's one-line error."""

    def parse_argument(value: str):
        try:
            return parse(value)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    return parse_argument


# `--num-clusters`: a whole number, or `auto` (chosen from the embeddings, see `--k-range`)
num_clusters_or_auto = _parsed(ClusterCountRequest.parse_num_clusters)
# `--k-range 2:60` -> (2, 60); either side may be left out (`:60`, `5:`) for its default
k_range = _parsed(ClusterCountRequest.parse_k_range)


def positive_int_or_auto(value: str) -> int | str:
    return "auto" if num_clusters_or_auto(value) == "auto" else positive_int(value)


def cluster_count_request(args: argparse.Namespace, default: int | None = None) -> ClusterCountRequest:
    """The K request of ``--num-clusters`` / ``--k-range`` / ``--k-criterion`` (``default`` when K is not given)."""
    num_clusters = default if args.num_clusters is None else args.num_clusters
    return ClusterCountRequest.parse(num_clusters, args.k_range, args.k_criterion)


def count_or_fraction(value: str) -> int | float:
    with contextlib.suppress(ValueError):
        return float(value) if "." in value else int(value)
    raise argparse.ArgumentTypeError(f"expected a number of texts (1600) or a fraction (0.2), got {value!r}")


def add_k_selection_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--k-range",
        type=k_range,
        metavar="K_MIN:K_MAX",
        help="With --num-clusters auto: the range searched (default 2:min(200, 3 sqrt(N))).",
    )
    parser.add_argument(
        "--k-criterion",
        choices=K_CRITERIA,
        help=f"With --num-clusters auto: how K is chosen (default: {DEFAULT_CRITERION}).",
    )


def describe_k_selection(selection: dict) -> str:
    k_min, k_max = selection["k_range"]
    return (
        f"K = {selection['num_clusters']}, chosen without labels by {selection['criterion']} among K in "
        f"{k_min}..{k_max} ({selection['sample_size']:,} of {selection['num_texts']:,} texts, "
        f"{selection['seconds']:.1f}s)"
    )


def _add_text_column_and_batch_args(parser: argparse.ArgumentParser) -> None:
    """``--text-column`` and ``--batch-size``: how a command reads and encodes the texts of ``--input``."""
    parser.add_argument(
        "--text-column", default="text", help="Column of --input holding the texts (csv, jsonl, parquet)."
    )
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=DEFAULT_ENCODE_BATCH_SIZE,
        help="Texts encoded at a time (memory against speed).",
    )


def add_model_input_args(parser: argparse.ArgumentParser, model_help: str) -> None:
    """A trained model applied to a file of texts: predict, calibrate, recluster and plot."""
    parser.add_argument("--model", required=True, help=model_help)
    parser.add_argument("--input", required=True, help="Texts: .txt (one per line), csv, jsonl or parquet.")
    _add_text_column_and_batch_args(parser)


def add_map_sample_arg(parser: argparse.ArgumentParser, default: int) -> None:
    """``--map-sample``: how many texts a 2-D map shows (plot and report)."""
    parser.add_argument(
        "--map-sample",
        type=positive_int,
        default=default,
        metavar="N",
        help="At most this many texts in the map, a seeded sample (the sizes and tables count every text).",
    )


# `--model` of the commands that read the whole run folder (card and push).
TRAINED_MODEL_DIR = "A trained model directory (weights, tokenizer, training_run.json)."


def add_card_args(parser: argparse.ArgumentParser) -> None:
    """What the model card says about a run (``card`` and ``push``)."""
    parser.add_argument("--license", default="apache-2.0", help="Card license (default: apache-2.0).")
    parser.add_argument("--dataset-name", help="Card dataset (default: the run's benchmark).")
    parser.add_argument("--base-model", help="Card base_model hub id (default: the run's encoder when on the Hub).")
    parser.add_argument("--max-texts", type=int, default=5000, help="Training texts sampled for cluster keywords.")
    parser.add_argument(
        "--no-remote-code", action="store_true", help="Do not ship the inference code for trust_remote_code."
    )
    add_data_args(parser)


def card_kwargs(args: argparse.Namespace) -> dict:
    given = {key: getattr(args, key) for key in ("dataset_name", "base_model") if getattr(args, key)}
    return {"license": args.license, **given}


def update_saved_model(args: argparse.Namespace, command: str, update, write_files=None) -> tuple:
    """:func:`~hf_textcluster.runs.folder.update_saved_model` with ``--model``, ``--input``, ``--text-column``,
    ``--output-dir`` and ``--overwrite``: (model, seconds, output folder)."""
    return runs_folder.update_saved_model(
        args.model,
        args.input,
        update,
        command=command,
        text_column=args.text_column,
        output_dir=args.output_dir,
        overwrite=args.overwrite,
        write_files=write_files,
    )


def add_curation_args(parser: argparse.ArgumentParser, input_required: bool) -> None:
    """A trained model edited into a new folder: merge, split and update."""
    parser.add_argument("--model", required=True, help="A trained model directory (kept unchanged).")
    parser.add_argument("--output-dir", required=True, help="Where the edited model goes (a new folder).")
    parser.add_argument(
        "--input",
        required=input_required,
        help="Texts: .txt (one per line), csv, jsonl or parquet"
        + ("." if input_required else " (default: the run's training texts when they can be found)."),
    )
    _add_text_column_and_batch_args(parser)
    parser.add_argument(
        "--overwrite", action="store_true", help="Replace a model already in --output-dir (or --model itself)."
    )


def add_save_back_args(parser: argparse.ArgumentParser, edited: str = "") -> None:
    """``--output-dir`` and ``--overwrite`` of a command that saves the model back over ``--model`` by default."""
    parser.add_argument("--output-dir", help=f"Save the {edited}model here instead of over --model.")
    parser.add_argument(
        "--overwrite", action="store_true", help="Replace another trained model already in --output-dir."
    )


def edit_saved_model(args: argparse.Namespace, edit, *values, **kwargs) -> tuple:
    """``edit(--model, --output-dir, *values)`` (a :mod:`~hf_textcluster.runs.curation` edit) with the texts of
    ``--input`` and ``--overwrite``, then the edited model's card written again: merge, split and reduce."""
    texts = read_texts(args.input, args.text_column)
    result = edit(args.model, args.output_dir, *values, texts=texts, overwrite=args.overwrite, **kwargs)
    refresh_card(args.model, args.output_dir, texts=texts)
    return result


def read_file_option(path: str, option: str) -> str:
    """The text of the file an option names (``--prompt-file``, ``--file``): a missing one is one line naming it."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{option} {path}: no such file.")
    with open(path, encoding="utf-8") as f:
        return f.read()


def read_texts(path: str | None, text_column: str) -> list[str] | None:
    """The texts of a file named on the command line (None when none is named)."""
    from ..data import load_text_file

    return list(load_text_file(path, text_column=text_column)["text"]) if path else None


def refresh_card(model_dir: str, output_dir: str, **card) -> None:
    """Write the edited model's card again (it lists the clusters) when the model it was made from had one."""
    if os.path.isfile(os.path.join(model_dir, "README.md")):
        import warnings

        from ..hub.card_data import MetricsNotMeasuredWarning
        from ..hub.model_card import write_model_card

        with warnings.catch_warnings():  # the card says the scores were measured before the edits
            warnings.simplefilter("ignore", MetricsNotMeasuredWarning)
            write_model_card(output_dir, **card)
