"""How quality moves with compute (``python -m training.bench compute-curve``): each training signal of ``train
--method auto`` alone at 1x, 3x, 10x... its ``cpu`` recipe's steps (10x SCCL's is the paper's 3,000 steps, at batch
64), every candidate partition scored (``partitions.partition_scores``: the label-free choice and the oracle), and
the label-free health checks during training kept, so a degeneration (the SCCL authors' warning about long training)
shows without labels as well as with them.

Every run keeps checkpoints (every tenth of its steps) in its run folder: a cut-off run resumes from its last one when
the same command runs again; ``--skip-done`` skips (corpus, seed, signal, scale) rows already stored.
"""

from __future__ import annotations

import argparse
import statistics
import time

from .common import add_corpus_arguments, cpu_kind, encoder_variant, mean_std, run_header
from .store import put_row, run_dir, save_store

SECTION = "compute-curve"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``compute-curve``: corpora, seeds, signals, step multipliers, resume."""
    add_corpus_arguments(parser)
    parser.add_argument(
        "--signals",
        nargs="+",
        default=["contrastive", "self_training"],
        help="Signals of train --method auto (hf_textcluster.runs.signals.SIGNALS).",
    )
    parser.add_argument(
        "--scales", nargs="+", type=float, default=[1, 3, 10], help="Multiples of the cpu recipe's steps."
    )
    parser.add_argument("--base-steps", type=int, default=None, help="Steps at scale 1 (default: the cpu recipe's).")
    parser.add_argument(
        "--encoder",
        default=None,
        help="A hub id or path instead of the default MiniLM; its short name joins the variant.",
    )
    parser.add_argument("--skip-done", action="store_true", help="Skip rows already stored (resume).")
    parser.add_argument(
        "--limit", type=int, default=None, help="Only N texts of each corpus (a quick check; use a scratch store)."
    )


def _variant(signal: str, scale: float, encoder: str | None, gpu: str, limit: int | None) -> str:
    """A row's name within its corpus and seed: the signal and scale, then what sets the run apart (another
    encoder, a GPU, a quick check on fewer texts), so that such rows never replace the CPU rows of the default."""
    parts = (f"{signal} x{scale:g}", encoder_variant(encoder), gpu, f"{limit} texts" if limit else "")
    return ", ".join(part for part in parts if part)


def run(args, store: dict, run_id: str) -> None:
    """Train every signal at every scale on every corpus and seed asked for; score every candidate; store a row each."""
    import torch

    from hf_textcluster.runs.api import train_clusterer
    from hf_textcluster.runs.recipes import load_recipe
    from hf_textcluster.runs.signals import SIGNALS

    from .partitions import partition_scores, summary_line
    from .precomputed import load_with_views

    unknown = sorted(set(args.signals) - set(SIGNALS))
    if unknown:
        raise SystemExit(f"error: --signals: unknown {unknown}; choose from {', '.join(SIGNALS)}.")
    done = {(r["dataset"], r.get("seed"), r.get("variant")) for r in store["rows"] if r["section"] == SECTION}
    machine = store["runs"][run_id]["machine"]
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else ""
    views = load_recipe(SIGNALS["contrastive"].method, "cpu", None).get("augmentation")
    for name in args.datasets:
        # the texts auto trains on: the contrastive signal's views joined once, no per-corpus setting
        dataset = load_with_views(name, views, data_dir=args.data_dir)
        if args.limit:
            dataset = dataset.shuffle(seed=0).select(range(min(args.limit, len(dataset))))
        for seed in args.seeds:
            for signal_name in args.signals:
                signal = SIGNALS[signal_name]
                plan = load_recipe(signal.method, "cpu", None)["training"]
                base = args.base_steps or plan["max_steps"]
                for scale in args.scales:
                    variant = _variant(signal_name, scale, args.encoder, gpu, args.limit)
                    if args.skip_done and (name, seed, variant) in done:
                        print(f"{name:15s} seed {seed} {variant}: stored already (--skip-done)", flush=True)
                        continue
                    steps = max(1, round(base * scale))
                    output_dir = str(run_dir(SECTION, name, seed, variant))
                    start = time.perf_counter()
                    result = train_clusterer(
                        signal.method,
                        dataset,
                        output_dir,
                        data_dir=args.data_dir,
                        seed=seed,
                        config_overrides=dict(signal.config),
                        training_overrides={
                            "max_steps": steps,
                            "serve": "head",
                            "disable_tqdm": True,
                            "logging_steps": max(1, steps // 20),
                        },
                        resume=True,  # checkpoints every tenth of the steps: a cut-off run continues
                        evaluate=False,
                        save=True,
                        encoder=args.encoder,
                        overwrite=True,
                    )
                    train_wall = time.perf_counter() - start
                    trainer = result.trainer
                    fields = partition_scores(
                        result.model, trainer.train_dataset["text"], trainer.train_dataset["label"], seed
                    )
                    row = {
                        "section": SECTION,
                        "method": signal.method,
                        "dataset": name,
                        "seed": seed,
                        "run": run_id,
                        "variant": variant,
                        "signal": signal_name,
                        "scale": scale,
                        **({"encoder": encoder_variant(args.encoder)} if args.encoder else {}),
                        **({"limit": args.limit} if args.limit else {}),
                        "steps": int(trainer.state.global_step),
                        "batch_size": int(trainer.args.per_device_train_batch_size),
                        "cpu_kind": cpu_kind(machine),
                        "train_seconds": round(result.train_seconds, 1),
                        "wall_seconds": round(train_wall, 1),
                        "health": trainer.health_history,  # label-free, during training
                        **fields,
                    }
                    put_row(store, row)
                    save_store(store)
                    print(f"{name:15s} seed {seed} {variant}: {summary_line(fields)}", flush=True)
                    del result, trainer
                    torch.manual_seed(0)


def _trained_on(store: dict, row: dict) -> str:
    """Where a row trained (its CPU kind or GPU) and, for another encoder than the default, that encoder's name."""
    kind = row.get("cpu_kind") or cpu_kind(store.get("runs", {}).get(row.get("run"), {}).get("machine", ""))
    return f"{kind}, {row['encoder']}" if row.get("encoder") else kind


