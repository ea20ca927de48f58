"""On the accelerator machine: install what ``carry.py`` carried, run a method's ``paper`` recipe on a corpus with the
benchmark (``python -m training.bench <method> --recipe paper``) and store its row, with the GPU's name, steps x batch
and wall time, in a copy of the benchmark store that comes back.

    python training/accelerator/run_paper.py --method sccl --corpus stackoverflow --out "$OUT"

The carried wheels go into ``runs/carry-site`` (``pip install --target``; a package installed at the carried version
is left alone, one at another version is replaced, as ``runs/carry-site`` comes first on the benchmark's path), the fp16
encoder is turned back into fp32 and the corpora unpacked under ``runs/carry-restored``. The store is
``<out>/results.json`` (a copy of docs/results.json to which the new row is added); back here,

    python training/accelerator/run_paper.py --merge <that results.json>

puts the rows it has that docs/results.json lacks into docs/results.json (through the store, which re-renders
docs/results.md). Any other benchmark section runs the same way on the carried corpora and encoder:

    python training/accelerator/run_paper.py --bench compute-curve --out "$OUT" -- --datasets tweet --seeds 0

and the GPU tests (``tests/gpu``, marker ``cuda``) with the wheels of ``carry.py --wheels-only``:

    python training/accelerator/run_paper.py --tests --carry runs/carry-tests -- -x
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CARRY = REPO / "runs" / "carry"
SITE = REPO / "runs" / "carry-site"
RESTORED = REPO / "runs" / "carry-restored"


def install_wheels(carry: Path) -> None:
    """Install each carried wheel whose distribution this Python lacks or has at another version (so that the
    accelerator runs what was tested here: e.g. a newer transformers than the machine's), into ``runs/carry-site``,
    which comes first on the benchmark's path. A wheel built for another Python is reported and skipped."""
    import importlib.metadata

    SITE.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(SITE))
    for wheel in sorted((carry / "wheels").glob("*.whl")):
        distribution, version = wheel.name.split("-")[:2]
        try:
            if importlib.metadata.version(distribution) == version:
                continue
        except importlib.metadata.PackageNotFoundError:
            pass
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--no-deps",
                "--no-index",
                "-q",
                "--target",
                str(SITE),
                str(wheel),
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode:
            print(f"warning: could not install {wheel.name}: {done.stderr.strip()[-300:]}", file=sys.stderr)


def restore(carry: Path) -> tuple[Path, Path]:
    """(the encoder folder with fp32 weights, the data folder), from the carried fp16 encoder and corpora archive."""
    from safetensors.torch import load_file, save_file

    manifest = json.loads((carry / "carry.json").read_text())
    source = carry / "encoder" / manifest["encoder"]
    encoder = RESTORED / "encoder" / manifest["encoder"]
    if encoder.exists():
        shutil.rmtree(encoder)
    shutil.copytree(source, encoder)
    weights = load_file(str(source / "model.safetensors"))
    save_file(
        {k: (v.float() if v.is_floating_point() else v).contiguous() for k, v in weights.items()},
        str(encoder / "model.safetensors"),
        metadata={"format": "pt"},
    )
    data = RESTORED / "data"
    data.mkdir(parents=True, exist_ok=True)
    with tarfile.open(carry / "data.tar.xz") as tar:
        tar.extractall(data, filter="data")
    return encoder, data


def device_name() -> str:
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"


def prepare(carry: Path, out: Path) -> tuple[Path, Path, Path, dict]:
    """Install the carried wheels, restore the encoder and corpora, copy the store into ``out``. Returns (encoder
    folder, data folder, store path, the environment a benchmark process runs in)."""
    install_wheels(carry)
    encoder, data = restore(carry)
    out.mkdir(parents=True, exist_ok=True)
    store = out / "results.json"
    if not store.exists():  # a second section in the same call adds to the first one's store
        shutil.copy(REPO / "docs" / "results.json", store)
    return encoder, data, store, {**environment(), "HF_TEXTCLUSTER_BENCH_STORE": str(store)}


def environment() -> dict:
    """The environment a process run here gets: offline, the carried wheels and the checkout first on its path."""
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONPATH": os.pathsep.join([str(SITE), str(REPO), os.environ.get("PYTHONPATH", "")]),
    }


def bench_command(section: str, arguments: list[str], data: Path, encoder: Path) -> list[str]:
    """``python -m training.bench <section> <arguments>`` on the carried corpora and encoder."""
    return [
        sys.executable,
        "-m",
        "training.bench",
        section,
        *arguments,
        "--data-dir",
        str(data),
        "--encoder",
        str(encoder),
    ]


def run_section(args) -> int:
    """``python -m training.bench <section> <its arguments> --data-dir <carried> --encoder <carried>``, storing into
    ``<out>/results.json``: e.g. ``--bench compute-curve -- --datasets tweet --seeds 0 --scales 1 10``."""
    encoder, data, _, env = prepare(args.carry, Path(args.out).resolve())
    command = bench_command(args.bench, args.section_args, data, encoder)
    print(" ".join(command), flush=True)
    return subprocess.run(command, cwd=REPO, env=env).returncode


