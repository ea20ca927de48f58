"""What the study scripts share: which corpora of a run are still to do, with the embeddings ``cached_encode.py``
cached for them, and one JSON line a corpus appended to the study's results (so a stopped study resumes)."""

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

EMBEDDINGS = "/tmp/emb/{name}.npz"


def pending(out: Path, names: Iterable[str]) -> Iterator[tuple[str, dict]]:
    """The corpora of ``names`` that ``out`` has no line for yet, each with its cached embeddings."""
    done = {json.loads(line)["dataset"] for line in out.read_text().splitlines()} if out.exists() else set()
    for name in names:
        if name not in done:
            yield name, np.load(EMBEDDINGS.format(name=name))


def append_row(out: Path, row: dict) -> None:
    with out.open("a") as f:
        f.write(json.dumps(row) + "\n")


def class_subsets(
    labels: np.ndarray, sizes: Iterable[int], draws: int, min_texts: int
) -> Iterator[tuple[str, np.ndarray]]:
    """The tasks a study grows the tuning set with: the corpus whole, then ``draws`` seeded draws of each of ``sizes``
    of its classes (fewer than it has; at least ``min_texts`` texts), as (name, rows)."""
    classes = np.unique(labels)
    yield "whole", np.arange(len(labels))
    rng = np.random.default_rng(0)
    for size in sizes:
        if size >= len(classes):
            continue
        for draw in range(draws):
            chosen = rng.choice(classes, size, replace=False)
            rows = np.flatnonzero(np.isin(labels, chosen))
            if len(rows) >= min_texts:
                yield f"{size} classes" + (f", draw {draw}" if draws > 1 else ""), rows


def leave_one_corpus_out(tasks: list[tuple], options: list[str], served) -> None:
    """Print every option over all ``tasks`` ((corpus, task name, ...) tuples), then each held-out fold's pick.

    ``served(option, task)`` -> (score, K chosen, whether K is within 25% of the true K); ``options[0]`` is the
    current rule, kept on ties. A fold picks the option with the best mean score on the other corpora' tasks and is
    scored on its own; the three GoogleNews corpora (one corpus' titles, snippets and both) are then left out together.
    """
    print(f"{len(tasks)} tasks; (ACC + NMI) / 2 of the served partition, K within 25% of the true K")
    width = max(len(o) for o in options)
    for option in options:
        got = [served(option, t) for t in tasks]
        print(
            f"  {option:{width}s} {np.mean([g[0] for g in got]):6.2f}  K ok {sum(g[2] for g in got):2d}/{len(tasks)}"
            f"  K {[g[1] for g in got]}"
        )
    corpora = list(dict.fromkeys(t[0] for t in tasks))
    news = [c for c in corpora if c.startswith("googlenews")]
    for label, folds in (
        ("one corpus", [[c] for c in corpora]),
        ("GoogleNews together", [news] + [[c] for c in corpora if c not in news]),
    ):
        print(f"\nleaving {label} out (ties keep the current rule):")
        held, current, ok = [], [], 0
        for fold in folds:
            train = [t for t in tasks if t[0] not in fold]
            test = [t for t in tasks if t[0] in fold]
            best = max(options, key=lambda o: round(np.mean([served(o, t)[0] for t in train]), 6))
            got = [served(best, t) for t in test]
            held += [g[0] for g in got]
            current += [served(options[0], t)[0] for t in test]
            ok += sum(g[2] for g in got)
            print(
                f"  {'+'.join(fold):40s} picks {best:{width}s} {np.mean(held[-len(test) :]):6.2f} (current "
                f"{np.mean(current[-len(test) :]):6.2f}) K {[g[1] for g in got]}"
            )
        print(
            f"  held out {np.mean(held):.2f} against the current {np.mean(current):.2f}; "
            f"K within 25% on {ok}/{len(tasks)}"
        )


def run_tasks(
    out: Path, names: Iterable[str], run, sizes=(3, 5, 10), min_texts: int = 300, texts: bool = False
) -> None:
    """``run(name, task, x, labels, texts)`` on each task of each corpus of ``names`` that ``out`` has no line for:
    the corpus' cached subsample whole and one seeded draw of each of ``sizes`` of its classes (``x``: its
    L2-normalised embeddings; ``texts``: theirs, read from the benchmark when asked, else None); one line a corpus."""
    for name, z in pending(out, names):
        x = z["e0"].astype(np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        corpus = None
        if texts:
            from hf_textcluster.data import load_benchmark

            ds = load_benchmark(name, data_dir="/work/shared/data")
            assert np.array_equal(np.asarray(ds["label"])[z["idx"]], z["labels"])  # the cached rows are these texts
            corpus = [ds[int(i)]["text"] for i in z["idx"]]
        row: dict = {"dataset": name, "tasks": {}}
        for task, idx in class_subsets(z["labels"], sizes, 1, min_texts):
            chosen = None if corpus is None else [corpus[i] for i in idx]
            row["tasks"][task] = r = run(name, task, x[idx], z["labels"][idx], chosen)
            print(name, task, r["N"], r["K"], flush=True)
        append_row(out, row)
