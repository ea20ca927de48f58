"""The published clusterers: ``model_cards/``, the card of every clusterer the project would publish, from the store.

One clusterer per method: the method's main configuration (the ``cpu`` recipe, the default MiniLM encoder, no
override) on the corpus where the partition ``hf-textcluster train`` serves (the label-free choice, scored by the
benchmark on the kept run) is farthest above (or least below) the strongest baseline of that corpus, the baseline
README's leaderboard in short names. Its repository is
``<org>/<method>-<corpus>`` (``ORG`` below unless ``--org``).

Each card is the package's own (``hf_textcluster.hub.model_card.generate_model_card``, one template for every card)
for the model that training command produces, built from its configuration without weights, filled with the stored
scores, plus a section saying where the weights come from: the card is written before they exist, so it claims no
weights on the Hub (``push-cards`` pushes only the README.md; ``hf-textcluster push`` pushes a trained model with its
own card). ``model_cards/README.md`` lists them with the rule that chose them.

    python -m training.bench model-cards                    # rewrite model_cards/ from docs/results.json
    python -m training.bench push-cards --org my-org        # push each card as the README.md of my-org/<name>
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from .common import display_name, method_order
from .leaderboard import strongest_baseline
from .store import REPO, load_store

ORG = "hf-textcluster"
CARDS_DIR = REPO / "model_cards"
RECIPE = "cpu"
# A kept run's command with one of these options is not the main configuration `hf-textcluster train` reproduces.
NOT_MAIN = ("--max-steps", "--training", "--config", "--recipe", "--encoder", "--augmentation", "--held-out")
INDEX = "README.md"
PROVENANCE_BEFORE = "## Results"
CLUSTERS_SECTION = "## Clusters"


def repo_name(method: str, dataset: str) -> str:
    """``sccl-stackoverflow``; a corpus key's underscores become hyphens (``googlenews-ts``)."""
    return f"{method}-{dataset.replace('_', '-')}"


def _strongest_baselines(rows: list[dict]) -> dict[str, tuple[float, str]]:
    """Per corpus: the mean ACC and name of the strongest baseline, the one README's leaderboard in short names
    (:func:`~training.bench.leaderboard.strongest_baseline`)."""
    best = {}
    for dataset in sorted({r["dataset"] for r in rows}):
        strongest = strongest_baseline(rows, dataset)
        if strongest is not None:
            best[dataset] = strongest
    return best


def _recipe_steps(method: str, dataset: str) -> int | None:
    from hf_textcluster.runs.recipes import load_recipe

    return load_recipe(method, RECIPE, dataset)["training"].get("max_steps")


def published_clusterers(store: dict) -> list[dict]:
    """The clusterers the project would publish, one per method (registry order), each a dict with the stored
    ``row``, its ``run`` record (command, date, machine), the ``baseline`` (ACC, name) it is compared with and its
    repository ``name``. Only seed rows of the main configuration whose served partition was scored count."""
    rows = store["rows"]
    baselines = _strongest_baselines(rows)
    candidates: dict[str, list] = {}
    for r in rows:
        run = store["runs"].get(r.get("run"), {})
        if (
            r["section"] != "method"
            or r.get("variant")
            or r.get("encoder")
            or "served_acc" not in r
            or not r.get("served_by_default")
            or r["dataset"] not in baselines
            or any(option in run.get("command", "") for option in NOT_MAIN)
            or r.get("steps") != _recipe_steps(r["method"], r["dataset"])
        ):
            continue
        margin = r["served_acc"] - baselines[r["dataset"]][0]
        candidates.setdefault(r["method"], []).append((margin, r["dataset"], -(r.get("seed") or 0), r, run))
    chosen = []
    for method in sorted(candidates, key=method_order):
        _, dataset, _, row, run = max(candidates[method], key=lambda c: c[:3])
        chosen.append(
            {
                "row": row,
                "run": run,
                "partitions_run": store["runs"].get(row.get("partitions_run"), run),
                "baseline": baselines[dataset],
                "name": repo_name(method, dataset),
            }
        )
    return chosen


