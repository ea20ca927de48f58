"""What every section shares: the papers' reference numbers, the run record, and the table-cell formatting."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import statistics
import sys
from pathlib import Path

# Runs recorded before the benchmark became a package called the script `training/bench.py`; shown as today's command.
OLD_SCRIPT = "python training/bench.py "
COMMAND = "python -m training.bench "

# Published numbers (ACC / NMI, %) of the baselines, as reported in the SCCL paper's Table 1; each method's own
# paper numbers come from the method registry (`paper_results`, `paper_note`).
PAPER_BASELINES = {
    "bow-kmeans": {
        "agnews": (27.6, 2.6),
        "searchsnippets": (24.3, 9.3),
        "stackoverflow": (18.5, 14.0),
        "biomedical": (14.3, 9.2),
        "googlenews_ts": (57.5, 81.9),
        "googlenews_t": (49.8, 73.2),
        "googlenews_s": (49.0, 73.5),
        "tweet": (49.7, 73.6),
    },
    "tfidf-kmeans": {
        "agnews": (34.5, 11.9),
        "searchsnippets": (31.5, 19.2),
        "stackoverflow": (58.4, 58.7),
        "biomedical": (28.3, 23.2),
        "googlenews_ts": (68.0, 88.9),
        "googlenews_t": (58.9, 79.3),
        "googlenews_s": (61.9, 83.0),
        "tweet": (57.0, 80.7),
    },
}
# Reported rows of other methods that top a corpus in the papers' tables (SCCL paper, Table 1): the leaderboard's
# "best reported" takes them with the five methods' own numbers (GoogleNews-T 81.8, Tweet 89.6 are HAC-SD's).
PAPER_OTHER_METHODS = {
    "HAC-SD": {
        "agnews": 81.8,
        "searchsnippets": 82.7,
        "stackoverflow": 64.8,
        "biomedical": 40.1,
        "googlenews_ts": 85.8,
        "googlenews_t": 81.8,
        "googlenews_s": 80.6,
        "tweet": 89.6,
    },
    "Self-Train": {"searchsnippets": 77.1, "stackoverflow": 59.8, "biomedical": 54.8},
}


TRAIN_TIME_LEGEND = (
    "*train (s)*: mean per CPU kind (bf16 AMX = native bf16 with AMX, a Xeon; bf16 AVX512 = native "
    "bf16 without AMX, a Zen 4 EPYC; AVX2 = fp32, no native bf16); a run that shared "
    "the CPU with another job (its note says so) is left out unless all of its kind did (†)."
)


def methods() -> dict:
    from hf_textcluster.models import METHODS

    return METHODS


def display_name(method: str) -> str:
    spec = methods().get(method)
    return spec.display_name if spec else method.upper()


def environment() -> dict:
    import importlib.metadata as md

    versions = {}
    for package in ("torch", "transformers", "sentence-transformers", "datasets", "scikit-learn", "hf_textcluster"):
        try:
            versions[package] = md.version(package)
        except md.PackageNotFoundError:
            versions[package] = "-"
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import torch

    from hf_textcluster.modeling.hardware import cpu_capability

    emulated = (
        " [ONEDNN_MAX_CPU_ISA=" + os.environ["ONEDNN_MAX_CPU_ISA"] + "]" if os.environ.get("ONEDNN_MAX_CPU_ISA") else ""
    )
    gpu = f", GPU {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""  # rows name their GPU
    return {
        "versions": versions,
        "machine": f"{cpu}, {cpu_capability()}{emulated}, {os.cpu_count()} cores, torch threads "
        f"{torch.get_num_threads()}, Python {platform.python_version()}{gpu}",
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": COMMAND + " ".join(shlex.quote(a) for a in sys.argv[1:]),
    }


def encoder_variant(encoder: str | None) -> str:
    """The label of runs with a non-default encoder: its short name ("all-mpnet-base-v2"); "" for the default."""
    from hf_textcluster.encoders import DEFAULT_ENCODER

    if encoder is None or encoder == DEFAULT_ENCODER:
        return ""
    return Path(encoder.rstrip("/")).name


def mean_std(values: list[float]) -> str:
    values = [100 * v for v in values]
    if len(values) == 1:
        return f"{values[0]:.1f}"
    return f"{statistics.mean(values):.1f} ± {statistics.stdev(values):.1f}"


def paper_cell(method: str, dataset: str, index: int) -> str:
    """The paper's ACC (``index`` 0) or NMI (1) of ``method`` on ``dataset``, or "–"."""
    spec = methods().get(method)
    value = (spec.paper_results if spec else PAPER_BASELINES.get(method, {})).get(dataset)
    return f"{value[index]:.1f}" if value else "–"


