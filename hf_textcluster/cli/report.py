"""``hf-textcluster report``: one self-contained HTML page of a trained model's clusters on your texts (needs the
report extra): a 2-D map, each cluster's keywords, size and typical members, confidence, outliers and, with
``--label-column``, the confusion against the known classes."""

import argparse

from ..apps.report import check_report_path, cluster_report
from ..runs.folder import load_clusterer
from ._args import add_map_command_args, check_output_file, encoding_on, read_map_input

HELP = (
    "An HTML page of a trained model's clusters on your texts: map, "
    "keywords, typical members, confidence, outliers (report extra)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_map_command_args(
        parser,
        "Known classes of --input: scores and the confusion against them.",
        "The page to write (default: report.html).",
        "report.html",
    )


def run(args: argparse.Namespace, extra: list[str]) -> int:
    # everything that can be refused is refused before the model is loaded
    check_output_file(args)
    check_report_path(args.output)
    dataset, texts, title = read_map_input(args)
    model = load_clusterer(args.model)
    with encoding_on(args) as device:
        path = cluster_report(
            model.to(device),
            texts,
            list(dataset["label"]) if args.label_column else None,
            args.output,
            label_names=dataset.features["label"].names if args.label_column else None,
            sample_size=args.map_sample,
            map_method=args.projection,
            batch_size=args.batch_size,
            random_state=args.seed,
            title=title,
        )
    print(
        f"Wrote {path}: {len(texts):,} texts in {model.config.num_clusters} clusters"
        f"{', scored against ' + repr(args.label_column) if args.label_column else ''}; open it in a browser."
    )
    return 0
