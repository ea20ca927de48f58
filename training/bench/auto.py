"""The default, ``train --method auto`` (``python -m training.bench auto``): every candidate it gathers (each training
signal's read-outs, the pretrained encoder's k-means and UMAP k-means, their consensus) scored against the labels,
beside the one it serves (chosen without labels) and the oracle (the best candidate by ACC: chosen with labels, out of
a user's reach). Labels only score: the run itself never sees them.

Resumable: ``--skip-done`` skips (corpus, seed) pairs already stored. Each row records the CPU kind and the wall time.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from hf_textcluster.markup import escape_markdown

from . import candidate_store
from .common import (
    ROLE_TITLES,
    add_corpus_arguments,
    corpus_role,
    cpu_kind,
    default_baselines,
    key_values,
    mean_std,
    run_header,
    train_time,
)
from .store import put_row, run_dir, save_store, select_rows

SECTION = "auto"
# the note of a row whose candidates were gathered again (its training and times stay the run's own)
RECOMPUTED = "candidates, criteria, choice and served clusters recomputed"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``auto``: corpora, seeds, a variant label, steps and TrainingArguments overrides, resume."""
    add_corpus_arguments(parser)
    parser.add_argument("--variant", default="", help="A label for this configuration in the tables.")
    parser.add_argument(
        "--note",
        default="",
        help="Stored with each row, e.g. 'time inflated: another job shared the CPU' (its time then counts only "
        "where no clean one exists).",
    )
    parser.add_argument(
        "--encoder",
        default=None,
        help="The encoder folder or Hub id (default: the shipped MiniLM); name it in --variant.",
    )
    parser.add_argument(
        "--max-steps", type=int, default=None, help="Steps per signal instead of the default schedule (checks only)."
    )
    parser.add_argument(
        "--augmentation",
        default="recipe",
        help="The views the signals train on: recipe (a benchmark corpus' precomputed ones) or an augmenter, e.g. "
        "word_deletion (what a user's file gets; a corpus without recipe views trains on no views otherwise).",
    )
    parser.add_argument(
        "--training",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="A TrainingArguments override for every signal (JSON value), e.g. per_device_train_batch_size=32.",
    )
    parser.add_argument(
        "--skip-done", action="store_true", help="Skip (dataset, seed) pairs of this variant already stored (resume)."
    )
    parser.add_argument(
        "--rescore",
        action="store_true",
        help="Train nothing: compute every label-free criterion again on the runs kept in runs/bench (e.g. criteria "
        "added since they ran) and re-make each stored row's choice with today's default criterion.",
    )
    parser.add_argument(
        "--recompute-candidates",
        action="store_true",
        help="Train nothing: gather the candidates of each stored row's kept run again from its signal models with "
        "today's code, compute every criterion, re-make the choice and the served clusters, and store the row again "
        "(for a change after training: how candidates are read out, chosen or served).",
    )
    parser.add_argument(
        "--rechoose",
        action="store_true",
        help="Train and compute nothing: re-make each stored row's choice from the criteria stored with it, by "
        "today's rule (the default criterion and the do-no-harm guard). Needs no kept run.",
    )
    parser.add_argument(
        "--criteria",
        nargs="+",
        default=None,
        help="With --rescore: compute only these criteria (the others stay as stored); default: all.",
    )
    parser.add_argument(
        "--limit",
        type=int,
        default=None,
        help="Only N texts of each corpus (a seeded sample): a quick check, best with HF_TEXTCLUSTER_BENCH_STORE "
        "pointing at a scratch store.",
    )


def corpus_dataset(data_dir: str, name: str):
    """A corpus as a run reads it: a tuning corpus with the contrastive signal's augmented views (as :func:`run` trains
    on them), another benchmark corpus as it is, a file the library has no builder for from
    ``<data_dir>/<name>.csv`` (header ``text,label``)."""
    from hf_textcluster.data import BENCHMARKS, load_benchmark, load_text_file

    if name in BENCHMARKS:
        views = _contrastive_views() if split_of(name) == "tuning" else None
        return load_benchmark(name, data_dir=data_dir, augmentation=views)
    path = Path(data_dir) / f"{name}.csv"
    if not path.is_file():
        raise SystemExit(f"error: no corpus {name!r}: neither a benchmark nor {path}.")
    return load_text_file(path, label_column="label")


