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
