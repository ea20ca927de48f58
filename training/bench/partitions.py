"""Which partition to serve: every candidate partition of a trained model (its head, k-means after, UMAP k-means
after, each refined or not, as ``hf_textcluster.choosing.serving`` serves them), the one the label-free choice
serves, and the oracle (the candidate with the highest ACC: chosen with labels, so out of a user's reach).

``python -m training.bench partitions`` adds these columns to the rows of method runs whose model was kept
(``store.run_dir``), without training again, and stores the shallow baselines refined (MiniLM + k-means and the
BERTopic way at the true K, each refined) as baseline rows; a method run made since this section exists scores its
partitions as it trains (``method.run``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from .common import (
    add_corpus_arguments,
    by_method_and_dataset,
    default_baselines,
    display_name,
    mean_std,
    method_order,
)
from .store import put_row, run_dir, save_store

# The refined shallow baselines (section "baselines"): MiniLM + k-means and the BERTopic way at the true K, refined.
REFINED_BASELINES = {
    "embeddings-kmeans+refined": "MiniLM + k-means, refined",
    "bertopic-kmeans+refined": "BERTopic way, true K, refined",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``partitions``: the corpora, seeds and methods whose kept runs are scored, and which parts run."""
    add_corpus_arguments(parser)
    parser.add_argument("--methods", nargs="+", default=None, help="Only these methods' kept runs (default: all).")
    parser.add_argument(
        "--parts",
        nargs="+",
        default=["methods", "baselines"],
        choices=["methods", "baselines"],
        help="methods: the partitions of kept method runs; baselines: the shallow baselines refined.",
    )
    parser.add_argument("--force", action="store_true", help="Score rows that have partition columns again.")


def partition_scores(model, texts, labels, seed: int) -> dict:
    """Every candidate partition of ``texts`` as ``model`` would serve it, scored against ``labels``, with the
    label-free
    choice and the oracle: the fields a method row gets.

    Args:
        model: a trained clusterer serving its head (the benchmark trains with ``serve="head"``).
        texts: the texts to partition (the training texts, or the held-out split).
        labels: their classes (scoring only).
        seed: seed of k-means, UMAP, refinement and the selection criterion (the run's seed, as ``train`` uses it).

    Returns:
        ``partitions`` (candidate -> ACC / NMI / ARI / purity and the criterion's value), ``refinement`` (what refining
        each candidate did), ``served_by_default`` / ``served_acc`` / ``served_nmi`` (the label-free choice),
        ``oracle`` / ``oracle_acc`` / ``oracle_nmi`` (the best ACC, chosen with labels), ``selection_criterion`` and
        ``partitions_seconds``.
    """
    import torch

    from hf_textcluster.choosing.candidate_choice import DEFAULT_SERVE_CRITERION as DEFAULT_CRITERION
    from hf_textcluster.choosing.candidate_choice import choose_partition
    from hf_textcluster.choosing.serving import candidate_partitions, refinement_records
    from hf_textcluster.evaluation.metrics import clustering_scores

    from .criteria import SERVE_RECORDED as CRITERIA
    from .criteria import score_all

    start = time.perf_counter()
    embeddings = model.embed(list(texts), batch_size=128)
    partitions, how = candidate_partitions(model, embeddings, random_state=seed)
    with torch.no_grad():  # the space the choice ranks in, as serving.serve_partition ranks
        features = model.kmeans_features(torch.from_numpy(np.asarray(embeddings, dtype=np.float32)).to(model.device))
    features = features.float().cpu().numpy()
    served, criterion_values = choose_partition(features, partitions, random_state=seed)
    # every other criterion's values too (the UMAP one aside: a UMAP fit of its own), so that criteria can be
    # compared on trained models after the fact, without labels entering the choice
    others = {
        criterion: score_all(features, partitions, criterion, random_state=seed)
        for criterion in CRITERIA
        if criterion not in (DEFAULT_CRITERION, "silhouette_umap")
    }
    labels = np.asarray(labels)
    scored = {
        name: {
            **clustering_scores(labels, predicted),
            "selection": round(float(criterion_values[name]), 6),
            "criteria": {c: round(float(v[name]), 6) if np.isfinite(v[name]) else None for c, v in others.items()},
        }
        for name, predicted in partitions.items()
    }
    oracle = max(scored, key=lambda name: (scored[name]["acc"], -list(scored).index(name)))
    refinement = refinement_records(how)
    return {
        "partitions": scored,
        "refinement": refinement,
        "selection_criterion": DEFAULT_CRITERION,
        "served_by_default": served,
        "served_acc": scored[served]["acc"],
        "served_nmi": scored[served]["nmi"],
        "oracle": oracle,
        "oracle_acc": scored[oracle]["acc"],
        "oracle_nmi": scored[oracle]["nmi"],
        "partitions_seconds": round(time.perf_counter() - start, 1),
    }


