"""``hf-textcluster rename``: give a trained model's clusters the names you choose (``3="refunds"``, or a JSON file
of them), saved as its ``id2label`` (what ``predict`` and the pipeline return as ``label``)."""

import argparse
import json

from ._args import add_edit_args, read_file_option, run_edit


def cluster_name(value: str) -> tuple[str, str]:
    """``3=refunds`` -> ``("3", "refunds")``."""
    key, sep, name = value.partition("=")
    if not sep or not key.strip().isdigit():
        raise argparse.ArgumentTypeError(f"expected ID=NAME (e.g. 3=refunds), got {value!r}")
    return key.strip(), name


HELP = (
    'Name a trained model\'s clusters yourself (3="refunds" 5="billing", or --file names.json), saved as '
    "its id2label; in place unless --output-dir."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "names",
        nargs="*",
        default=None,  # not required: the names may all come from --file
        type=cluster_name,
        metavar="ID=NAME",
        help='A cluster id and its new name: 3="refunds" (several pairs, one after the other).',
    )
    parser.add_argument("--file", help='A JSON file of {"id": "name", ...} (read before the ID=NAME pairs, which win).')
    add_edit_args(parser, input_help="")


def run(args: argparse.Namespace, extra: list[str]) -> int:
    try:
        names = json.loads(read_file_option(args.file, "--file")) if args.file else {}
    except ValueError as err:  # UnicodeDecodeError included
        raise ValueError(f'--file {args.file} is not JSON ({err}); write it as {{"3": "refunds"}}.') from None
    if not isinstance(names, dict):
        raise ValueError(
            f'--file {args.file} must hold one JSON object of cluster id -> name, e.g. {{"3": "refunds"}}.'
        )
    names.update(dict(args.names))
    if not names:
        raise ValueError('rename needs names: pass ID=NAME pairs (3="refunds") or --file names.json.')
    clusterer, _, where = run_edit(args, "rename", names=names)
    given = {int(k) for k in names}
    for k, label in sorted(clusterer.model.config.id2label.items()):
        print(f"{k:>4}  {'renamed' if k in given else '':<7}  {label}")
    print(f"Renamed {len(given)} of {clusterer.model.config.num_clusters} clusters; {where}.")
    return 0