def paper_purity_cell(method: str, dataset: str) -> str:
    """The purity ``method``'s paper reports on ``dataset`` (DEC-MLM's metric), or "–"."""
    purity = methods()[method].paper_purity.get(dataset)
    return f"{purity:.1f}" if purity is not None else "–"


def cpu_kind(machine: str) -> str:
    """The kind of processor that timed a run, from its machine description: the GPU where one trained (``GPU
    NVIDIA H200``), else the CPU kind (`hf_textcluster.modeling.hardware.cpu_capability`'s words): fp32 without native
    bf16, bf16 with AMX (a Xeon), bf16 on AVX-512-BF16 alone (a Zen 4 EPYC)."""
    if not machine:
        return "?"
    if ", GPU " in machine:
        return "GPU " + machine.split(", GPU ", 1)[1].strip()
    return "AVX2" if "no native bf16" in machine else "bf16 AMX" if "AMX" in machine else "bf16 AVX512"


def train_time(store: dict, rows: list[dict], key: str = "train_seconds") -> str:
    """Mean train seconds (or another time, ``key``) per CPU kind: a mean over a bf16 Xeon and an AVX2 EPYC would
    mean nothing, and bf16 with AMX (a Xeon) runs faster than bf16 on AVX-512-BF16 alone (a Zen 4 EPYC). A run whose
    time another job inflated (its note says so) counts only when its kind has no other (then marked †)."""
    by_kind: dict[str, list[dict]] = {}
    for r in rows:
        machine = store.get("runs", {}).get(r.get("run"), {}).get("machine", "")
        by_kind.setdefault(r.get("cpu_kind") or cpu_kind(machine), []).append(r)  # a row may record its kind
    parts = []
    for kind, krows in sorted(by_kind.items()):
        clean = [r for r in krows if "inflated" not in r.get("note", "")]
        parts.append(f"{statistics.mean(r[key] for r in clean or krows):.0f}{'' if clean else '†'} ({kind})")
    return " / ".join(parts)


def run_command(run: dict) -> str:
    """The command that made a run, spelled as it is run today (``python -m training.bench <section> ...``)."""
    command = run["command"]
    return COMMAND + command[len(OLD_SCRIPT) :] if command.startswith(OLD_SCRIPT) else command


def run_header(store: dict, rows: list[dict]) -> list[str]:
    lines = []
    for run_id in sorted({r["run"] for r in rows}):
        run = store["runs"][run_id]
        versions = ", ".join(f"{k} {v}" for k, v in sorted(run["versions"].items()))
        lines.append(f"- `{run_command(run)}` ({run['date']}; {run['machine']}; {versions})")
    return lines


def method_order(method: str) -> tuple[int, str]:
    order = list(methods())
    return (order.index(method) if method in order else len(order), method)


def gain(rows: list[dict], metric: str) -> str:
    """Mean gain (points) of the trained head over the same run's k-means initialisation."""
    gain = round(100 * statistics.mean(r[metric] - r[f"init_kmeans_{metric}"] for r in rows), 1)
    return f"{gain + 0.0:+.1f}"  # + 0.0: no "-0.0"


def umap_scores(rows: list[dict]) -> tuple[list, list]:
    """UMAP k-means after ACC and NMI of the rows that have them (runs made or rescored since the metric exists)."""
    have = [r for r in rows if "umap_kmeans_acc" in r]
    return [r["umap_kmeans_acc"] for r in have], [r["umap_kmeans_nmi"] for r in have]


def umap_cells(acc: list, nmi: list, seeds: int, acc_cell=mean_std) -> str:
    """The UMAP k-means after ACC | NMI cells: how many of the seeds have it in brackets when not all do."""
    if not acc:
        return "– | –"
    return f"{acc_cell(acc)}{f' ({len(acc)})' if len(acc) < seeds else ''} | {mean_std(nmi)}"


