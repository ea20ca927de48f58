"""``python -m training.bench <section> [options]``: one sub-command per section and per registered method."""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from . import (  # noqa: E402
    augmentation,
    authors_sccl,
    auto,
    auto_k,
    baselines,
    compute_curve,
    kmeans_init,
    method,
    model_cards,  # noqa: E402
    partitions,
    phases,
    processes,
    rescore,
    scale,
    serving_head,
    speed,
    top_layers,
    update,
    without_k,
)
from . import store as results  # noqa: E402
from .common import environment, expand_benchmark_names, methods, new_run_id  # noqa: E402
from .render import write_rendered  # noqa: E402

# sub-command -> (module, one-line help); each registered method is a sub-command of its own (the `method` module)
SECTIONS = {
    "auto": (auto, "The default, train --method auto: every candidate, the served choice and the oracle."),
    "profile": (phases, "Where the default's time goes: its phases on N texts of a corpus, and what it serves."),
    "compute-curve": (compute_curve, "Each signal of train --method auto at 1x / 3x / 10x its cpu recipe's steps."),
    "top-layers": (top_layers, "Import the top-layers fine-tuning study's rows (quality against time)."),
    "baselines": (baselines, "BoW / TF-IDF / embeddings + k-means (and the BERTopic way with --encoder)."),
    "speed": (speed, "Speed ratios measured side by side in one process."),
    "authors-sccl": (authors_sccl, "Record a side-by-side timing of the SCCL authors' code, run outside."),
    "auto-k": (auto_k, "Choosing K without labels: the criteria and BERTopic."),
    "without-k": (without_k, "The default with no K given against BERTopic's default, side by side."),
    "scale": (scale, "Time and peak memory at 10k / 100k / 1M texts."),
    "augmentation": (augmentation, "What the augmented views keep of the label signal."),
    "kmeans-init": (kmeans_init, "How the initial k-means starts."),
    "processes": (processes, "The whole-corpus passes in one process and split between two (accelerate launch)."),
    "rescore": (rescore, "Add today's metrics to the rows of kept models."),
    "update": (update, "Keeping up with new texts: update against retraining, and a held-out class found again."),
    "serving-head": (serving_head, "How a UMAP k-means partition is served: the heads fitted on its clusters."),
    "partitions": (
        partitions,
        "Every candidate partition of kept models, the label-free choice, the oracle; the shallow baselines refined.",
    ),
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser: one sub-command per section, per registered method, and ``render``."""
    parser = argparse.ArgumentParser(
        prog="python -m training.bench",
        description="The benchmark: one sub-command per section and per registered method.",
    )
    commands = parser.add_subparsers(dest="section", required=True, metavar="section")
    for name, (module, help_text) in SECTIONS.items():
        module.add_arguments(commands.add_parser(name, help=help_text, description=help_text))
    for name, spec in methods().items():
        help_text = f"Train and score {spec.display_name} (the `cpu` recipe unless --recipe)."
        method.add_arguments(commands.add_parser(name, help=help_text, description=help_text))
    commands.add_parser("render", help="Re-write docs/results.md (and README's table) from docs/results.json.")
    for name, push, help_text in (
        ("model-cards", False, "Re-write model_cards/ (the cards of the published clusterers) from docs/results.json."),
        ("push-cards", True, "Push each published clusterer's card as the README.md of <org>/<name> on the Hub."),
    ):
        model_cards.add_card_arguments(commands.add_parser(name, help=help_text, description=help_text), push)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one section (its rows are saved as they are measured) and re-render; ``render`` only re-renders."""
    args = build_parser().parse_args(argv)
    if getattr(args, "datasets", None) is not None:  # corpus and group names (all, tuning, ...) -> corpus names
        args.datasets = expand_benchmark_names(args.datasets)
    if args.section in ("model-cards", "push-cards"):
        return model_cards.run_cards(args)
    store = results.load_store()
    results.on_save = write_rendered
    if args.section == "render":
        write_rendered(store)
        _rewrite_model_cards()
        return 0
    run_id = new_run_id(args.section)
    store["runs"][run_id] = environment()
    module = SECTIONS[args.section][0] if args.section in SECTIONS else method
    module.run(args, store, run_id)
    print(f"Wrote {results.RESULTS_MD}")
    _rewrite_model_cards()
    return 0


def _rewrite_model_cards() -> None:
    """model_cards/ follows the repository's own store (a test fails when it is stale); once per command, not per
    row."""
    if results.RESULTS_JSON.resolve() == (results.REPO / "docs" / "results.json").resolve():
        model_cards.write_cards()
        print(f"Wrote {model_cards.CARDS_DIR}")


if __name__ == "__main__":
    sys.exit(main())
