"""hf_textcluster's cache folder, folders published into it whole (pip-shipped data unpacked on first use), and files
written whole."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


def cache_dir() -> Path:
    """``$HF_TEXTCLUSTER_CACHE``, else ``$XDG_CACHE_HOME/hf_textcluster``, else ``~/.cache/hf_textcluster``."""
    if os.environ.get("HF_TEXTCLUSTER_CACHE"):
        return Path(os.environ["HF_TEXTCLUSTER_CACHE"]).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hf_textcluster"


def publish_folder(target: Path, build: Callable[[Path], Path], ready: str) -> None:
    """Make ``target`` by ``build(staging)`` (which fills a folder inside the temporary ``staging`` and returns it)
    and rename it into place: a half-written folder is never used, and when a concurrent first use (another process)
    published ``target`` first (it has the file ``ready``), that copy is kept."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        built = build(staging)
        try:
            os.rename(built, target)
        except OSError:
            if not (target / ready).is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def write_whole(path: str | os.PathLike, text: str) -> None:
    """Write the text file ``path`` whole or not at all: a temporary file renamed over it, so a reader never sees half
    of it. The temporary file is this process's own: processes writing one file at once (every process of an
    ``accelerate launch`` records a run's identity) must not rename each other's away."""
    staging = f"{os.fspath(path)}.{os.getpid()}.tmp"
    with open(staging, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    os.replace(staging, path)
