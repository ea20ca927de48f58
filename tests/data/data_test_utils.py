"""Helpers of the data tests (imported by the test modules; conftest.py is not importable by name)."""

from __future__ import annotations

from pathlib import Path


def write_csv(path: Path, header: list[str], rows: list[list]) -> Path:
    import csv

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    return path
