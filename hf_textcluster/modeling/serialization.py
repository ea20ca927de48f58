"""Saving a folder atomically with the umask's file modes (:func:`save_staged`, :func:`apply_umask`): what the model's
``save_pretrained``, the Hub layer and the run folders write with.

Package-only: no shipped module imports this one (as remote code, ``save_pretrained`` writes in place). Loading and
its checks are :mod:`~hf_textcluster.modeling.loading_checks`, which is shipped.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable


def save_staged(save_directory: str | os.PathLike, write: Callable[[str], None]) -> None:
    """``write(staging)`` fills a temporary folder inside ``save_directory`` (created if missing), whose files are
    then given the umask's modes and moved into place: an interrupted save never leaves a half-written folder."""
    save_directory = os.fspath(save_directory)
    if os.path.exists(save_directory) and not os.path.isdir(save_directory):
        raise NotADirectoryError(
            f"`save_directory` {save_directory} is a file, not a folder: pass a folder (it is created if missing)."
        )
    os.makedirs(save_directory, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".saving-", dir=save_directory)
    try:
        write(staging)
        apply_umask(staging)
        for name in os.listdir(staging):  # replacing what is there
            target = os.path.join(save_directory, name)
            if os.path.isdir(target) and not os.path.islink(target):
                shutil.rmtree(target)
            os.replace(os.path.join(staging, name), target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def current_umask() -> int:
    """The process' umask (read from ``/proc`` where it can be, so that it is never changed, even for a moment)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def apply_umask(path: str | os.PathLike) -> None:
    """Give ``path`` (a file, or a folder and everything in it) the mode a file created now gets (``0o666`` less the
    umask; folders ``0o777`` less it): transformers and safetensors write their files readable by their owner only
    (``0o600``), which another account of a shared machine could not load."""
    mask = current_umask()
    path = os.fspath(path)
    if not os.path.isdir(path):
        os.chmod(path, 0o666 & ~mask)
        return
    for root, folders, files in os.walk(path):
        for name in folders:
            os.chmod(os.path.join(root, name), 0o777 & ~mask)
        for name in files:
            file = os.path.join(root, name)
            if not os.path.islink(file):
                os.chmod(file, 0o666 & ~mask)
