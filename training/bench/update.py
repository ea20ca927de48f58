"""Keeping up with new texts (``hf_textcluster.editing.update``): a model trained on 70% of a corpus with one class
held out of it entirely, updated with the other 30% in batches, against retraining from scratch on every text; and
whether the held-out class comes back as the proposed new cluster."""

from __future__ import annotations

import argparse
import time

import numpy as np

from .common import add_corpus_arguments, key_values, mean_std, run_header
from .store import put_row, run_dir, save_store, select_rows

SECTION = "update"
TRAIN_SHARE = 0.7


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``update``: the corpora, seeds, method, recipe, how many update batches; small runs for checks."""
    add_corpus_arguments(parser)
    parser.add_argument("--method", default="sccl", help="The method trained (default sccl).")
    parser.add_argument("--recipe", default="cpu", help="Its recipe (default cpu).")
    parser.add_argument("--batches", type=int, default=3, help="The 30%% comes in this many batches (default 3).")
    parser.add_argument("--encoder", help="Another encoder (default: the pip-shipped MiniLM).")
    parser.add_argument("--max-steps", type=int, help="Cut training to this many steps (checks only).")
    parser.add_argument("--limit", type=int, help="Use only this many texts of each corpus (checks only).")
    parser.add_argument(
        "--training", nargs="*", default=[], metavar="KEY=JSON", help="TrainingArguments overrides (checks only)."
    )
    parser.add_argument("--redo", action="store_true", help="Measure again the corpora and seeds already stored.")
    parser.add_argument(
        "--retrain",
        action="store_true",
        help="Train again even where runs/bench keeps a finished model of the same method, recipe, seed, K and texts "
        "(by default it is loaded: measuring another update rule costs no training).",
    )


def held_out_class(labels: np.ndarray) -> int:
    """The class held out of training: the one of median size (the lower median; ties: the smaller id). A fixed
    rule, the same on every corpus."""
    classes, sizes = np.unique(labels, return_counts=True)
    order = np.lexsort((classes, sizes))
    return int(classes[order[(len(order) - 1) // 2]])


def split_for_update(labels: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(training rows, update rows, held-out class): a seeded 70 / 30 split of every text, the held-out class's
    texts then dropped from the 70% (they arrive only with the updates)."""
    held = held_out_class(labels)
    order = np.random.default_rng(seed).permutation(labels.shape[0])
    cut = int(round(TRAIN_SHARE * labels.shape[0]))
    train, later = np.sort(order[:cut]), np.sort(order[cut:])
    return train[labels[train] != held], later, held


def new_cluster_scores(final: np.ndarray, new_ids: list[int], held_rows: np.ndarray) -> tuple[float, float]:
    """Precision and recall of the held-out class's texts (``held_rows``, a mask) in the new cluster that holds most of
    them (0, 0 when no cluster was added)."""
    if not new_ids:
        return 0.0, 0.0
    best = max(new_ids, key=lambda k: int(((final == k) & held_rows).sum()))
    hits = int(((final == best) & held_rows).sum())
    return hits / max(int((final == best).sum()), 1), hits / max(int(held_rows.sum()), 1)


def _kept_model(method, dataset, output_dir, args, seed, num_clusters):
    """The model a finished earlier run left in ``output_dir`` when it is this run (method, recipe, seed, K, the
    texts, the default schedule), or None."""
    from hf_textcluster.runs.folder import RunFolder, load_clusterer
    from hf_textcluster.runs.record import texts_sha1

    folder = RunFolder(output_dir)
    if args.retrain or args.max_steps or args.training or args.encoder or not folder.holds_trained_model():
        return None
    identity, record = folder.read_identity() or {}, folder.read_record()
    same = (
        identity.get("texts_sha1") == texts_sha1(dataset["text"])
        and (num_clusters is None or identity.get("num_clusters") == num_clusters)
        and record is not None
        and (record.method, record.recipe, record.seed) == (method, args.recipe, seed)
    )
    return load_clusterer(output_dir) if same else None


def _train(method, dataset, output_dir, args, seed, num_clusters):
    from hf_textcluster.runs.api import train_clusterer

    kept = _kept_model(method, dataset, output_dir, args, seed, num_clusters)
    if kept is not None:
        print(f"{output_dir}: the finished run kept there is loaded (--retrain to train again)", flush=True)
        return kept, None
    overrides = {"save_strategy": "no", "disable_tqdm": True, "logging_steps": 100}
    if args.max_steps:
        overrides["max_steps"] = args.max_steps
    overrides.update(key_values(args.training))
    start = time.perf_counter()
    result = train_clusterer(
        method,
        dataset,
        str(output_dir),
        recipe=args.recipe,
        seed=seed,
        encoder=args.encoder,
        num_clusters=num_clusters,
        training_overrides=overrides,
        resume=False,
        evaluate=False,
        overwrite=True,
    )
    return result.model, time.perf_counter() - start


