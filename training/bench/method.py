"""Train a registered method (``python -m training.bench <method>``) on corpora x seeds and score what it serves:
the head, k-means after, UMAP k-means after, against k-means before (the same run's initialisation). Its sections
in docs/results.md: one per method and variant, and "Side by side"."""

from __future__ import annotations

import argparse
import textwrap
import time

from .capabilities import serving_modes, topics_by_cluster
from .common import (
    TRAIN_TIME_LEGEND,
    add_corpus_arguments,
    default_baselines,
    display_name,
    encoder_variant,
    gain,
    key_values,
    mean_std,
    method_order,
    methods,
    paper_cell,
    paper_purity_cell,
    run_header,
    train_time,
)
from .partitions import partition_scores, summary_line
from .store import put_row, run_dir, save_store


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``<method>``: the corpora, seeds, recipe, variant label, encoder and the overrides of the configuration."""
    add_corpus_arguments(parser)
    parser.add_argument("--recipe", default="cpu")
    parser.add_argument("--variant", default="", help="A label for this configuration in the tables.")
    parser.add_argument(
        "--encoder",
        default=None,
        help="A hub id or path instead of the default MiniLM (e.g. sentence-transformers/all-mpnet-base-v2, "
        "pip-shipped with the mpnet-encoder extra); its short name becomes the variant.",
    )
    parser.add_argument("--augmentation", default=None)
    parser.add_argument("--max-steps", type=int, default=None)
    parser.add_argument(
        "--training",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="A TrainingArguments override (JSON value), e.g. max_grad_norm=0.",
    )
    parser.add_argument(
        "--held-out",
        action="store_true",
        help="Train on the paper's train split, score on its held-out test split (sizes: the registry).",
    )
    parser.add_argument(
        "--skip-done",
        action="store_true",
        help="Skip (dataset, seed) runs of this method and variant already in results.json (resume).",
    )
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Model config override (JSON value), e.g. mlm_loss_weight=0 for DEC-MLM's ablation.",
    )
    parser.add_argument(
        "--no-partitions",
        action="store_true",
        help="Skip scoring every candidate partition (refined ones, the label-free choice, the oracle).",
    )


def run(args, store: dict, run_id: str) -> None:
    """Train ``args.section`` (a registered method) on every corpus and seed, keep the model, store one row per run."""
    import torch

    from hf_textcluster.data import CORPORA
    from hf_textcluster.evaluation.metrics import clustering_scores
    from hf_textcluster.runs.api import train_clusterer
    from hf_textcluster.runs.baselines import EmbeddingKMeans
    from hf_textcluster.runs.folder import record_metrics
    from hf_textcluster.training.evaluation import evaluate_clusterer

    from .precomputed import training_data

    spec = methods()[args.section]
    variant = ", ".join(v for v in (args.variant, encoder_variant(args.encoder)) if v)
    if args.held_out:
        missing = [name for name in args.datasets if name not in spec.paper_test_sizes]
        if missing:
            raise SystemExit(
                f"error: --held-out: the {spec.display_name} paper gives no test split for {missing} "
                f"(it has {sorted(spec.paper_test_sizes) or 'none'})."
            )
        variant = f"{variant}, held-out split" if variant else "held-out split"
    # serve="head": the kept model serves its trained head, so the head columns stay the paper's output; the partition
    # the label-free choice would serve is scored beside it (partitions.partition_scores), with every candidate.
    overrides = {"save_strategy": "no", "disable_tqdm": True, "logging_steps": 100, "serve": "head"}
    if args.max_steps:
        overrides["max_steps"] = args.max_steps
    overrides.update(key_values(args.training))
    # A row stored before candidate partitions were scored is not done when they are asked for.
    done = {
        (r["dataset"], r.get("seed"))
        for r in store["rows"]
        if r["section"] == "method"
        and r["method"] == args.section
        and r.get("variant", "") == variant
        and (args.no_partitions or "partitions" in r)
    }
    for name in args.datasets:
        for seed in args.seeds:
            if args.skip_done and (name, seed) in done:
                print(f"{name:15s} seed {seed} {args.section}: stored already (--skip-done)", flush=True)
                continue
            output_dir = str(run_dir(args.section, name, seed, variant))
            # the recipe's precomputed views (or --augmentation's) joined here: the package reads no such files
            data, augmentation = training_data(
                args.section, name, args.augmentation or "recipe", args.recipe, args.data_dir
            )
            result = train_clusterer(
                args.section,
                data,
                output_dir,
                data_dir=args.data_dir,
                recipe=args.recipe,
                seed=seed,
                augmentation=augmentation,
                training_overrides=overrides,
                config_overrides=key_values(args.config),
                resume=False,
                evaluate=False,
                save=True,
                encoder=args.encoder,
                overwrite=True,  # a rerun replaces its own row's run
                test_size=spec.paper_test_sizes[name] if args.held_out else None,
            )
            trainer = result.trainer
            scored = result.test_dataset if result.test_dataset is not None else trainer.train_dataset
            if result.test_dataset is None:
                baseline = clustering_scores(trainer.train_dataset["label"], trainer.initial_kmeans_labels)
            else:  # the held-out texts were not in the centroid initialisation: MiniLM+k-means on them instead
                k = trainer.model.config.num_clusters
                baseline = clustering_scores(
                    scored["label"],
                    EmbeddingKMeans(k, random_state=seed, show_progress_bar=False).fit_predict(scored["text"]),
                )
            start = time.perf_counter()
            metrics = evaluate_clusterer(
                result.model,
                scored["text"],
                scored["label"],
                batch_size=128,
                random_state=seed,
                precision=trainer.precision,
                umap_kmeans=True,
            )
            row = {
                "section": "method",
                "method": args.section,
                "dataset": name,
                "seed": seed,
                "run": run_id,
                "variant": variant,
                "encoder": args.encoder,
                "train_seconds": round(result.train_seconds, 1),
                "eval_seconds": round(time.perf_counter() - start, 1),
                "steps": trainer.state.global_step,
                "batch_size": trainer.args.per_device_train_batch_size,
                "augmentation": result.trainer.train_dataset.info.description or args.augmentation or "recipe",
                **{f"init_kmeans_{k}": v for k, v in baseline.items()},
                **metrics,
            }
            if result.model.config.has_topic_model:
                row["topics"] = topics_by_cluster(result.model, trainer.train_dataset)
            if trainer.health_history:  # label-free checks during training (agreement with k-means, sizes)
                row["health"] = trainer.health_history
            if getattr(trainer, "stage_metrics", None):  # ClusterBERT: scores after each stage (its Figure 3)
                row["stages"] = trainer.stage_metrics
            if hasattr(result.model.config, "serving_attention"):
                row.update(serving_modes(result.model, scored, trainer.args.per_device_train_batch_size, seed))
            if not args.no_partitions:  # every candidate partition, the label-free choice and the oracle
                row.update(partition_scores(result.model, scored["text"], scored["label"], seed))
            if result.test_dataset is not None:
                row["note"] = f"trained on {len(trainer.train_dataset):,}, scored on {len(scored):,} held-out texts"
            elif len(trainer.train_dataset) != CORPORA[name].num_rows:
                row["note"] = "rows from the augmented file"
            # the run's losses per step are its trainer_state.json (training/figures.py); its command is the store's
            record_metrics(output_dir, {f"eval_{k}": v for k, v in metrics.items()})
            put_row(store, row)
            save_store(store)
            print(
                f"{name:15s} seed {seed} {args.section}: head ACC {100 * metrics['acc']:.1f} NMI "
                f"{100 * metrics['nmi']:.1f}"
                f" | k-means on trained ACC {100 * metrics['kmeans_acc']:.1f} NMI {100 * metrics['kmeans_nmi']:.1f}"
                f" | k-means before ACC {100 * baseline['acc']:.1f} NMI {100 * baseline['nmi']:.1f}"
                + (f" | {summary_line(row)}" if "partitions" in row else ""),
                flush=True,
            )
            del result, trainer
            torch.manual_seed(0)


def render_side_by_side(rows: list[dict]) -> list[str]:
    """One table, every method beside the MiniLM + k-means baseline, per corpus (means over seeds)."""
    from hf_textcluster.data import BENCHMARKS

    method_rows = [r for r in rows if r["section"] == "method"]
    if not method_rows:
        return []
    configurations = sorted(
        {(r["method"], r.get("variant", "")) for r in method_rows}, key=lambda mv: (method_order(mv[0]), mv[1])
    )
    out = [
        "## Side by side",
        "",
        "Means over seeds, from the sections above. *Δ ACC* / *Δ purity* = the head's minus k-means before, measured",
        "in the same run (same seed, same pooling): the fair gain of training; *MiniLM+k-means* is the baseline "
        "section's",
        "(L2-normalised embeddings, 10 restarts), for reference.",
        "",
        "| dataset | method | head ACC | head NMI | purity | Δ ACC | Δ purity | k-means after ACC | NMI | seeds |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in BENCHMARKS:
        if not any(r["dataset"] == name for r in method_rows):
            continue
        base = [r for r in default_baselines(rows) if r["method"] == "embeddings-kmeans" and r["dataset"] == name]
        if base:
            out.append(
                f"| {name} | MiniLM+k-means | {mean_std([r['acc'] for r in base])} | "
                f"{mean_std([r['nmi'] for r in base])}"
                f" | {mean_std([r['purity'] for r in base]) if all('purity' in r for r in base) else '–'} | | | | | "
                f"{len(base)} |"
            )
        for method, variant in configurations:
            drows = [
                r for r in method_rows if (r["method"], r.get("variant", ""), r["dataset"]) == (method, variant, name)
            ]
            if not drows:
                continue
            label = display_name(method) + (f" ({variant})" if variant else "")
            out.append(
                f"| {name} | {label} | {mean_std([r['acc'] for r in drows])} | {mean_std([r['nmi'] for r in drows])}"
                f" | {mean_std([r['purity'] for r in drows])} | {gain(drows, 'acc')} | {gain(drows, 'purity')}"
                f" | {mean_std([r['kmeans_acc'] for r in drows])} | {mean_std([r['kmeans_nmi'] for r in drows])} | "
                f"{len(drows)} |"
            )
    out.append("")
    return out


def render(store: dict, rows: list[dict]) -> list[str]:
    """One section per method and variant: k-means before, head, k-means after, the paper's numbers, time."""
    from hf_textcluster.data import BENCHMARKS

    out = []
    method_rows = [r for r in rows if r["section"] == "method"]
    for method in sorted({r["method"] for r in method_rows}, key=method_order):
        mrows = [r for r in method_rows if r["method"] == method]
        for variant in sorted({r.get("variant", "") for r in mrows}):
            vrows = [r for r in mrows if r.get("variant", "") == variant]
            out += [f"## {display_name(method)}{f' ({variant})' if variant else ''}", ""]
            out += run_header(store, vrows) + [""]
            note = methods()[method].paper_note if method in methods() else ""
            if note and not variant:
                out += [*textwrap.wrap(note, 110, break_on_hyphens=False), ""]
            notes = sorted({r["note"] for r in vrows if r.get("note", "").startswith("trained on")})
            if notes:  # --held-out
                out += [
                    "Trained on the paper's training split and scored on its held-out test split (sizes from the",
                    "paper; which texts is not published: a stratified split of ours, the same for every seed): "
                    + "; ".join(notes)
                    + ". *k-means before* = MiniLM+k-means on the held-out texts.",
                    "",
                ]
            out += [
                "*k-means before* = k-means (seeded) on the same encoder's embeddings with the method's pooling, "
                "before",
                "training (the centroid initialisation, same run). *head* = argmax of the trained cluster head. "
                "*k-means",
                "after* = k-means on the trained embeddings (the protocol of the SCCL paper's headline numbers). "
                "*purity*",
                "is the head's (DEC-MLM's metric).",
                *textwrap.wrap(TRAIN_TIME_LEGEND, 110),
                "",
            ]
            # a paper that reports purity (DEC-MLM's) is compared in purity too: k-means before's and the paper's
            purities = bool(methods()[method].paper_purity) if method in methods() else False
            out += [
                "| dataset | k-means before ACC | NMI | head ACC | NMI | purity | k-means after ACC | NMI | paper "
                "ACC "
                f"| NMI |{' k-means before purity | paper purity |' * purities} steps × batch | train (s) | seeds |",
                "|---|---|---|---|---|---|---|---|---|---|" + "---|---|" * purities + "---|---|---|",
            ]
            for name in BENCHMARKS:
                drows = [r for r in vrows if r["dataset"] == name]
                if not drows:
                    continue
                out.append(
                    f"| {name} | {mean_std([r['init_kmeans_acc'] for r in drows])} | "
                    f"{mean_std([r['init_kmeans_nmi'] for r in drows])}"
                    f" | {mean_std([r['acc'] for r in drows])} | {mean_std([r['nmi'] for r in drows])}"
                    f" | {mean_std([r['purity'] for r in drows])}"
                    f" | {mean_std([r['kmeans_acc'] for r in drows])} | {mean_std([r['kmeans_nmi'] for r in drows])}"
                    f" | {paper_cell(method, name, 0)} | {paper_cell(method, name, 1)}"
                    + (
                        f" | {mean_std([r['init_kmeans_purity'] for r in drows])} | {paper_purity_cell(method, name)}"
                        * purities
                    )
                    + f" | {drows[0]['steps']} × {drows[0]['batch_size']} | {train_time(store, drows)} | {len(drows)} |"
                )
            out.append("")
            other_notes = [
                (r["dataset"], r.get("seed"), r["note"])
                for r in vrows
                if r.get("note") and not r["note"].startswith(("trained on", "rows from"))
            ]
            if other_notes:
                out += [f"- {name}, seed {seed}: {note}" for name, seed, note in sorted(other_notes)] + [""]
    return out