def score_candidates(labels, candidates: dict, served_labels, record: dict) -> dict:
    """Every candidate scored against ``labels`` (with its label-free criteria), the served model's clusters, the
    choice and the oracle: the fields of an ``auto`` row."""
    from hf_textcluster.evaluation.metrics import clustering_scores

    labels = np.asarray(labels)
    scored = {
        name: {**clustering_scores(labels, predicted), "criteria": record["candidates"].get(name, {})}
        for name, predicted in candidates.items()
    }
    oracle = max(scored, key=lambda name: (scored[name]["acc"], -list(scored).index(name)))
    choice = record["choice"]
    served = clustering_scores(labels, served_labels)
    return {
        "partitions": scored,
        "selection_criterion": choice["criterion"],
        "criterion_pick": choice.get("pick", choice["served"]),
        "served_by_default": choice["served"],
        "serving_signal": choice["serving_signal"],
        "served_acc": served["acc"],  # as the saved model serves it (a linear head for a candidate of another space)
        "served_nmi": served["nmi"],
        "served_candidate_acc": scored[choice["served"]]["acc"],
        "oracle": oracle,
        "oracle_acc": scored[oracle]["acc"],
        "oracle_nmi": scored[oracle]["nmi"],
    }


def _contrastive_views() -> str | None:
    """The augmented views of the contrastive signal's ``cpu`` recipe: every signal of a run trains on these."""
    from hf_textcluster.runs.recipes import load_recipe
    from hf_textcluster.runs.signals import SIGNALS

    return load_recipe(SIGNALS["contrastive"].method, "cpu", None).get("augmentation")


def rescore(args, store: dict) -> None:
    """Every stored row of the corpora and seeds asked for whose run is kept: its candidates' criteria computed again
    (:func:`~hf_textcluster.runs.gather_candidates.rescore_kept_candidates`) and its choice re-made by today's default
    criterion. The ACC of a re-made choice is its candidate's (for a candidate of the pretrained space or the
    consensus the saved model would serve a linear head fitted to it, which agrees with it on most texts)."""
    from hf_textcluster.choosing.candidate_choice import DEFAULT_AUTO_CRITERION
    from hf_textcluster.runs.gather_candidates import rescore_kept_candidates

    criteria = {"criteria": args.criteria} if args.criteria else {}
    for name in args.datasets:
        for seed in args.seeds:
            rows = select_rows(store, SECTION, dataset=name, seed=seed, variant=args.variant)
            folder = run_dir(SECTION, name, seed, args.variant)
            kept = candidate_store.load(candidate_store.store_path(SECTION, name, seed, args.variant))
            if not rows or not (folder.is_dir() or kept):
                print(f"{name:15s} seed {seed} auto: no stored row with kept candidates to rescore", flush=True)
                continue
            if folder.is_dir() and RECOMPUTED in rows[0].get("note", ""):
                # its kept candidates file holds the run's own candidates, not the recomputed ones of the row
                raise SystemExit(
                    f"{name} seed {seed}: the stored row's candidates were recomputed; --rescore would score the "
                    "run's original candidates. Use --recompute-candidates (it computes every criterion)."
                )
            texts = list(corpus_dataset(args.data_dir, name)["text"])
            if folder.is_dir():
                values = rescore_kept_candidates(folder, texts, random_state=seed, **criteria)
            else:
                values = rescore_from_store(kept, texts, seed, args.criteria, f"{name} seed {seed}")
            row = dict(rows[0])
            for candidate, part in row["partitions"].items():
                part["criteria"] = {
                    **part.get("criteria", {}),
                    **{c: round(float(v[candidate]), 6) for c, v in values.items()},
                }
            remake_choice(row)
            put_row(store, row)
            save_store(store)
            print(
                f"{name:15s} seed {seed} auto: rescored; {DEFAULT_AUTO_CRITERION} picks {row['criterion_pick']}, "
                f"serves {row['served_by_default']}",
                flush=True,
            )


def rescore_from_store(kept, texts: list[str], seed: int, criteria, what: str) -> dict[str, dict[str, float]]:
    """The criteria the committed candidate store can give (no model: agreement, the lexical vote and its supported
    form) of a run's kept partitions, computed again on its ``texts``."""
    from hf_textcluster.choosing.candidate_choice import candidate_criteria
    from hf_textcluster.choosing.criteria import AUTO_CRITERIA, CRITERIA, lexical_space
    from hf_textcluster.runs.candidate_file import SERVED_KEY, texts_match

    partitions, metadata = kept
    partitions.pop(SERVED_KEY, None)
    if not texts_match(texts, metadata):
        raise SystemExit(f"{what}: the stored candidates partition other texts than the corpus gives now.")
    possible = tuple(c for c in AUTO_CRITERIA if CRITERIA[c].space in (None, "lexical"))  # no model's space
    wanted = list(criteria or possible)
    need_models = [c for c in wanted if c not in possible]
    if need_models or lexical_space(texts, random_state=seed) is None:
        raise SystemExit(
            f"{what}: {', '.join(need_models) or 'the lexical vote (too few shared words)'} needs the run's models, "
            "which only its run folder keeps; the candidate store gives " + ", ".join(possible) + "."
        )
    return candidate_criteria(partitions, {}, texts=texts, criteria=wanted, random_state=seed)


REMADE = "re-made choice: the ACC of the candidate"


