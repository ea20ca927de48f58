"""Argument types and helpers shared by several ``hf-textcluster`` commands."""

import argparse
import contextlib
import os

from ..apps.report_data import DEFAULT_SAMPLE_SIZE
from ..choosing.auto_k import DEFAULT_CRITERION, ClusterCountRequest
from ..choosing.criteria import K_CRITERIA
from ..figures.projection import PROJECTIONS
from ..modeling.encoding_passes import DEFAULT_ENCODE_BATCH_SIZE
from ..modeling.input_checks import parse_num_clusters
from ..modeling.precision import INFERENCE_PRECISIONS, PRECISION_ENV, PRECISIONS
from ..modeling.validation import Interval
from ..runs.folder import RunFolder


class HelpFormatter(argparse.HelpFormatter):
    """``--help`` shows every option's default: appended as ``(default: X)`` unless its help already says it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        # a flag (store_true / store_false) is off unless given: its help says what giving it does
        shown = action.default not in (None, False, argparse.SUPPRESS) and action.option_strings and action.nargs != 0
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


# `--num-clusters`: K >= 2 or `auto` (chosen from the embeddings, see `--k-range`), by the library's one parse of K
num_clusters_or_auto = _parsed(parse_num_clusters)
# `--k-range 2:60` -> (2, 60); either side may be left out (`:60`, `5:`) for its default
k_range = _parsed(ClusterCountRequest.parse_k_range)


def count_or_fraction(value: str) -> int | float:
    with contextlib.suppress(ValueError):
        return float(value) if "." in value else int(value)
    raise argparse.ArgumentTypeError(f"expected a number of texts (1600) or a fraction (0.2), got {value!r}")


def add_k_selection_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--k-range",
        type=k_range,
        metavar="K_MIN:K_MAX",
        help="With --num-clusters auto (train's default for texts without labels): the range searched (default "
        "2:min(200, 3 sqrt(N))).",
    )
    parser.add_argument(
        "--k-criterion",
        choices=K_CRITERIA,
        help=f"With --num-clusters auto (train's default for texts without labels): how K is chosen (default: "
        f"{DEFAULT_CRITERION}).",
    )


# The help of options that several commands share word for word.
TEXT_COLUMN_HELP = "Column of --input holding the texts (csv, jsonl, parquet)."
BATCH_SIZE_HELP = "Texts encoded at a time (memory against speed)."
ENCODER_HELP = "The sentence encoder: a Hub id or local path (default: the pip-shipped all-MiniLM-L6-v2)."
# What --model accepts: commands that only read a model load a Hub id as well; card and push read its run folder.
MODEL_HELP = "A trained model: a local folder or a Hub id."
MODEL_FOLDER_HELP = "A trained model folder (weights, tokenizer, training_run.json); a Hub id is not accepted."
DEVICE_HELP = "Where the model encodes: auto (the GPU when torch sees one, else the CPU), cpu, cuda, cuda:1, ..."


def add_text_column_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--text-column", default="text", help=TEXT_COLUMN_HELP)


def add_device_args(parser: argparse.ArgumentParser, inference: bool = False) -> None:
    """``--device`` and ``--precision``: where and how a command that encodes texts runs the encoder (``inference``:
    serving only, where int8 is also offered)."""
    parser.add_argument("--device", default="auto", help=DEVICE_HELP)
    int8 = " or int8 (dynamic quantization, CPU: faster on every CPU kind measured, ~96%% of texts in the fp32 cluster)"
    parser.add_argument(
        "--precision",
        choices=INFERENCE_PRECISIONS if inference else PRECISIONS,
        default="auto",
        help=f"The encoder's precision: auto (bf16 where the device runs it natively, else fp32; ${PRECISION_ENV} "
        f"overrides), fp32, bf16, fp16{int8 if inference else ''}.",
    )


def add_encoding_args(parser: argparse.ArgumentParser, inference: bool = False) -> None:
    """``--text-column``, ``--batch-size``, ``--device`` and ``--precision``: how a command reads and encodes the
    texts of ``--input``."""
    add_text_column_arg(parser)
    parser.add_argument("--batch-size", type=positive_int, default=DEFAULT_ENCODE_BATCH_SIZE, help=BATCH_SIZE_HELP)
    add_device_args(parser, inference)


def resolve_device(device: str) -> str:
    """``--device auto``: the first CUDA GPU when torch sees one, else the CPU. A device this machine lacks is one line
    naming --device, not torch's bare AssertionError later."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ValueError(
                f"--device {device}: this machine has no CUDA GPU that torch can use "
                "(torch.cuda.is_available() is False); pass --device cpu."
            )
        index = device.partition(":")[2]
        if index.isdigit() and int(index) >= torch.cuda.device_count():
            raise ValueError(
                f"--device {device}: this machine has {torch.cuda.device_count()} CUDA GPU(s) "
                f"(cuda:0 to cuda:{torch.cuda.device_count() - 1})."
            )
    return device


