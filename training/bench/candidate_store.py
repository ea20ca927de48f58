"""The committed candidate store: every benchmark ``auto`` run's candidate partitions of its training texts, so that a
study of a new label-free criterion needs no retraining and no run folder (which does not outlive a session).

One compressed ``.npz`` per run in ``training/bench/candidates/`` (the run's key as its name): one int16 array per
candidate (and ``served``, the clusters the saved model gives the texts), plus the training texts' count and digest,
which must match the texts a study reads. Criteria that need only the partitions and the texts (agreement, the
lexical vote and its supported form) are computed from it; criteria in a model's embedding space still need the kept
run (``python -m training.bench auto --rescore`` says which).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .store import REPO

STORE_DIR = REPO / "training" / "bench" / "candidates"
_META = ("texts_sha1", "num_train_texts")


def store_path(section: str, dataset: str, seed: int, variant: str) -> Path:
    """Where a run's candidates are kept: ``<section>-<dataset>-seed<seed>[-<variant>].npz``."""
    from .store import run_dir

    return STORE_DIR / f"{run_dir(section, dataset, seed, variant).name}.npz"


def keep(run_folder: str | os.PathLike, path: Path) -> Path | None:
    """Copy the candidates a run folder kept (``candidates.safetensors``) into the store at ``path``; None when the
    folder keeps none."""
    from hf_textcluster.runs.candidate_file import read_candidates

    kept = read_candidates(run_folder)
    return None if kept is None else save(path, *kept)


def save(path: Path, partitions: dict[str, np.ndarray], metadata: dict[str, str]) -> Path:
    """Write ``partitions`` (name -> one cluster id per training text) and the texts' ``texts_sha1`` and
    ``num_train_texts`` to ``path``, compressed."""
    if max(int(np.max(p)) for p in partitions.values()) > np.iinfo(np.int16).max:
        raise ValueError(f"{path.name}: a candidate has more clusters than int16 holds.")
    arrays = {name: np.asarray(p).astype(np.int16) for name, p in partitions.items()}
    arrays.update({f"__{key}__": np.array(str(metadata[key])) for key in _META})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    os.replace(tmp, path)
    return path


def load(path: Path) -> tuple[dict[str, np.ndarray], dict[str, str]] | None:
    """(candidate name -> partition, metadata with ``texts_sha1`` and ``num_train_texts``), or None when the store
    has no such run."""
    if not path.is_file():
        return None
    with np.load(path, allow_pickle=False) as f:
        metadata = {key: str(f[f"__{key}__"]) for key in _META}
        partitions = {name: f[name].astype(np.int64) for name in f.files if not name.startswith("__")}
    return partitions, metadata