def remade_mark(rows: list[dict]) -> str:
    """``‡`` where a confirmation corpus serves a choice re-made after its run (a rule that came later, so chosen with
    the run's result in view), else nothing."""
    return "‡" if any(r.get("served_note") == REMADE and split_of(r["dataset"]) != "tuning" for r in rows) else ""


def remake_choice(row: dict) -> None:
    """Re-make ``row``'s choice from its candidates' stored criteria with today's rule (the default criterion and
    the do-no-harm guard), in place. A choice that moves gets its candidate's ACC (for a candidate of another space
    the saved model would serve a linear head fitted to it, which agrees with it on most texts)."""
    from hf_textcluster.choosing.candidate_choice import DEFAULT_AUTO_CRITERION, guarded_choice

    served, pick = guarded_choice(row_criteria(row), DEFAULT_AUTO_CRITERION)
    if served != row["served_by_default"]:
        row["served_acc"] = row["partitions"][served]["acc"]
        row["served_nmi"] = row["partitions"][served]["nmi"]
        row["served_note"] = REMADE
    row.update(
        selection_criterion=DEFAULT_AUTO_CRITERION,
        criterion_pick=pick,
        served_by_default=served,
        served_candidate_acc=row["partitions"][served]["acc"],
        serving_signal=served.split("/")[0] if served.split("/")[0] in row["signals"] else row["serving_signal"],
    )


def rechoose(args, store: dict) -> None:
    """Every stored row of the corpora and seeds asked for: its choice re-made from the criteria stored with it
    (:func:`remake_choice`), with no kept run and nothing trained or computed again."""
    for name in args.datasets:
        for seed in args.seeds:
            for row in select_rows(store, SECTION, dataset=name, seed=seed, variant=args.variant):
                row = dict(row)
                before = row["served_by_default"]
                remake_choice(row)
                put_row(store, row)
                print(f"{name:15s} seed {seed} auto: serves {row['served_by_default']} (was {before})", flush=True)
    save_store(store)


def recompute_candidates(args, store: dict) -> None:
    """Every stored row of the corpora and seeds asked for whose run is kept: its candidates gathered again from the
    run's signal models (:func:`~hf_textcluster.runs.auto.choose_from_signals`, today's code), every criterion, the
    choice and the served clusters, stored in place of the row's; its training (signals, steps, times) is the run's
    own, and its note says so. What ``train`` serves today from the same trained models when a change comes after
    training (how candidates are read out, chosen or served), without training them again."""
    from types import SimpleNamespace

    from hf_textcluster.choosing.candidate_choice import DEFAULT_AUTO_CRITERION, candidate_criteria
    from hf_textcluster.choosing.criteria import AUTO_CRITERIA
    from hf_textcluster.data import load_benchmark
    from hf_textcluster.modeling.encoding_passes import DEFAULT_ENCODE_BATCH_SIZE
    from hf_textcluster.models import get_method
    from hf_textcluster.runs.auto import choose_from_signals
    from hf_textcluster.runs.candidate_file import SERVED_KEY, read_candidates, texts_match
    from hf_textcluster.runs.folder import read_training_run, texts_sha1
    from hf_textcluster.runs.signals import SIGNALS, SIGNALS_DIR

    for name in args.datasets:
        for seed in args.seeds:
            rows = select_rows(store, SECTION, dataset=name, seed=seed, variant=args.variant)
            folder = run_dir(SECTION, name, seed, args.variant)
            if not rows or not (folder / SIGNALS_DIR).is_dir():
                print(f"{name:15s} seed {seed} auto: no stored row with kept signal models", flush=True)
                continue
            start = time.perf_counter()
            dataset = load_benchmark(name, data_dir=args.data_dir, augmentation=_contrastive_views())
            texts = list(dataset["text"])
            kept = read_candidates(folder)
            if kept is not None and not texts_match(texts, kept[1]):
                raise SystemExit(f"{folder}: the kept run partitions other texts than {name}'s; not recomputed.")
            results = {}
            for signal in rows[0]["signals"]:
                path = folder / SIGNALS_DIR / signal
                precision = (read_training_run(path) or {}).get("precision", "auto").split(" ")[0]
                model = get_method(SIGNALS[signal].method).model_class.from_pretrained(path)
                # the passes as the run's CPU trainer made them (its default batch; the run's precision)
                trainer = SimpleNamespace(encode_batch_size=DEFAULT_ENCODE_BATCH_SIZE, precision=precision)
                results[signal] = SimpleNamespace(model=model, trainer=trainer)
            chosen = choose_from_signals(results, None, texts, seed=seed, criterion=DEFAULT_AUTO_CRITERION)
            others = [c for c in AUTO_CRITERIA if c not in chosen.criteria]
            criteria = {
                **chosen.criteria,
                **candidate_criteria(
                    chosen.candidates, chosen.features, texts=texts, criteria=others, random_state=seed
                ),
            }
            record = {
                "candidates": {c: {k: round(float(v[c]), 6) for k, v in criteria.items()} for c in chosen.candidates},
                "choice": {
                    "served": chosen.served,
                    "pick": chosen.pick,
                    "criterion": DEFAULT_AUTO_CRITERION,
                    "serving_signal": chosen.serving_signal,
                },
            }
            row = {k: v for k, v in rows[0].items() if k != "served_note"}
            row.update(score_candidates(dataset["label"], chosen.candidates, chosen.served_labels, record))
            candidate_store.save(  # the store keeps the recomputed candidates, the row's own
                candidate_store.store_path(SECTION, name, seed, args.variant),
                {**chosen.candidates, SERVED_KEY: chosen.served_labels},
                {"texts_sha1": texts_sha1(texts), "num_train_texts": len(texts)},
            )
            said = [n for n in row.get("note", "").split("; ") if n and not n.startswith(RECOMPUTED)]
            row["note"] = "; ".join(
                [*said, f"{RECOMPUTED} on {time.strftime('%Y-%m-%d')} from the run's kept signal models"]
            )
            put_row(store, row)
            save_store(store)
            print(
                f"{name:15s} seed {seed} auto: recomputed; serves {row['served_by_default']} ACC "
                f"{100 * row['served_acc']:.1f} | oracle {row['oracle']} ACC {100 * row['oracle_acc']:.1f} (labels) | "
                f"{time.perf_counter() - start:.0f}s",
                flush=True,
            )