def by_method_and_dataset(rows: list[dict]):
    """(display name with variant, dataset, rows) per method, variant and dataset, in a stable order."""
    for key in sorted({(r["method"], r.get("variant", ""), r["dataset"]) for r in rows}):
        name = display_name(key[0]) + (f" ({key[1]})" if key[1] else "")
        yield name, key[2], [r for r in rows if (r["method"], r.get("variant", ""), r["dataset"]) == key]


def default_baselines(rows: list[dict]) -> list[dict]:
    """The baseline rows made with the default encoder (another encoder's are its variant, in their own section)."""
    return [r for r in rows if r["section"] == "baselines" and not r.get("variant")]


def default_data_dir() -> str:
    """``$HF_TEXTCLUSTER_DATA_DIR``, else the shared corpora beside the checkout."""
    from .store import REPO

    return os.environ.get("HF_TEXTCLUSTER_DATA_DIR") or str(REPO.parent / "shared" / "data")


# Which set each corpus belongs to is recorded once, as `CorpusSpec.role` in hf_textcluster/data/corpora.py (decided
# before any confirmation corpus was run; docs/benchmarks.md gives the reason). Rules are chosen on the tuning set;
# confirmation numbers are reported as they fall.
ROLE_TITLES = {
    "tuning": "tuning set (rules were chosen on it)",
    "confirmation": "confirmation set (in-house, never tuned on)",
    "confirmation_only": "confirmation-only (public corpora of the kinds users bring)",
}


def corpus_role(dataset: str) -> str:
    """The set a row's corpus belongs to: ``"tuning"``, ``"confirmation"`` or ``"confirmation_only"`` (``"?"`` for a
    name that is not a benchmark corpus)."""
    from hf_textcluster.data import CORPORA

    spec = CORPORA.get(dataset)
    return spec.role if spec else "?"


def by_role(datasets) -> dict[str, list[str]]:
    """The given corpus names grouped by role, in the order tuning, confirmation, confirmation-only (empty groups
    left out): what a table splits its rows by."""
    groups: dict[str, list[str]] = {role: [] for role in ROLE_TITLES}
    for name in datasets:
        groups.setdefault(corpus_role(name), []).append(name)
    return {role: names for role, names in groups.items() if names}


def expand_benchmark_names(names) -> list[str]:
    """Canonical corpus names for ``--datasets``' names and group names, in the given order, each once. Groups:
    ``all`` (the in-house corpora: tuning + confirmation; confirmation-only corpora are named one by one or by their
    group), ``tuning``, ``confirmation``, ``confirmation_only`` (case and ``-``/``_`` insensitive)."""
    from hf_textcluster.data.corpora import IN_HOUSE, ROLES, benchmark_key, benchmarks_with_role, resolve_benchmark_name

    groups = {"all": IN_HOUSE, **{role: benchmarks_with_role(role) for role in ROLES}}
    expanded: list[str] = []
    for name in names:
        try:
            corpora = groups.get(benchmark_key(name)) or (resolve_benchmark_name(name),)
        except ValueError as error:
            raise ValueError(f"{error} Or a group: {', '.join(groups)}.") from None
        expanded += [corpus for corpus in corpora if corpus not in expanded]
    return expanded


def add_corpus_arguments(parser: argparse.ArgumentParser, seeds: bool = True) -> None:
    """``--datasets`` (names or groups), ``--seeds`` and ``--data-dir``: what the sections that loop over corpora
    take."""
    parser.add_argument(
        "--datasets",
        nargs="+",
        default=["all"],
        help="Benchmark corpora, or groups: all (default: the eleven in-house corpora, tuning + confirmation), "
        "tuning, confirmation, confirmation_only (their CSVs are not in the shared folder: pass --data-dir).",
    )
    if seeds:
        parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--data-dir", default=default_data_dir())


def new_run_id(section: str) -> str:
    """A run's key in the store: the section and the UTC start time."""
    return f"{section}-{dt.datetime.now(dt.timezone.utc).strftime('%Y%m%dT%H%M%S')}"


def key_values(pairs: list[str]) -> dict:
    """``["max_steps=3", "bf16=false"]`` -> ``{"max_steps": 3, "bf16": False}``: each value read as JSON."""
    return {key: json.loads(value) for key, _, value in (pair.partition("=") for pair in pairs)}