def _unbuilt_model(row: dict):
    """The model ``hf-textcluster train`` would produce for ``row``, as a configuration with random weights: what the
    card says about its configuration, serving and calibration, without the trained weights."""
    import numpy as np
    import torch
    from transformers import AutoConfig

    from hf_textcluster.data import CORPORA
    from hf_textcluster.editing import set_refined_head
    from hf_textcluster.encoders import resolve_encoder
    from hf_textcluster.modeling.configuration_utils import CONFIDENCE_MEASURES
    from hf_textcluster.models import METHODS
    from hf_textcluster.runs.recipes import load_recipe
    from hf_textcluster.training.arguments import ClusteringTrainingArguments

    spec = METHODS[row["method"]]
    plan = load_recipe(row["method"], RECIPE, row["dataset"])
    encoder = resolve_encoder(None)
    encoder_config = AutoConfig.from_pretrained(encoder.name_or_path)
    corpus = CORPORA[row["dataset"]]
    config = spec.config_class(
        encoder=encoder_config.to_dict(),
        num_clusters=corpus.num_labels,
        **{"pooling": encoder.pooling, **plan["config"]},
    )
    torch.manual_seed(0)
    model = spec.model_class(config)
    served = row["served_by_default"]
    if served.endswith("+refined") or served == "umap_kmeans":  # what `train` serves with a linear head
        with torch.no_grad():
            width = model.kmeans_features(torch.zeros(1, encoder_config.hidden_size)).shape[-1]
        set_refined_head(model, np.zeros((config.num_clusters, width)), np.zeros(config.num_clusters), served)
    else:
        model.config.served_partition = served
    default_sample = ClusteringTrainingArguments.__dataclass_fields__["calibration_sample_size"].default
    sample = plan["training"].get("calibration_sample_size", default_sample)
    model.config.num_calibration_texts = min(sample, corpus.num_rows)
    model.config.confidence_measure = CONFIDENCE_MEASURES[0]  # what `train` calibrates today
    return model, plan, corpus


def _training_run(row: dict, plan: dict, corpus, uses_views: bool):
    """The run record (``RunRecord``) the training command would write, with the stored scores of what it serves."""
    from hf_textcluster.encoders import DEFAULT_ENCODER
    from hf_textcluster.runs.record import RunRecord

    served = row["served_by_default"]
    partitions = row.get("partitions", {})
    metrics = {"acc": row["served_acc"], "nmi": row["served_nmi"]}
    if "ari" in partitions.get(served, {}):
        metrics["ari"] = partitions[served]["ari"]
    metrics.update({f"kmeans_{key}": row[f"kmeans_{key}"] for key in ("acc", "nmi", "ari") if f"kmeans_{key}" in row})
    return RunRecord(
        method=row["method"],
        dataset=row["dataset"],
        recipe=RECIPE,
        augmentation=plan.get("augmentation") if uses_views else None,
        encoder=DEFAULT_ENCODER,
        seed=row.get("seed") or 0,
        num_train_texts=corpus.num_rows,
        serving={
            "served": served,
            "criterion": row.get("selection_criterion"),
            "scores": {name: p["selection"] for name, p in partitions.items() if "selection" in p},
            "refinement": row.get("refinement") or {},
        },
        config_overrides={},
        training_overrides={},
        metrics=metrics,
    )


def provenance_section(entry: dict, repo_id: str) -> str:
    """Where the weights and the scores come from: the card is written from the benchmark store, before any weights."""
    row, run, scoring = entry["row"], entry["run"], entry.get("partitions_run")
    baseline_acc, baseline = entry["baseline"]
    name = entry["name"]

    from hf_textcluster.markup import escape_markdown, markdown_code

    def described(record: dict) -> str:
        return (
            f"{markdown_code(record.get('command', '?'))} ({escape_markdown(record.get('date', 'date not recorded'))}; "
            f"{escape_markdown(record.get('machine', 'machine not recorded'))})"
        )

    scored_by = (
        f"; its candidate partitions were scored by {described(scoring)}" if scoring and scoring is not run else ""
    )
    return "\n".join(
        [
            "## Where the weights come from",
            "",
            "This card was generated from the project's benchmark store (`python -m training.bench model-cards`), not "
            "from weights on the Hub: the weights are what the training command under *Training* produces "
            f"(`--output-dir runs/{name}`), and this repository holds them only once they are pushed "
            f"(`hf-textcluster push --model runs/{name} --repo-id {repo_id}`).",
            "",
            f"The scores under *Results* come from the benchmark run {described(run)}, which trained the same recipe "
            f"and seed (in {row['train_seconds']:.0f} s){scored_by}: the partition `train` serves, "
            f"`{row['served_by_default']}`, chosen without labels, and k-means on the trained embeddings. The "
            f"strongest baseline on {row['dataset']} "
            f"({baseline}) scores ACC {100 * baseline_acc:.1f}; this method's best "
            f"corpus by that margin is {row['dataset']}, which is why this clusterer is the one published for it.",
            "",
            "",
        ]
    )


def render_card(entry: dict, org: str = ORG) -> str:
    """The README.md of one published clusterer (see the module's docstring)."""
    from hf_textcluster.hub.model_card import generate_model_card
    from hf_textcluster.models import METHODS

    row = entry["row"]
    model, plan, corpus = _unbuilt_model(row)
    run = _training_run(row, plan, corpus, METHODS[row["method"]].uses_augmented_views)
    repo_id = f"{org}/{entry['name']}"
    card = generate_model_card(model, training_run=run, repo_id=repo_id, dataset_name=row["dataset"], remote_code=False)
    head, rest = card.split(PROVENANCE_BEFORE, 1)
    card = head + provenance_section(entry, repo_id) + PROVENANCE_BEFORE + rest
    return _clusters_before_training(card, entry, repo_id)