def run(args, store: dict, run_id: str) -> None:
    """Train the default on every corpus and seed asked for, score every candidate, store one row per run (or, with
    ``--rescore``, compute the criteria of kept runs again)."""
    import torch

    if args.rescore:
        rescore(args, store)
        return
    if args.rechoose:
        rechoose(args, store)
        return
    if args.recompute_candidates:
        recompute_candidates(args, store)
        return

    from hf_textcluster.choosing.criteria import AUTO_CRITERIA
    from hf_textcluster.data import BENCHMARKS
    from hf_textcluster.runs.auto import train_auto
    from hf_textcluster.runs.request import TrainingRequest

    overrides = {"save_strategy": "no", "disable_tqdm": True, "logging_steps": 100}
    if args.max_steps:
        overrides["max_steps"] = args.max_steps
    overrides.update(key_values(args.training))
    done = {
        (r["dataset"], r.get("seed"))
        for r in store["rows"]
        if r["section"] == SECTION and (r.get("variant") or "") == args.variant
    }
    machine = store["runs"][run_id]["machine"]
    for name in args.datasets:
        for seed in args.seeds:
            if args.skip_done and (name, seed) in done:
                print(f"{name:15s} seed {seed} auto: stored already (--skip-done)", flush=True)
                continue
            # a corpus with no recipe views trains as a user's file does: on the views --augmentation makes
            dataset = name if name in BENCHMARKS else corpus_dataset(args.data_dir, name)
            if args.limit:  # a quick check on a seeded subset (a tuning corpus with the contrastive signal's views)
                full = corpus_dataset(args.data_dir, name)
                dataset = full.shuffle(seed=0).select(range(min(args.limit, len(full))))
            output_dir = str(run_dir(SECTION, name, seed, args.variant or ("check" if args.limit else "")))
            start = time.perf_counter()
            request = TrainingRequest(
                dataset,
                output_dir,
                data_dir=args.data_dir,
                encoder=args.encoder,
                augmentation=args.augmentation,
                seed=seed,
                training_overrides=overrides,
                resume=False,
                evaluate=False,
                save=True,
                overwrite=True,  # a rerun replaces its own row's run
                keep_signals=True,  # its candidates are re-scored from the signals' models
            )
            # train_clusterer("auto", ...), and every criterion recorded for the comparison
            result = train_auto(request, record_criteria=AUTO_CRITERIA)
            # the run as train makes it: the criteria computed only for the comparison are timed apart
            extra = result.auto["extra_criteria_seconds"]
            wall = time.perf_counter() - start - extra
            fields = score_candidates(
                result.train_dataset["label"], result.candidates, result.served_labels, result.auto
            )
            row = {
                "section": SECTION,
                "method": "auto",
                "dataset": name,
                "seed": seed,
                "run": run_id,
                "variant": args.variant,
                "cpu_kind": cpu_kind(machine),
                "wall_seconds": round(wall, 1),
                "train_seconds": round(result.train_seconds, 1),
                "choose_seconds": result.auto["choose_seconds"],
                "extra_criteria_seconds": extra,
                "estimate_seconds": result.auto.get("estimate_seconds"),
                "num_texts": len(result.train_dataset),
                "split": split_of(name),
                "signals": {
                    s: {k: v[k] for k in ("method", "steps", "batch_size", "train_seconds")}
                    for s, v in result.auto["signals"].items()
                },
                **fields,
            }
            print(
                f"{name:15s} seed {seed} auto: serves {row['served_by_default']} ACC {100 * row['served_acc']:.1f} "
                f"| oracle {row['oracle']} ACC {100 * row['oracle_acc']:.1f} (labels) | {wall:.0f}s wall",
                flush=True,
            )
            notes = [f"a check on {row['num_texts']} texts of the corpus"] if args.limit else []
            if args.note:
                notes.append(args.note)
            if notes:
                row["note"] = "; ".join(notes)
            put_row(store, row)
            save_store(store)
            if not args.limit:  # the partitions a later criterion study reads, committed (run folders are not)
                candidate_store.keep(output_dir, candidate_store.store_path(SECTION, name, seed, args.variant))
            del result
            torch.manual_seed(0)


