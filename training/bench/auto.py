"""The default, ``train --method auto`` (``python -m training.bench auto``): every candidate it gathers (each training
signal's read-outs, the pretrained encoder's k-means and UMAP k-means, their consensus) scored against the labels,
beside the one it serves (chosen without labels) and the oracle (the best candidate by ACC: chosen with labels, out of
a user's reach). Labels only score: the run itself never sees them. Resumable: ``--skip-done`` skips (corpus, seed)
pairs already stored. Each row records the CPU kind and the wall time.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from . import candidate_store
from .auto_k import bertopic_timed
from .common import (
    add_corpus_arguments,
    corpus_role,
    cpu_kind,
    key_values,
)
from .criteria import AUTO_RECORDED, criteria_of
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
        "--signals",
        nargs="+",
        default=None,
        help="What the run trains instead of the default's (e.g. contrastive self_training, the encoder fine-tuned: "
        "the stored 'fine-tuned' variant); name it in --variant.",
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

    from .precomputed import load_with_views

    if name in BENCHMARKS:
        views = _contrastive_views() if split_of(name) == "tuning" else None
        return load_with_views(name, views, data_dir) if views else load_benchmark(name, data_dir=data_dir)
    path = Path(data_dir) / f"{name}.csv"
    if not path.is_file():
        raise SystemExit(f"error: no corpus {name!r}: neither a benchmark nor {path}.")
    return load_text_file(path, label_column="label")


def score_candidates(labels, candidates: dict, served_labels, record) -> dict:
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
    (:func:`~training.bench.rescoring.rescore_kept_candidates`) and its choice re-made by today's default
    criterion. The ACC of a re-made choice is its candidate's (for a candidate of the pretrained space or the
    consensus the saved model would serve a linear head fitted to it, which agrees with it on most texts)."""
    from hf_textcluster.choosing.candidate_choice import DEFAULT_AUTO_CRITERION

    from .rescoring import rescore_from_store, rescore_kept_candidates

    criteria = args.criteria or AUTO_RECORDED
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
                values = rescore_kept_candidates(folder, texts, random_state=seed, criteria=criteria)
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


REMADE = "re-made choice: the ACC of the candidate"


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

    from hf_textcluster.choosing.candidate_choice import DEFAULT_AUTO_CRITERION
    from hf_textcluster.modeling.encoding_passes import DEFAULT_ENCODE_BATCH_SIZE
    from hf_textcluster.models import get_method
    from hf_textcluster.runs.auto import choose_from_signals
    from hf_textcluster.runs.candidate_file import read_candidates, texts_match
    from hf_textcluster.runs.folder import RunFolder
    from hf_textcluster.runs.record import texts_sha1
    from hf_textcluster.runs.saving import SERVED_KEY
    from hf_textcluster.runs.signals import SIGNALS, SIGNALS_DIR

    for name in args.datasets:
        for seed in args.seeds:
            rows = select_rows(store, SECTION, dataset=name, seed=seed, variant=args.variant)
            folder = run_dir(SECTION, name, seed, args.variant)
            if not rows or not (folder / SIGNALS_DIR).is_dir():
                print(f"{name:15s} seed {seed} auto: no stored row with kept signal models", flush=True)
                continue
            start = time.perf_counter()
            dataset = corpus_dataset(args.data_dir, name)
            texts = list(dataset["text"])
            kept = read_candidates(folder)
            if kept is not None and not texts_match(texts, kept[1]):
                raise SystemExit(f"{folder}: the kept run partitions other texts than {name}'s; not recomputed.")
            results = {}
            for signal in rows[0]["signals"]:
                path = folder / SIGNALS_DIR / signal
                precision = (getattr(RunFolder(path).read_record(), "precision", None) or "auto").split(" ")[0]
                model = get_method(SIGNALS[signal].method).model_class.from_pretrained(path)
                # the passes as the run's CPU trainer made them (its default batch; the run's precision)
                trainer = SimpleNamespace(encode_batch_size=DEFAULT_ENCODE_BATCH_SIZE, precision=precision)
                results[signal] = SimpleNamespace(model=model, trainer=trainer)
            chosen = choose_from_signals(results, None, texts, seed=seed, criterion=DEFAULT_AUTO_CRITERION)
            others = [c for c in AUTO_RECORDED if c not in chosen.criteria]
            criteria = {
                **chosen.criteria,
                **criteria_of(chosen.candidates, chosen.features, texts=texts, criteria=others, random_state=seed),
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

    from hf_textcluster.data import BENCHMARKS
    from hf_textcluster.runs.auto import train_auto
    from hf_textcluster.runs.request import TrainingRequest

    from .rescoring import rescore_kept_candidates

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
            # the recipe's views come with the corpus (a tuning corpus' precomputed ones); a corpus with none trains as
            # a user's file does: on the views --augmentation makes
            recipe_views = args.augmentation == "recipe" or name not in BENCHMARKS
            dataset = corpus_dataset(args.data_dir, name) if recipe_views else name
            if args.limit:  # a quick check on a seeded subset (a tuning corpus with the contrastive signal's views)
                full = corpus_dataset(args.data_dir, name)
                dataset = full.shuffle(seed=0).select(range(min(args.limit, len(full))))
            output_dir = str(run_dir(SECTION, name, seed, args.variant or ("check" if args.limit else "")))
            # BERTopic itself on the same texts and machine, right before the default: what its time is quoted against
            texts_read = dataset if not isinstance(dataset, str) else corpus_dataset(args.data_dir, name)
            labels = np.asarray(texts_read["label"])
            bertopic = bertopic_timed(texts_read["text"], labels, seed, args.encoder, len(np.unique(labels)))
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
                signals=args.signals,
            )
            result = train_auto(request)  # train_clusterer("auto", ...)
            wall = time.perf_counter() - start
            # every other criterion, for the comparison: from the kept run, timed apart from the run as train makes it
            start = time.perf_counter()
            texts = list(result.train_dataset["text"])
            others = [c for c in AUTO_RECORDED if c not in result.auto["criteria"]]
            values = rescore_kept_candidates(output_dir, texts, criteria=others, random_state=seed)
            for candidate, criteria in result.auto["candidates"].items():
                criteria.update({c: round(float(v[candidate]), 6) for c, v in values.items()})
            extra = round(time.perf_counter() - start, 2)
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
                "bertopic_seconds": bertopic and bertopic["seconds"],
                "bertopic_acc": bertopic and bertopic["acc"],
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
                "cached": result.auto.to_dict().get("cached", {}),
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


def row_criteria(row: dict) -> dict[str, dict[str, float]]:
    """The criteria stored with ``row``'s candidates: criterion -> candidate -> value."""
    criteria: dict[str, dict[str, float]] = {}
    for candidate, part in row["partitions"].items():
        for criterion, value in part.get("criteria", {}).items():
            criteria.setdefault(criterion, {})[candidate] = value
    return criteria


def split_of(dataset: str) -> str:
    """The set a corpus belongs to (:func:`~training.bench.common.corpus_role`): ``"tuning"`` (the rules were chosen
    on it), ``"confirmation"`` or ``"confirmation_only"`` (no rule was chosen on them; a file the library has no
    builder for counts as confirmation-only)."""
    role = corpus_role(dataset)
    return "confirmation_only" if role == "?" else role