def run(args, store: dict, run_id: str) -> None:
    """Refined shallow baselines per corpus and seed, then the partition columns of every kept method run asked for."""
    if "baselines" in args.parts:
        run_refined_baselines(args, store, run_id)
    if "methods" in args.parts:
        run_kept_models(args, store, run_id)


def run_refined_baselines(args, store: dict, run_id: str) -> None:
    """MiniLM + k-means and the BERTopic way at the true K (UMAP -> k-means), each refined, as baseline rows."""
    from sklearn.cluster import KMeans

    from hf_textcluster.choosing.refinement import refine_partition
    from hf_textcluster.data import load_benchmark
    from hf_textcluster.evaluation.metrics import clustering_scores
    from hf_textcluster.runs.baselines import EmbeddingKMeans

    from .auto_k import bertopic_umap

    for name in args.datasets:
        dataset = load_benchmark(name, data_dir=args.data_dir)
        labels, k = np.asarray(dataset["label"]), dataset.features["label"].num_classes
        start = time.perf_counter()
        embeddings = EmbeddingKMeans(k, show_progress_bar=False).embed(dataset["text"])  # the baselines' code path
        embed_seconds = time.perf_counter() - start
        for seed in args.seeds:
            for method in REFINED_BASELINES:
                start = time.perf_counter()
                space = bertopic_umap(seed).fit(embeddings).embedding_ if method.startswith("bertopic") else embeddings
                before = KMeans(k, n_init=10, random_state=seed).fit_predict(space)
                # refined on the embeddings, as a model's candidates are (the UMAP space only found the start)
                result = refine_partition(embeddings, before, num_clusters=k, random_state=seed)
                predicted = result.predict(embeddings)
                scores = clustering_scores(labels, predicted)
                put_row(
                    store,
                    {
                        "section": "baselines",
                        "method": method,
                        "dataset": name,
                        "seed": seed,
                        "run": run_id,
                        "seconds": round(time.perf_counter() - start + embed_seconds, 2),
                        **scores,
                        "unrefined_acc": clustering_scores(labels, before)["acc"],
                        "refinement": {
                            "rounds": int(result.rounds),
                            "changed": round(float(result.changed), 4),
                            "declined": bool(result.declined),
                            "reason": result.reason,
                        },
                    },
                )
                print(
                    f"{name:15s} seed {seed} {method:26s} ACC {100 * scores['acc']:.1f} NMI {100 * scores['nmi']:.1f} "
                    f"(before refinement ACC {100 * clustering_scores(labels, before)['acc']:.1f})",
                    flush=True,
                )
            save_store(store)


def run_kept_models(args, store: dict, run_id: str) -> None:
    """Add the partition columns to the rows of method runs whose model was kept (stored numbers are not changed; a
    model whose head no longer gives the stored ACC on the same texts is left alone)."""
    import math

    from transformers import AutoModel

    from hf_textcluster.evaluation.metrics import clustering_scores

    from .precomputed import prepare_views

    rows = [
        r
        for r in store["rows"]
        if r["section"] == "method"
        and r["dataset"] in args.datasets
        and r.get("seed") in args.seeds
        and (not args.methods or r["method"] in args.methods)
    ]
    for row in rows:
        label = f"{row['dataset']:15s} seed {row['seed']} {row['method']} {row.get('variant') or ''}".rstrip()
        directory = run_dir(row["method"], row["dataset"], row["seed"], row.get("variant", ""))
        if "partitions" in row and not args.force:
            print(f"{label}: skipped (has partition columns)", flush=True)
            continue
        if "held-out" in row.get("variant", ""):  # scored on a split this pass would have to rebuild
            print(f"{label}: skipped (held-out split)", flush=True)
            continue
        if not (directory / "training_run.json").exists():
            print(f"{label}: skipped (no kept model)", flush=True)
            continue
        run_info = json.loads((directory / "training_run.json").read_text())
        dataset = prepare_views(row["dataset"], run_info.get("augmentation"), data_dir=args.data_dir, seed=row["seed"])
        model = AutoModel.from_pretrained(str(directory))
        head = clustering_scores(dataset["label"], model.predict(dataset["text"], batch_size=128))
        if not math.isclose(head["acc"], row["acc"], abs_tol=1e-3):
            print(f"{label}: skipped (head ACC {head['acc']:.4f} here, {row['acc']:.4f} stored)", flush=True)
            continue
        fields = partition_scores(model, dataset["text"], dataset["label"], row["seed"])
        put_row(store, {**row, **fields, "partitions_run": run_id})
        save_store(store)
        print(f"{label}: {summary_line(fields)}", flush=True)