@contextlib.contextmanager
def encoding_on(args: argparse.Namespace):
    """While a command runs: the device of ``--device`` (yielded, checked) and ``--precision`` as the precision every
    encoding pass resolves ``auto`` to (``$HF_TEXTCLUSTER_PRECISION``, restored after)."""
    device = resolve_device(args.device)
    before = os.environ.get(PRECISION_ENV)
    if args.precision != "auto":
        os.environ[PRECISION_ENV] = args.precision
    try:
        yield device
    finally:
        if before is None:
            os.environ.pop(PRECISION_ENV, None)
        else:
            os.environ[PRECISION_ENV] = before


def add_model_input_args(parser: argparse.ArgumentParser, inference: bool = False) -> None:
    """A trained model applied to a file of texts: predict, plot and report."""
    parser.add_argument("--model", required=True, help=MODEL_HELP)
    parser.add_argument("--input", required=True, help="Texts: .txt (one per line), csv, jsonl or parquet.")
    add_encoding_args(parser, inference)


def add_map_command_args(parser: argparse.ArgumentParser, label_help: str, output_help: str, output: str) -> None:
    """plot and report: a trained model on the texts of ``--input`` (``--label-column`` their known classes), drawn
    into ``--output``; ``--projection``, ``--map-sample`` and ``--seed``: how the 2-D map of the texts is drawn."""
    add_model_input_args(parser)
    parser.add_argument("--label-column", help=label_help)
    add_output_args(parser, output_help, default=output)
    parser.add_argument(
        "--projection",
        default="auto",
        choices=PROJECTIONS,
        help="2-D projection: auto (UMAP when umap-learn is installed, else PCA), umap (umap-learn), tsne or pca "
        "(scikit-learn).",
    )
    parser.add_argument(
        "--map-sample",
        type=positive_int,
        default=DEFAULT_SAMPLE_SIZE,
        metavar="N",
        help="At most this many texts in the map, a seeded sample (the sizes and tables count every text).",
    )
    parser.add_argument("--seed", type=int, default=0, help="Seed of the map's sample and projection.")


def read_map_input(args: argparse.Namespace):
    """plot and report: ``(the --input dataset, its texts, the title "<model> on <input file>")``."""
    from ..data import load_text_file

    dataset = load_text_file(args.input, text_column=args.text_column, label_column=args.label_column)
    title = f"{os.path.basename(os.path.normpath(args.model))} on {os.path.basename(args.input)}"
    return dataset, list(dataset["text"]), title


def add_output_args(parser: argparse.ArgumentParser, help: str, default: str | None = None) -> None:
    """``--output`` (the file a command writes) and ``--overwrite``: an existing file is replaced only with
    ``--overwrite``, which :func:`check_output_file` checks before any work."""
    parser.add_argument("--output", default=default, help=help)
    parser.add_argument("--overwrite", action="store_true", help="Replace an existing --output (kept by default).")


def check_output_file(args: argparse.Namespace) -> None:
    """Refuse, before any work, an ``--output`` that is a folder, is the ``--input`` file, or exists (without
    ``--overwrite``): each in one line naming the file."""
    path, source = args.output, getattr(args, "input", None)
    if not path:
        return
    if os.path.isdir(path):
        raise ValueError(f"--output {path} is a folder: pass a file name.")
    if source and os.path.exists(source) and os.path.abspath(path) == os.path.abspath(source):
        raise ValueError(f"--output {path} is the --input file: it would replace your texts. Write elsewhere.")
    if os.path.exists(path) and not args.overwrite:
        raise FileExistsError(f"--output {path} exists; pass --overwrite to replace it.")


class WriteError(OSError):
    """A file a command writes could not be written (a full disk, no permission): its message names the file."""