def render(store: dict, rows: list[dict]) -> list[str]:
    """Per corpus, signal and processor: the head, the label-free choice and the oracle at each scale."""
    curve = [r for r in rows if r["section"] == SECTION and not r.get("limit") and "texts" not in r.get("variant", "")]
    if not curve:
        return []
    out = [
        "## How quality moves with compute",
        "",
        "Each signal of `train --method auto` alone at multiples of its `cpu` recipe's steps (batch as the recipe);",
        "*served* = the label-free choice among its candidates, *oracle* = the best candidate by ACC (**chosen with",
        "labels**). ACC in %, mean over seeds. *Trained on* names the processor (a GPU run used the default MiniLM",
        "with its weights rounded to fp16 and back, `all-MiniLM-L6-v2-fp16`, to fit the transfer to that machine; it",
        "ran there as `python training/accelerator/run_paper.py --bench compute-curve -- <the arguments below>`).",
        "†: another job shared the CPU, so the time is inflated.",
        "",
        "| dataset | signal | × steps | steps | trained on | head ACC | served ACC (candidate) | oracle ACC (labels) "
        "| train s | seeds |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple, list[dict]] = {}
    for r in curve:
        groups.setdefault((r["dataset"], r["signal"], r["scale"], _trained_on(store, r)), []).append(r)
    for (dataset, signal, scale, where), d in sorted(groups.items(), key=lambda item: item[0]):
        head = [r["partitions"]["head"]["acc"] for r in d if "head" in r["partitions"]]
        served = sorted({r["served_by_default"] for r in d})
        out.append(
            f"| {dataset} | {signal} | {scale:g} | {d[0]['steps']} | {where} | {mean_std(head) if head else '–'} "
            f"| {mean_std([r['served_acc'] for r in d])} ({', '.join(served)}) "
            f"| {mean_std([r['oracle_acc'] for r in d])} | {statistics.mean(r['train_seconds'] for r in d):.0f}"
            f"{'†' if any('inflated' in r.get('note', '') for r in d) else ''} "
            f"| {len(d)} |"
        )
    return [*out, "", *run_header(store, curve), ""]