def summary_line(fields: dict) -> str:
    """One log line: the label-free choice and the oracle."""
    return (
        f"serves {fields['served_by_default']} ACC {100 * fields['served_acc']:.1f} | oracle {fields['oracle']} "
        f"ACC {100 * fields['oracle_acc']:.1f} | {fields['partitions_seconds']:.0f}s"
    )


def _candidates(rows: list[dict]) -> list[str]:
    from hf_textcluster.modeling.input_checks import CANDIDATES

    present = {name for r in rows for name in r["partitions"]}
    return [c for c in CANDIDATES if c in present] + sorted(present - set(CANDIDATES))


def _choices(rows: list[dict], key: str) -> str:
    """The candidates chosen over the seeds, most frequent first, with counts when they differ."""
    counts: dict[str, int] = {}
    for r in rows:
        counts[r[key]] = counts.get(r[key], 0) + 1
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{name} ×{n}" for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def render(store: dict, rows: list[dict]) -> list[str]:
    """Per method run group: ACC of every candidate, the label-free choice's and the oracle's; then how often the
    choice picks the oracle's partition and what it loses against it."""
    scored = [r for r in rows if r["section"] == "method" and r.get("partitions")]
    title = ["## Which partition to serve: refined, chosen without labels, oracle", ""]
    if not scored:
        refined = _render_refined_baselines(rows)
        return title + refined if refined else []
    names = _candidates(scored)
    out = [
        *title,
        "Every candidate partition of a trained model, scored as the model would serve it "
        "(`hf_textcluster.choosing.serving`):",
        "*head*, *kmeans* (k-means after), *umap_kmeans* (UMAP k-means after), each also *+refined* (iterative",
        "classification, `refine_partition`). *served* = the candidate the label-free choice serves",
        f"(`choose_partition`, criterion `{scored[0]['selection_criterion']}`; what `refine` and `train --serve auto` "
        "serve, and `train` by default). *oracle* = the",
        "candidate with the highest ACC: **chosen with labels**, a bound no user can reach without them. ACC in %,",
        "mean over seeds; the candidate chosen per seed in brackets when seeds differ.",
        "",
        "| method | dataset | "
        + " | ".join(f"{n} ACC" for n in names)
        + " | served ACC | served | oracle ACC (labels) "
        "| oracle | served − oracle | seeds |",
        "|---|---|" + "---|" * len(names) + "---|---|---|---|---|---|",
    ]
    for label, dataset, drows in by_method_and_dataset(scored):
        cells = [
            mean_std([r["partitions"][n]["acc"] for r in drows if n in r["partitions"]])
            if any(n in r["partitions"] for r in drows)
            else "–"
            for n in names
        ]
        loss = [r["served_acc"] - r["oracle_acc"] for r in drows]
        out.append(
            f"| {label} | {dataset} | "
            + " | ".join(cells)
            + f" | {mean_std([r['served_acc'] for r in drows])} | {_choices(drows, 'served_by_default')}"
            + f" | {mean_std([r['oracle_acc'] for r in drows])} | {_choices(drows, 'oracle')}"
            + f" | {100 * statistics.mean(loss) + 0.0:+.1f} | {len(drows)} |"
        )
    hits = sum(r["served_by_default"] == r["oracle"] for r in scored)
    losses = [100 * (r["oracle_acc"] - r["served_acc"]) for r in scored]
    seconds = statistics.mean(r["partitions_seconds"] for r in scored)
    gains = [100 * (r["served_acc"] - r["partitions"]["head"]["acc"]) for r in scored if "head" in r["partitions"]]
    if gains:
        out += [
            "",
            f"Against the head (the paper's output, `train --serve head`), the label-free choice is "
            f"better in {sum(g > 0 for g in gains)}, equal in {sum(g == 0 for g in gains)} and worse in "
            f"{sum(g < 0 for g in gains)} of {len(gains)} runs: {statistics.mean(gains):+.1f} ACC on average "
            f"(from {min(gains):+.1f} to {max(gains):+.1f}).",
        ]
    out += [
        "",
        f"The label-free choice picks the oracle's partition in {hits} of {len(scored)} runs; its ACC loss "
        f"against the oracle is {statistics.mean(losses):.1f} points on average (median "
        f"{statistics.median(losses):.1f}, largest {max(losses):.1f}). Scoring every candidate took "
        f"{seconds:.0f} s a run on average.",
        "",
    ]
    out += _render_criteria(scored)
    out += _render_refined_baselines(rows)
    return out


