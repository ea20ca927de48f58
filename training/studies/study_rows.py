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
