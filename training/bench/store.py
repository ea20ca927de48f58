"""The results store, docs/results.json: rows keyed by section / method / dataset / seed / variant, and the runs
that made them (command, package versions, machine).

Every section appends its rows as it measures them (``put_row`` then ``save_store``), so a run that stops keeps what
it finished and a re-run with ``--skip-done`` resumes; several bench processes may write at once: each saves only the
rows it put. Saving then calls :data:`on_save`, which the entry point sets to re-render docs/results.md (and
README's table) from everything stored.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RESULTS_JSON = Path(os.environ.get("HF_TEXTCLUSTER_BENCH_STORE", REPO / "docs" / "results.json"))
RESULTS_MD = RESULTS_JSON.with_suffix(".md")
README_MD = REPO / "README.md"
# What every save calls with the saved store: ``render.write_rendered`` once ``python -m training.bench`` (or a test)
# sets it. The store cannot import the renderer: it imports every section, and every section imports the store.
on_save: Callable[[dict], None] | None = None


def load_store() -> dict:
    """The store as it is on disk (``{"rows": [...], "runs": {...}}``), empty when there is none yet."""
    if RESULTS_JSON.is_file():
        return json.loads(RESULTS_JSON.read_text())
    return {"rows": [], "runs": {}}


def row_key(row: dict) -> tuple:
    """A row's identity: a row put with the same key replaces the stored one."""
    return (row["section"], row["method"], row["dataset"], row.get("seed"), row.get("variant", ""))


def save_store(store: dict) -> None:
    """Write the rows this process put (``put_row``) into the file as it is now: rows written meanwhile by another
    bench process (or corrected by hand) are kept, not overwritten with this process's copy from its start."""
    current = load_store()
    dirty = store.pop("_dirty", set())
    current["runs"] = {**current.get("runs", {}), **store.get("runs", {})}
    mine = {row_key(r): r for r in store["rows"] if row_key(r) in dirty}
    # a re-made row keeps its place (the file's diff shows what changed); a new one goes last
    rows = [mine.pop(row_key(r), r) if row_key(r) in mine else r for r in current["rows"]]
    current["rows"] = rows + list(mine.values())
    store.clear()
    store.update(current)
    RESULTS_JSON.parent.mkdir(parents=True, exist_ok=True)
    tmp = RESULTS_JSON.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(store, indent=1, sort_keys=True))
    os.replace(tmp, RESULTS_JSON)
    if on_save is not None:
        on_save(store)


def put_row(store: dict, row: dict) -> None:
    """Add ``row`` to ``store`` (replacing the row with its key) and mark it for the next ``save_store``."""
    key = row_key(row)
    store["rows"] = [r for r in store["rows"] if row_key(r) != key]
    store["rows"].append(row)
    store.setdefault("_dirty", set()).add(key)


def run_dir(method: str, dataset: str, seed: int, variant: str) -> Path:
    """Where a method run keeps its trained model (runs/ is git-ignored), so a model card or a later measurement
    (`rescore`) can use a real run."""
    variant_slug = re.sub(r"[^a-z0-9]+", "-", variant.lower()).strip("-")  # "w/o MLM" -> "w-o-mlm"
    return REPO / "runs" / "bench" / f"{method}-{dataset}-seed{seed}{'-' + variant_slug if variant_slug else ''}"


def select_rows(store: dict, section: str, **where) -> list[dict]:
    """The stored rows of ``section`` whose fields equal ``where`` (``variant`` compares "" and absent as equal)."""
    return [
        r
        for r in store["rows"]
        if r["section"] == section
        and all((r.get(k) or "" if k == "variant" else r.get(k)) == v for k, v in where.items())
    ]