def write_output(path: str, write) -> None:
    """``write(path)``, its OSError as a :class:`WriteError` naming the file: ``could not write <file>: <why>``."""
    try:
        write(path)
    except OSError as err:
        raise WriteError(f"could not write {path}: {err.strerror or err}") from err


def add_card_args(parser: argparse.ArgumentParser) -> None:
    """The run folder and what its model card says (``card`` and ``push``)."""
    parser.add_argument("--model", required=True, help=MODEL_FOLDER_HELP)
    parser.add_argument("--license", default="apache-2.0", help="Card license (default: apache-2.0).")
    parser.add_argument("--dataset-name", help="Card dataset (default: the run's benchmark).")
    parser.add_argument("--base-model", help="Card base_model hub id (default: the run's encoder when on the Hub).")
    parser.add_argument(
        "--keyword-sample",
        type=positive_int,
        default=5000,
        metavar="N",
        help="The cluster keywords are computed on a seeded sample of this many training texts.",
    )
    add_device_args(parser)
    parser.add_argument(
        "--no-remote-code", action="store_true", help="Do not ship the inference code for trust_remote_code."
    )
    add_data_args(parser)


def card_kwargs(args: argparse.Namespace, device) -> dict:
    """What ``card`` and ``push`` give the card alike (the options of :func:`add_card_args`): the trained model on
    ``device`` (the keywords need each text's cluster), where its texts are, the sample, the remote code, the
    metadata."""
    given = {key: getattr(args, key) for key in ("dataset_name", "base_model") if getattr(args, key)}
    model = RunFolder(args.model).open()[0].to(device)
    shared = {"data_dir": args.data_dir, "max_texts": args.keyword_sample, "remote_code": not args.no_remote_code}
    return {"model": model, **shared, "license": args.license, **given}


def add_edit_args(parser: argparse.ArgumentParser, input_help: str | None = None) -> None:
    """What every command that changes a trained model takes: ``--model`` (changed in place, the model before kept
    in ``<model>/previous/``), ``--output-dir`` for a copy instead, ``--overwrite``; and, unless ``input_help`` is
    ``""``, ``--input`` (required when ``input_help`` is given; else the run's training texts by default)."""
    parser.add_argument(
        "--model",
        required=True,
        help="A trained model: a local folder, changed in place, the model before kept in its previous/ folder "
        "(`hf-textcluster restore --model DIR` goes back); or a Hub id, with --output-dir.",
    )
    if input_help != "":
        parser.add_argument(
            "--input",
            required=bool(input_help),
            help=input_help
            or "The texts it works on, its training texts: .txt (one per line), csv, jsonl or parquet (default: the "
            "run's training texts when they can be found).",
        )
        add_encoding_args(parser)
    parser.add_argument("--output-dir", help="Save the edited model here instead (--model is left as it was).")
    parser.add_argument(
        "--overwrite", action="store_true", help="Replace another trained model already in --output-dir."
    )


def run_edit(args: argparse.Namespace, op: str, **kwargs) -> tuple:
    """:func:`~hf_textcluster.runs.saved_edits.edit_saved_model` of ``--model`` by ``op`` (with the texts of
    ``--input``, ``--batch-size``, ``--output-dir``, ``--overwrite``; the card, when the model had one, written again
    in the same save): ``(clusterer, what the edit returned, the line that says where it was saved)``."""
    from ..runs.saved_edits import edit_saved_model

    texts = read_texts(getattr(args, "input", None), getattr(args, "text_column", "text"))
    if texts is not None:
        kwargs["texts"] = texts
    if hasattr(args, "batch_size"):
        kwargs["batch_size"] = args.batch_size
    try:
        with encoding_on(args) if hasattr(args, "device") else contextlib.nullcontext("cpu") as device:
            clusterer, result = edit_saved_model(
                args.model, args.output_dir, op, overwrite=args.overwrite, device=device, **kwargs
            )
    except ValueError as err:  # what is wrong with the texts, said of the file they came from
        if texts is None or not str(err).startswith("`texts`: "):
            raise
        raise ValueError(f"--input {args.input}: {str(err).removeprefix('`texts`: ')}") from None
    if args.output_dir:
        where = f"saved to {clusterer.path} ({args.model} is unchanged)"
    else:
        where = (
            f"saved in {clusterer.path}; the model before is kept in {clusterer.path}/previous "
            f"(hf-textcluster restore --model {args.model} goes back)"
        )
    return clusterer, result, where


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