def _clusters_before_training(card: str, entry: dict, repo_id: str) -> str:
    """The card's *Clusters* section, which names the clusters of trained weights, says when they are listed: the
    card is written before the weights exist, so it has no clusters to name (not a table of ``cluster_<i>``)."""
    start = card.index(CLUSTERS_SECTION)
    end = card.index("\n## ", start + len(CLUSTERS_SECTION))
    text = (
        f"{CLUSTERS_SECTION}\n\nNot listed before the weights exist: each cluster's name and keywords come from the "
        "trained model's own partition. The training command under *Training* names every cluster after its "
        f"c-TF-IDF keywords, and `hf-textcluster push --model runs/{entry['name']} --repo-id {repo_id}` replaces this "
        "card with one that lists every cluster's name, size and keywords.\n"
    )
    return card[:start] + text + card[end:]


def render_index(entries: list[dict], org: str = ORG) -> str:
    """``model_cards/README.md``: the published clusterers and the rule that chose them."""
    lines = [
        "# The published clusterers",
        "",
        "Generated by `python -m training.bench model-cards` from `docs/results.json`; do not edit by hand "
        "(`make test` fails when these files differ from what the store gives). One clusterer per method: its main "
        "configuration (the `cpu` recipe, the default encoder) on the corpus where the partition "
        "`hf-textcluster train` serves is farthest above (or least below) the strongest baseline, the one the "
        "leaderboard in short of docs/benchmarks.md names (ACC; labels only score). "
        f"`{org}` is a placeholder organisation; the cards are written before any weights are pushed and say so.",
        "",
        "| repository | method | corpus | served partition | ACC | strongest baseline ACC | Δ | card |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for e in entries:
        row, (baseline_acc, baseline) = e["row"], e["baseline"]
        lines.append(
            f"| `{org}/{e['name']}` | {display_name(row['method'])} | {row['dataset']} | `{row['served_by_default']}` "
            f"| {100 * row['served_acc']:.1f} | {100 * baseline_acc:.1f} ({baseline}) "
            f"| {100 * (row['served_acc'] - baseline_acc):+.1f} | [{e['name']}]({e['name']}/README.md) |"
        )
    return "\n".join(lines) + "\n"


def write_cards(folder: str | os.PathLike = CARDS_DIR, store: dict | None = None, org: str = ORG) -> list[Path]:
    """Write ``<folder>/<name>/README.md`` for every published clusterer and ``<folder>/README.md``; a card of a
    clusterer no longer published is removed. Returns the files written."""
    import warnings

    folder = Path(folder)
    entries = published_clusterers(store if store is not None else load_store())
    if not entries:
        raise ValueError("The benchmark store has no method row with a scored served partition: no card to write.")
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "keywords not computed": the card says so itself
        for entry in entries:
            path = folder / entry["name"] / "README.md"
            path.parent.mkdir(exist_ok=True)
            path.write_text(render_card(entry, org), encoding="utf-8")
            written.append(path)
    index = folder / INDEX
    index.write_text(render_index(entries, org), encoding="utf-8")
    keep = {entry["name"] for entry in entries}
    for stale in folder.iterdir():
        if stale.is_dir() and stale.name not in keep and (stale / "README.md").is_file():
            shutil.rmtree(stale)
    return [index, *written]


def push_cards(org: str, store: dict | None = None, private: bool = False) -> list[str]:
    """Push each published clusterer's card, rendered for ``org``, as the README.md of ``<org>/<name>`` (the repository
    is created when missing; nothing else in it changes). Returns the repository ids."""
    from huggingface_hub import HfApi

    if not org or "/" in org:
        raise ValueError(f"`--org` must be an organisation or user name without '/', got {org!r}.")
    api = HfApi()
    pushed = []
    with tempfile.TemporaryDirectory() as tmp:
        write_cards(tmp, store, org)
        for card in sorted(Path(tmp).glob("*/README.md")):
            repo_id = f"{org}/{card.parent.name}"
            api.create_repo(repo_id, repo_type="model", private=private, exist_ok=True)
            api.upload_file(
                path_or_fileobj=str(card),
                path_in_repo="README.md",
                repo_id=repo_id,
                repo_type="model",
                commit_message="Model card from the benchmark store (python -m training.bench push-cards)",
            )
            pushed.append(repo_id)
    return pushed


def add_card_arguments(parser: argparse.ArgumentParser, push: bool) -> None:
    """``model-cards`` (``--output``) and ``push-cards`` (``--org``, ``--private``)."""
    if push:
        parser.add_argument("--org", required=True, help="The Hub organisation (or user) of the repositories.")
        parser.add_argument("--private", action="store_true", help="Create missing repositories as private.")
    else:
        parser.add_argument("--output", default=str(CARDS_DIR), help="The folder to write (default: model_cards/).")


def run_cards(args: argparse.Namespace) -> int:
    """``model-cards`` or ``push-cards``."""
    if args.section == "push-cards":
        for repo_id in push_cards(args.org, private=args.private):
            print(f"Pushed the card of {repo_id}")
        return 0
    for path in write_cards(args.output):
        print(f"Wrote {path}")
    return 0