def run(args, store: dict, run_id: str) -> None:
    """Per corpus and seed: train on the 70% without the held-out class (K = the classes it has), ``start_online`` on
    those texts, ``update(batch, accept_new=True)`` batch after batch with the 30%, then score every text; retrain on
    every text (K = all classes) and score it; store one row."""
    from hf_textcluster.data import load_benchmark
    from hf_textcluster.editing import start_online, update
    from hf_textcluster.evaluation.metrics import clustering_scores
    from hf_textcluster.runs.recipes import load_recipe

    from .precomputed import load_with_views

    for name in args.datasets:
        family = load_recipe(args.method, args.recipe, name).get("augmentation")
        try:
            corpus = load_with_views(name, family, data_dir=args.data_dir)
        except (ValueError, FileNotFoundError):  # no precomputed views here: the recipe's augmenter on the fly
            corpus = load_benchmark(name, data_dir=args.data_dir)
        if args.limit and args.limit < len(corpus):
            corpus = corpus.select(np.sort(np.random.default_rng(0).permutation(len(corpus))[: args.limit]))
        labels = np.asarray(corpus["label"])
        texts = list(corpus["text"])
        for seed in args.seeds:
            if not args.redo and select_rows(store, SECTION, method=args.method, dataset=name, seed=seed):
                print(f"{name} seed {seed}: stored (--redo to measure again)", flush=True)
                continue
            train_rows, later, held = split_for_update(labels, seed)
            k_train = int(np.unique(labels[train_rows]).size)
            folder = run_dir(args.method, name, seed, "update")
            model, train_seconds = _train(args.method, corpus.select(train_rows), folder, args, seed, k_train)
            start = time.perf_counter()
            start_online(model, [texts[i] for i in train_rows])
            new_ids, proposed_in = [], []
            for b, rows in enumerate(np.array_split(later, args.batches)):
                result = update(model, [texts[i] for i in rows], accept_new=True)
                if result.accepted:
                    new_ids.append(result.new_cluster)
                    proposed_in.append(b)
            update_seconds = time.perf_counter() - start
            final = model.predict(texts)
            updated = clustering_scores(labels, final)
            precision, recall = new_cluster_scores(final, new_ids, labels == held)
            retrained_model, retrain_seconds = _train(
                args.method, corpus, run_dir(args.method, name, seed, "update retrained"), args, seed, None
            )
            retrained = clustering_scores(labels, retrained_model.predict(texts))
            row = {
                "section": SECTION,
                "method": args.method,
                "dataset": name,
                "seed": seed,
                "run": run_id,
                "k": int(np.unique(labels).size),
                "held_out_class": held,
                "batches": args.batches,
                "acc": updated["acc"],
                "nmi": updated["nmi"],
                "retrained_acc": retrained["acc"],
                "retrained_nmi": retrained["nmi"],
                "new_clusters": len(new_ids),
                "first_new_batch": proposed_in[0] if proposed_in else None,
                "precision": precision,
                "recall": recall,
                "update_seconds": round(update_seconds, 1),
            }
            for key, seconds in (("train_seconds", train_seconds), ("retrain_seconds", retrain_seconds)):
                if seconds is not None:  # None: a kept run was loaded, not trained
                    row[key] = round(seconds, 1)
            if args.limit or args.max_steps or args.encoder or args.training:
                row["variant"] = "check run"  # a small run, kept out of the table
            put_row(store, row)
            save_store(store)
            print(
                f"{name:15s} seed {seed}: updated ACC {100 * updated['acc']:.1f} vs retrained "
                f"{100 * retrained['acc']:.1f}; held-out class {held}: {len(new_ids)} new cluster(s), precision "
                f"{precision:.2f} recall {recall:.2f}",
                flush=True,
            )


def render(store: dict, rows: list[dict]) -> list[str]:
    """One line per method and corpus."""
    urows = [r for r in rows if r["section"] == SECTION and not r.get("variant")]
    if not urows:
        return []
    out = (
        ["## Keeping up with new texts (`update`)", ""]
        + run_header(store, urows)
        + [
            "",
            "Trained (the `cpu` recipe) on 70% of a corpus with one class held out of it entirely (the class of median",
            "size), then `update(batch, accept_new=True)` with the other 30% in batches: the centres move by running",
            "means, and a cohesive group of texts far from their nearest cluster, grown by k-means steps and as",
            "distinct as the existing clusters are, is added as a new cluster. *updated*: ACC / NMI on every text",
            "afterwards; *retrained*: the same method",
            "trained from scratch on every text. *precision / recall*: of the held-out class's texts in the added",
            "cluster that holds most of them. A row whose finished trainings were kept in runs/bench loads them",
            "instead of training again, and leaves its training times out.",
            "",
            "| method | dataset | K | updated ACC / NMI | retrained ACC / NMI | new clusters | precision | recall | "
            "seeds |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
    )
    from hf_textcluster.data import BENCHMARKS

    for method in sorted({r["method"] for r in urows}):
        for name in BENCHMARKS:
            d = [r for r in urows if r["method"] == method and r["dataset"] == name]
            if not d:
                continue
            cell = lambda key, d=d: mean_std([r[key] for r in d])  # noqa: E731
            out.append(
                f"| {method} | {name} | {d[0]['k']} | {cell('acc')} / {cell('nmi')} | {cell('retrained_acc')} / "
                f"{cell('retrained_nmi')} | {np.mean([r['new_clusters'] for r in d]):.1f} | "
                f"{np.mean([r['precision'] for r in d]):.2f} | {np.mean([r['recall'] for r in d]):.2f} | {len(d)} |"
            )
    return out + [""]
