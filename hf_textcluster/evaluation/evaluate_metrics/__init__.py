"""``evaluate`` modules shipped with the package (each folder holds a script ``evaluate.load(<folder>)`` reads)."""

from pathlib import Path

CLUSTERING_METRICS_PATH = str(Path(__file__).resolve().parent / "clustering_metrics")