def shallow_best(rows: list[dict], dataset: str) -> tuple[float, str] | None:
    """The strongest shallow baseline of ``dataset`` (mean ACC over seeds): MiniLM + k-means, the BERTopic way at
    the true K, and BERTopic's default."""
    pools = {
        "MiniLM + k-means": [r for r in default_baselines(rows) if r["method"] == "embeddings-kmeans"],
        "BERTopic way": [r for r in rows if r["section"] == "auto-k" and r["method"] == "bertopic-kmeans"],
        "BERTopic default": [r for r in rows if r["section"] == "auto-k" and r["method"] == "bertopic"],
    }
    best = None
    for label, pool in pools.items():
        values = [r["acc"] for r in pool if r["dataset"] == dataset and not r.get("variant")]
        if values and (best is None or statistics.mean(values) > best[0]):
            best = (statistics.mean(values), label)
    return best


def render(store: dict, rows: list[dict]) -> list[str]:
    """Per corpus: what the default serves, the oracle and the strongest shallow baseline; then every candidate's
    ACC."""
    from hf_textcluster.data import BENCHMARKS

    runs = [r for r in rows if r["section"] == SECTION]
    auto_rows = [r for r in runs if not r.get("variant")]
    if not auto_rows:
        return []
    out = [
        "## The default: `train --method auto`",
        "",
        "`train --method auto` trains two signals (SCCL and DEC self-training without the masked-LM term) within one",
        "schedule set by the number of texts, gathers every read-out of each, k-means and UMAP k-means on the",
        "pretrained encoder's embeddings and their consensus, and serves the candidate a label-free criterion",
        "chooses (`hf_textcluster.runs.auto`). *served* = what the saved model serves (ACC of its clusters);",
        "*oracle* = the candidate with the highest ACC, **chosen with labels** (out of a user's reach). *strongest",
        "shallow baseline* = the best of MiniLM + k-means, the BERTopic way at the true K and BERTopic's default.",
        "ACC in %, mean ± std over seeds; wall time (training, candidates, choice) per CPU kind, as `train` runs:",
        "the other criteria the benchmark records for the criteria table below are timed apart (runs made before",
        "they were, on 2026-11-26, include them); a run that shared the CPU with another job (its note says so) is",
        "left out unless all of its kind did (†: no measurement).",
        "Criteria added after a run was made are computed on its kept models (`python -m training.bench auto",
        "--rescore`), and its choice re-made by today's criterion. A change after training (how candidates are",
        "read out, chosen or served) is measured by gathering a kept run's candidates again from its trained",
        "signal models (`--recompute-candidates`): the served clusters are then today's, the training and the",
        "wall time the run's own.",
        "",
        "| dataset | served ACC | served (candidate) | oracle ACC (labels) | oracle | strongest shallow baseline "
        "| Δ served − baseline | wall s | seeds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    from hf_textcluster.choosing.candidate_choice import DEFAULT_AUTO_CRITERION

    tuning_names = [n for n in BENCHMARKS if split_of(n) == "tuning"]
    for name in tuning_names:
        d = [r for r in auto_rows if r["dataset"] == name]
        if not d:
            continue
        served = statistics.mean(r["served_acc"] for r in d)
        best = shallow_best(rows, name)
        delta = f"{100 * (served - best[0]) + 0.0:+.1f}" if best else "–"
        wall = train_time(store, d, key="wall_seconds")
        out.append(
            f"| {name} | {mean_std([r['served_acc'] for r in d])} | {_counts(d, 'served_by_default')} "
            f"| {mean_std([r['oracle_acc'] for r in d])} | {_counts(d, 'oracle')} "
            f"| {f'{100 * best[0]:.1f} ({best[1]})' if best else '–'} | {delta} | {wall} | {len(d)} |"
        )
    recomputed = [r for r in auto_rows if RECOMPUTED in r.get("note", "")]
    if recomputed:
        out += ["", f"Candidates recomputed from the kept signal models: {len(recomputed)} of {len(auto_rows)} runs."]
    earlier = [r for r in auto_rows if r.get("selection_criterion") not in (None, DEFAULT_AUTO_CRITERION)]
    if earlier:
        which = ", ".join(f"{r['dataset']} seed {r['seed']} ({r['selection_criterion']})" for r in earlier)
        out += ["", f"Chosen by an earlier default criterion (runs not kept to re-score): {which}."]
    names = sorted({n for r in auto_rows for n in r["partitions"]}, key=_candidate_order)
    datasets = [n for n in tuning_names if any(r["dataset"] == n for r in auto_rows)]
    out += [
        "",
        "Every candidate's ACC (mean over seeds; the best per corpus in bold):",
        "",
        "| candidate | " + " | ".join(datasets) + " |",
        "|---|" + "---|" * len(datasets),
    ]
    best_per = {
        ds: max(
            statistics.mean(r["partitions"][n]["acc"] for r in auto_rows if r["dataset"] == ds and n in r["partitions"])
            for n in names
            if any(r["dataset"] == ds and n in r["partitions"] for r in auto_rows)
        )
        for ds in datasets
    }
    for n in names:
        cells = []
        for ds in datasets:
            values = [r["partitions"][n]["acc"] for r in auto_rows if r["dataset"] == ds and n in r["partitions"]]
            text = mean_std(values) if values else "–"
            cells.append(f"**{text}**" if values and abs(statistics.mean(values) - best_per[ds]) < 1e-12 else text)
        out.append(f"| {n} | " + " | ".join(cells) + " |")
    tuning = [r for r in auto_rows if split_of(r["dataset"]) == "tuning"]
    out += render_criteria(tuning, ROLE_TITLES["tuning"])
    out += render_guards([r for r in runs if split_of(r["dataset"]) == "tuning"], ROLE_TITLES["tuning"])
    confirmation = [r for r in auto_rows if split_of(r["dataset"]) != "tuning"]
    out += render_confirmation(store, confirmation)
    for split in SPLITS[1:]:
        out += render_criteria([r for r in confirmation if split_of(r["dataset"]) == split], ROLE_TITLES[split])
        out += render_guards([r for r in runs if split_of(r["dataset"]) == split], ROLE_TITLES[split])
    out += render_variants(store, [r for r in runs if r.get("variant")])
    out += ["", *run_header(store, runs), ""]
    return out


def render_variants(store: dict, variants: list[dict]) -> list[str]:
    """The runs of other configurations (``--variant``: e.g. another CPU kind), beside the default's: served and
    oracle ACC, the served candidate and the wall time per CPU kind; none enters the tables above."""
    if not variants:
        return []
    out = [
        "",
        "Other configurations of the same runs (each its `--variant`; not in the tables above):",
        "",
        "| dataset | variant | served ACC | served (candidate) | oracle ACC (labels) | wall s | seeds |",
        "|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in variants:
        groups.setdefault((r["dataset"], r["variant"]), []).append(r)
    for (dataset, variant), d in groups.items():
        out.append(
            f"| {dataset} | {variant} | {mean_std([r['served_acc'] for r in d])} | {_counts(d, 'served_by_default')} "
            f"| {mean_std([r['oracle_acc'] for r in d])} | {train_time(store, d, key='wall_seconds')} | {len(d)} |"
        )
    # what sets a run apart beyond its variant's name (e.g. made before a fix, never recomputed)
    notes = [
        f"- {dataset}, {variant}, seed {r['seed']}: {escape_markdown(r['note'])}"
        for (dataset, variant), d in groups.items()
        for r in d
        if r.get("note")
    ]
    if notes:
        out += ["", *notes]
    return out


def row_criteria(row: dict) -> dict[str, dict[str, float]]:
    """The criteria stored with ``row``'s candidates: criterion -> candidate -> value."""
    criteria: dict[str, dict[str, float]] = {}
    for candidate, part in row["partitions"].items():
        for criterion, value in part.get("criteria", {}).items():
            criteria.setdefault(criterion, {})[candidate] = value
    return criteria


def criterion_picks(row: dict, criterion: str) -> str:
    """The candidate ``criterion`` picks in ``row`` (the highest value; ties: the first listed)."""
    from hf_textcluster.choosing.candidate_choice import highest

    return highest(row_criteria(row)[criterion])


def split_of(dataset: str) -> str:
    """The set a corpus belongs to (:func:`~training.bench.common.corpus_role`): ``"tuning"`` (the rules were chosen
    on it), ``"confirmation"`` or ``"confirmation_only"`` (set aside before any rule was chosen; a file the library
    has no builder for counts as confirmation-only)."""
    role = corpus_role(dataset)
    return "confirmation_only" if role == "?" else role


SPLITS = tuple(ROLE_TITLES)  # the sets in table order: tuning, confirmation, confirmation_only


def readme_table(store: dict, rows: list[dict], names: dict[str, str]) -> list[str]:
    """README's short table: per corpus (the tuning set, then the confirmation set), the run's own BERTopic-way
    partition (``pretrained/umap_kmeans``) against what ``train`` serves, and the wall time; ``names``: display
    names of the corpora."""
    from hf_textcluster.data import BENCHMARKS

    auto_rows = [r for r in rows if r["section"] == SECTION and not r.get("variant")]
    if not auto_rows:
        return []
    order = [*BENCHMARKS, *sorted({r["dataset"] for r in auto_rows} - set(BENCHMARKS))]
    header = [
        "| corpus | set | texts | the BERTopic way | `train` serves | Δ | wall s (CPU kind) | seeds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    tables: dict[bool, list[str]] = {False: list(header), True: list(header)}  # keyed by "confirmation-only"
    for name in sorted(order, key=lambda n: (SPLITS.index(split_of(n)), order.index(n))):
        d = [r for r in auto_rows if r["dataset"] == name]
        if not d:
            continue
        bertopic = statistics.mean(r["partitions"]["pretrained/umap_kmeans"]["acc"] for r in d)
        served = statistics.mean(r["served_acc"] for r in d)
        tables[split_of(name) == "confirmation_only"].append(
            f"| {names.get(name, name)} | {split_of(name).replace('_', '-')} | {d[0]['num_texts']:,} "
            f"| {100 * bertopic:.1f} "
            f"| {100 * served:.1f}{remade_mark(d)} | {100 * (served - bertopic) + 0.0:+.1f} "
            f"| {train_time(store, d, key='wall_seconds')} | {len(d)} |"
        )
    if len(tables[True]) == len(header):
        return tables[False]
    lead = "Confirmation-only: public corpora of the kinds users bring, never tuned on, reported as they fell."
    return [*tables[False], "", lead, "", *tables[True]]


def render_confirmation(store: dict, rows: list[dict]) -> list[str]:
    """Per confirmation corpus: what the default serves against the BERTopic way's partition of the same run, the
    criterion's pick and the oracle (labels)."""
    if not rows:
        return []
    out = [
        "",
        "The confirmation corpora (set aside before any rule was chosen; their numbers are reported as they fell,",
        "never tuned on; ‡: the served ACC is a choice re-made from the run's stored criteria by a rule that came",
        "after the run, so its result was in view): *BERTopic way* = the run's own `pretrained/umap_kmeans`",
        "candidate (UMAP -> k-means on the pretrained MiniLM, the true K); *pick* = the criterion's pick before the",
        "do-no-harm guard; *loss* =",
        "oracle ACC − served ACC (the oracle is **chosen with labels**).",
        "",
        "| dataset | set | texts | served ACC | served (candidate) | pick | BERTopic way | Δ served − BERTopic way "
        "| oracle ACC (labels) | oracle | loss | wall s | seeds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in sorted({r["dataset"] for r in rows}, key=lambda n: (SPLITS.index(split_of(n)), n)):
        d = [r for r in rows if r["dataset"] == name]
        bertopic = [r["partitions"]["pretrained/umap_kmeans"]["acc"] for r in d]
        delta = statistics.mean(r["served_acc"] for r in d) - statistics.mean(bertopic)
        loss = statistics.mean(r["oracle_acc"] - r["served_acc"] for r in d)
        out.append(
            f"| {name} | {split_of(name).replace('_', '-')} | {d[0]['num_texts']} "
            f"| {mean_std([r['served_acc'] for r in d])}{remade_mark(d)} "
            f"| {_counts(d, 'served_by_default')} | {_counts(d, 'criterion_pick')} | {mean_std(bertopic)} "
            f"| {100 * delta + 0.0:+.1f} | {mean_std([r['oracle_acc'] for r in d])} | {_counts(d, 'oracle')} "
            f"| {100 * loss:.1f} | {train_time(store, d, key='wall_seconds')} | {len(d)} |"
        )
    return out


def render_criteria(auto_rows: list[dict], split: str) -> list[str]:
    """Each label-free criterion's pick on every run that recorded them all: how often it is the oracle's, and its
    mean and largest ACC loss against the oracle (chosen with labels); beside it, always serving one candidate."""
    criteria = sorted({c for r in auto_rows for p in r["partitions"].values() for c in p.get("criteria", {})})
    runs = [r for r in auto_rows if all(set(criteria) <= set(p.get("criteria", {})) for p in r["partitions"].values())]
    if not runs or not criteria:
        return []
    default = runs[-1]["selection_criterion"]
    from hf_textcluster.choosing.candidate_choice import GUARD_CRITERIA, guarded_choice

    out = [
        "",
        f"Every criterion's pick on the {len(runs)} runs of the {split} that recorded every criterion, against the "
        "*oracle*",
        "(the best candidate by ACC, **chosen with labels**): *picks the oracle* = runs where it picked the oracle's",
        "candidate; loss = oracle ACC − its pick's ACC, in points. *always X* serves X whatever the texts. What",
        "`train --method auto` serves is in bold: its criterion's pick, unless the do-no-harm guard keeps",
        "`pretrained/umap_kmeans` (the BERTopic way) because the pick does not beat it in every one of "
        + ", ".join(f"`{g}`" for g in GUARD_CRITERIA)
        + ". *worst against the BERTopic way* = the lowest ACC of its pick minus the BERTopic way's, in points.",
        "",
        "| criterion | picks the oracle | mean loss | largest loss | worst against the BERTopic way "
        "| most often picks |",
        "|---|---|---|---|---|---|",
    ]

    rules = {c: (lambda r, c=c: criterion_picks(r, c)) for c in criteria}
    rules[f"{default} + do-no-harm guard"] = lambda r: guarded_choice(row_criteria(r), default)[0]
    for fixed in ("consensus", "pretrained/umap_kmeans"):
        if all(fixed in r["partitions"] for r in runs):
            rules[f"always {fixed}"] = lambda r, fixed=fixed: fixed
    for name, rule in rules.items():
        picks = [rule(r) for r in runs]
        losses, against = _losses(runs, picks)
        worst = f"{min(against) + 0.0:+.1f}" if against else "–"
        common = max(sorted(set(picks)), key=picks.count)
        label = f"**{name}**" if name == f"{default} + do-no-harm guard" else name
        out.append(
            f"| {label} | {sum(p == r['oracle'] for p, r in zip(picks, runs))} of {len(runs)} | "
            f"{statistics.mean(losses):.1f} | {max(losses):.1f} | {worst} | "
            f"{common} ({picks.count(common)}) |"
        )
    return out


def _losses(runs: list[dict], served: list[str]) -> tuple[list[float], list[float]]:
    """Per run, in points: the oracle's ACC (labels) minus the served candidate's, and the served candidate's ACC
    minus the BERTopic way's (for the runs that have that candidate)."""
    from hf_textcluster.choosing.candidate_choice import BERTOPIC_WAY

    losses = [100 * (r["oracle_acc"] - r["partitions"][s]["acc"]) for r, s in zip(runs, served)]
    against = [
        100 * (r["partitions"][s]["acc"] - r["partitions"][BERTOPIC_WAY]["acc"])
        for r, s in zip(runs, served)
        if BERTOPIC_WAY in r["partitions"]
    ]
    return losses, against


# The other forms of the do-no-harm guard compared with the default's (GUARD_CRITERIA): each the views a trained pick
# must win against the BERTopic way.
OTHER_GUARD_FORMS = {
    "no guard": (),
    "the lexical vote alone": ("knn_holdout_lexical",),
    "the lexical vote and the shared silhouette": ("knn_holdout_lexical", "silhouette_shared"),
}


def render_guards(auto_rows: list[dict], split: str) -> list[str]:
    """Each form of the do-no-harm guard (:data:`OTHER_GUARD_FORMS` and the default's) on the default criterion's
    pick, on the runs whose candidates recorded every view (every configuration: the guard must hold whatever trained
    the candidates): the served ACC against the oracle (labels) and against the BERTopic way."""
    from hf_textcluster.choosing.candidate_choice import BERTOPIC_WAY, GUARD_CRITERIA, guarded_choice

    forms = {**OTHER_GUARD_FORMS, "every view (the default)": GUARD_CRITERIA}
    views = set(GUARD_CRITERIA)
    runs = [
        r
        for r in auto_rows
        if BERTOPIC_WAY in r["partitions"]
        and all(views <= set(p.get("criteria", {})) for p in r["partitions"].values())
    ]
    if not runs:
        return []
    out = [
        "",
        f"The do-no-harm guard's forms on the {len(runs)} runs of the {split}, every configuration (`--variant`s",
        "included): the default criterion's pick is served only when it beats the BERTopic way in every view listed;",
        "*below by > 1* = runs served more than 1 ACC below the BERTopic way; loss = oracle ACC (**chosen with",
        "labels**) − served ACC.",
        "",
        "| guard | mean loss | largest loss | worst against the BERTopic way | below by > 1 "
        "| serves the BERTopic way |",
        "|---|---|---|---|---|---|",
    ]
    for name, guards in forms.items():
        served = [guarded_choice(row_criteria(r), r["selection_criterion"], guards)[0] for r in runs]
        losses, against = _losses(runs, served)
        out.append(
            f"| {name} | {statistics.mean(losses):.1f} | {max(losses):.1f} | {min(against) + 0.0:+.1f} "
            f"| {sum(d < -1 for d in against)} of {len(runs)} | {served.count(BERTOPIC_WAY)} |"
        )
    return out


def _candidate_order(name: str) -> tuple[int, str]:
    return (0 if name == "consensus" else 2 if name.startswith("pretrained/") else 1, name)


def _counts(rows: list[dict], key: str) -> str:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r[key]] = counts.get(r[key], 0) + 1
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{n} ×{c}" for n, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
