"""``hf-textcluster plot``: a picture of a trained model's clusters on your texts (needs the plot extra)."""

import argparse

from ..apps.canvas import check_image_path
from ..apps.plotting import is_placeholder_names, plot_clustering_overview
from ..figures.projection import resolve_projection
from ..representation.summary import sample_rows
from ..runs.folder import load_clusterer
from ._args import add_map_command_args, check_output_file, encoding_on, read_map_input

HELP = (
    "A PNG of a trained model's clusters on your texts: a 2-D map coloured "
    "by cluster (and by label) and the cluster sizes (needs the plot extra)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_map_command_args(
        parser,
        "Known classes of --input: a second map coloured by them.",
        "The picture (default: map.png; .png, .pdf, .svg, ...).",
        "map.png",
    )


def run(args: argparse.Namespace, extra: list[str]) -> int:
    # everything that can be refused is refused before any work: matplotlib / umap-learn missing, a bad --output
    check_output_file(args)
    check_image_path(args.output)  # matplotlib missing, an unknown format or no such folder
    projection = resolve_projection(args.projection)
    dataset, texts, title = read_map_input(args)
    if len(texts) < 4:
        raise ValueError(f"{args.input} holds {len(texts)} text(s): a map needs at least 4.")
    model = load_clusterer(args.model)
    rows = sample_rows(len(texts), args.map_sample, args.seed)
    with encoding_on(args) as device:  # every text's cluster for the sizes; the map shows a seeded sample of them
        clusters = model.to(device).predict(texts, batch_size=args.batch_size)
        embeddings = model.embed([texts[i] for i in rows], batch_size=args.batch_size)
    labels = dataset.select(rows)["label"] if args.label_column else None
    label_names = dataset.features["label"].names if args.label_column else None
    names = None if is_placeholder_names(model.config.id2label) else model.config.id2label
    k = model.config.num_clusters
    shown = f"{len(rows):,} of {len(texts):,}" if len(rows) < len(texts) else f"{len(texts):,}"
    plot_clustering_overview(
        embeddings,
        clusters[rows],
        labels,
        num_clusters=k,
        cluster_names=names,
        label_names=label_names,
        all_clusters=clusters,
        method=projection,
        random_state=args.seed,
        path=args.output,
        title=f"{title}: {shown} texts mapped",
    )
    used = len(set(clusters.tolist()))
    print(
        f"Wrote {args.output}: {projection} map of {shown} texts coloured by cluster"
        f"{' and by ' + repr(args.label_column) if args.label_column else ''}, and the sizes of the {k} clusters "
        f"({used} used)."
    )
    return 0