def _render_criteria(scored: list[dict]) -> list[str]:
    """Each label-free criterion's picks on the runs that recorded them all: how often it picks the oracle's
    partition and its mean / largest ACC loss against it (the serving default's criterion beside the others)."""
    runs = [r for r in scored if all("criteria" in p for p in r["partitions"].values())]
    if not runs:
        return []
    default = runs[0]["selection_criterion"]
    criteria = [default, *runs[0]["partitions"][next(iter(runs[0]["partitions"]))]["criteria"]]
    out = [
        f"Every criterion's pick on the same {len(runs)} runs (the UMAP silhouette aside: a UMAP fit of its own). "
        "*picks the oracle*: runs where",
        "it chose the oracle's partition; loss: oracle ACC − its pick's ACC, in "
        "points. The serving default is in bold.",
        "",
        "| criterion | picks the oracle | mean loss | largest loss | most often picks |",
        "|---|---|---|---|---|",
    ]
    for criterion in criteria:
        picks = []
        for r in runs:
            values = {
                name: (p["selection"] if criterion == default else p["criteria"][criterion])
                for name, p in r["partitions"].items()
            }
            values = {name: v for name, v in values.items() if v is not None}
            picks.append(max(values, key=lambda name: (values[name], -list(values).index(name))))
        losses = [100 * (r["oracle_acc"] - r["partitions"][pick]["acc"]) for r, pick in zip(runs, picks)]
        common_pick = max(sorted(set(picks)), key=picks.count)  # sorted: ties the same in every process
        name = f"**{criterion}**" if criterion == default else criterion
        out.append(
            f"| {name} | {sum(p == r['oracle'] for p, r in zip(picks, runs))} of {len(runs)} | "
            f"{statistics.mean(losses):.1f} | {max(losses):.1f} | {common_pick} ({picks.count(common_pick)}) |"
        )
    return out + [""]


def _render_refined_baselines(rows: list[dict]) -> list[str]:
    refined = [r for r in rows if r["section"] == "baselines" and r["method"] in REFINED_BASELINES]
    if not refined:
        return []
    from hf_textcluster.data import BENCHMARKS

    out = [
        "Refinement applies to the shallow baselines too (MiniLM embeddings; refined on them, the BERTopic way's",
        "UMAP space only finding the start); ACC before → after refinement, mean over seeds:",
        "",
        "| dataset | baseline | ACC before | ACC refined | NMI refined | declined | seeds |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in BENCHMARKS:
        for method, label in REFINED_BASELINES.items():
            d = [r for r in refined if (r["dataset"], r["method"]) == (name, method)]
            if d:
                out.append(
                    f"| {name} | {label} | {mean_std([r['unrefined_acc'] for r in d])} | "
                    f"{mean_std([r['acc'] for r in d])} | {mean_std([r['nmi'] for r in d])} | "
                    f"{sum(r['refinement']['declined'] for r in d)} | {len(d)} |"
                )
    return out + [""]


def render_served_against_baselines(rows: list[dict]) -> list[str]:
    """The leaderboard's addition: per corpus, what each method serves by default (main configuration) beside the
    strongest shallow baselines (MiniLM + k-means, the BERTopic way at the true K) and those refined."""
    from hf_textcluster.data import BENCHMARKS

    served = [r for r in rows if r["section"] == "method" and not r.get("variant") and r.get("partitions")]
    if not served:
        return []
    out = [
        "Served by default (the label-free choice, main configuration) against the strongest shallow baselines:",
        "*MiniLM + k-means* (baselines section), *BERTopic way* (UMAP -> k-means at the true K, auto-k section) and",
        "both refined. Δ = served − the best of the shallow entries. ACC in %, mean over seeds.",
        "",
        "| dataset | method | served ACC (partition) | MiniLM + k-means | refined | BERTopic way, true K | refined | Δ "
        "|",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in BENCHMARKS:
        d = [r for r in served if r["dataset"] == name]
        if not d:
            continue
        shallow = {}
        for method, section in (
            ("embeddings-kmeans", "baselines"),
            ("embeddings-kmeans+refined", "baselines"),
            ("bertopic-kmeans", "auto-k"),
            ("bertopic-kmeans+refined", "baselines"),
        ):
            pool = (
                default_baselines(rows)
                if section == "baselines"
                else [r for r in rows if r["section"] == "auto-k" and not r.get("variant")]
            )
            values = [r["acc"] for r in pool if r["dataset"] == name and r["method"] == method]
            shallow[method] = values
        best = max((statistics.mean(v) for v in shallow.values() if v), default=None)
        cells = " | ".join(mean_std(v) if v else "–" for v in shallow.values())
        for method in sorted({r["method"] for r in d}, key=method_order):
            m = [r for r in d if r["method"] == method]
            acc = statistics.mean(r["served_acc"] for r in m)
            delta = f"{100 * (acc - best) + 0.0:+.1f}" if best is not None else "–"
            out.append(
                f"| {name} | {display_name(method)} | {mean_std([r['served_acc'] for r in m])} "
                f"({_choices(m, 'served_by_default')}) | {cells} | {delta} |"
            )
    return out + [""]