def run_tests(args) -> int:
    """``python -m pytest -q -m cuda tests/gpu <arguments>`` with the carried wheels first on the path."""
    install_wheels(args.carry)
    command = [sys.executable, "-m", "pytest", "-q", "-m", "cuda", "-p", "no:cacheprovider", "tests/gpu"]
    command += args.section_args
    print(" ".join(command), flush=True)
    return subprocess.run(command, cwd=REPO, env=environment()).returncode


def run_paper(args) -> int:
    encoder, data, store, env = prepare(args.carry, Path(args.out).resolve())
    arguments = ["--recipe", "paper", "--datasets", args.corpus, "--seeds", *map(str, args.seeds)]
    command = bench_command(args.method, arguments, data, encoder)
    command += ["--variant", f"paper recipe, {device_name()}"]
    if args.max_steps:
        command += ["--max-steps", str(args.max_steps)]
    command += args.section_args  # e.g. -- --no-partitions
    if importlib.util.find_spec("umap") is None or importlib.util.find_spec("numba") is None:
        print(
            "error: umap-learn needs numba and llvmlite, which this machine lacks (too large to carry); the "
            "benchmark scores UMAP k-means. Install them here, or score without: this runs with --no-partitions "
            "and no UMAP columns only when --without-umap is given.",
            file=sys.stderr,
        )
        if not args.without_umap:
            return 1
        command = [sys.executable, str(Path(__file__).resolve()), "--bench-without-umap", "--", *command[3:]]
    print(" ".join(command), flush=True)
    done = subprocess.run(command, cwd=REPO, env=env)
    if done.returncode == 0:
        rows = [r for r in json.loads(store.read_text())["rows"] if r.get("variant", "").startswith("paper recipe, ")]
        for row in rows[-len(args.seeds) :]:
            print(
                f"{row['method']} {row['dataset']} seed {row['seed']} on {device_name()}: {row['steps']} steps x "
                f"{row['batch_size']}, {row['train_seconds']}s, head ACC {100 * row['acc']:.1f}"
            )
    return done.returncode


def bench_without_umap(argv: list[str]) -> int:
    """``python -m training.bench ...`` with the UMAP k-means scores switched off (a machine without numba)."""
    import hf_textcluster.training.trainer as trainer_module

    evaluate = trainer_module.evaluate_clusterer

    def without_umap(*args, **kwargs):
        kwargs["umap_kmeans"] = False
        return evaluate(*args, **kwargs)

    trainer_module.evaluate_clusterer = without_umap
    sys.argv = ["training.bench", *argv, "--no-partitions"]
    import runpy

    runpy.run_module("training.bench", run_name="__main__")
    return 0


def merge(path: Path) -> int:
    """Put the rows of the store ``path`` that docs/results.json lacks (by key) into it, with their runs."""
    sys.path.insert(0, str(REPO))
    from training.bench.store import load_store, put_row, row_key, save_store

    theirs = json.loads(Path(path).read_text())
    store = load_store()
    known = {row_key(r) for r in store["rows"]}
    new = [r for r in theirs["rows"] if row_key(r) not in known]
    for row in new:
        put_row(store, row)
        store.setdefault("runs", {})[row["run"]] = theirs["runs"][row["run"]]
    if new:
        save_store(store)
    print(f"{len(new)} new row(s) merged into docs/results.json.")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:2] == ["--bench-without-umap", "--"]:
        return bench_without_umap(argv[2:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--method", help="A registered method (sccl, deccrl, aecl, clusterbert, decmlm).")
    parser.add_argument("--corpus", help="A carried corpus (see runs/carry/carry.json).")
    parser.add_argument(
        "--bench",
        default=None,
        metavar="SECTION",
        help="Instead of a paper recipe: run this benchmark section (e.g. compute-curve) with the arguments after "
        "--, on the carried corpora and encoder.",
    )
    parser.add_argument(
        "--tests", action="store_true", help="Run the GPU tests (tests/gpu, marker cuda) with the arguments after --."
    )
    parser.add_argument(
        "section_args", nargs="*", help="The section's, pytest's or the paper run's benchmark arguments (after --)."
    )
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--max-steps", type=int, default=None, help="Fewer steps than the recipe's (a smoke run).")
    parser.add_argument(
        "--out",
        default=os.environ.get("OUT", str(REPO / "runs" / "accelerator-out")),
        help="Where the store with the new row is written (default: $OUT).",
    )
    parser.add_argument("--carry", type=Path, default=CARRY)
    parser.add_argument(
        "--without-umap",
        action="store_true",
        help="On a machine without numba: score without UMAP k-means and candidate partitions.",
    )
    parser.add_argument(
        "--merge",
        type=Path,
        default=None,
        metavar="RESULTS_JSON",
        help="Here, not on the machine: merge a returned store's new rows into docs/results.json.",
    )
    args = parser.parse_args(argv)
    if args.merge:
        return merge(args.merge)
    if args.tests:
        return run_tests(args)
    if args.bench:
        return run_section(args)
    if not args.method or not args.corpus:
        parser.error("--method and --corpus are required (or --merge).")
    return run_paper(args)


if __name__ == "__main__":
    sys.exit(main())
