"""Saving a folder all or nothing, with the umask's file modes (:func:`save_folder`, :func:`apply_umask`): what the
model's ``save_pretrained``, the Hub layer, the edit commands and the run folders write with.

A save writes the folder's new state into a staging folder beside it (``.<name>.saving-<id>``): the files it writes,
then every other file of the folder hard-linked (not copied). The two folders are then swapped in one step (Linux's
``renameat2(RENAME_EXCHANGE)``; elsewhere two renames), and the old state is deleted. Killed at any point, the folder
holds its old state or its new one; the next save or load of the folder (:func:`recover_folder`) deletes what an
interrupted save left, or completes the save when its new state was complete.

Package-only: no shipped module imports this one (as remote code, ``save_pretrained`` writes in place). Loading and
its checks are :mod:`~hf_textcluster.modeling.loading_checks`, which is shipped.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import shutil
import stat
import sys
from collections.abc import Callable

from transformers.utils import logging

logger = logging.get_logger(__name__)

# the weight files of a save: a new save's replace all the old ones (a sharded checkpoint's too)
_WEIGHTS = re.compile(r"(model|pytorch_model)(-\d+-of-\d+)?\.(safetensors|bin)(\.index\.json)?")
_STAGING = re.compile(r"\.(?P<name>.+)\.saving-(?P<id>\d+)(?P<suffix>\.old|\.partial-\d+)?")
_active: set[str] = set()  # the staging folders being written: a save into one writes there directly


def save_folder(folder: str | os.PathLike, write: Callable[[str], None], keep: Callable[[str], bool] | None = None):
    """Replace ``folder`` (created if missing) by its new state all at once: ``write(staging)`` writes the new files
    into an empty staging folder, which gets the umask's modes; then every name of ``folder`` that ``write`` did not
    write is hard-linked into it (but old weights when new ones were written, and names ``keep(name)`` refuses),
    and the two folders are swapped. A save within ``write`` into the staging folder writes there directly.

    Raises:
        NotADirectoryError: ``folder`` is a file.
    """
    given, folder = os.fspath(folder), os.path.realpath(folder)  # a folder reached by a symbolic link is saved there
    if any(folder == path or folder.startswith(path + os.sep) for path in _active):
        os.makedirs(folder, exist_ok=True)
        write(folder)
        return
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise NotADirectoryError(
            f"`save_directory` {given} is a file, not a folder: pass a folder (it is created if missing)."
        )
    recover_folder(folder)
    parent, name = os.path.split(folder)
    os.makedirs(parent, exist_ok=True)
    old = os.stat(folder) if os.path.isdir(folder) else None
    complete = os.path.join(parent, f".{name}.saving-{old.st_ino if old else 0}")
    staging = f"{complete}.partial-{os.getpid()}"
    os.mkdir(staging)
    _active.add(staging)
    try:
        write(staging)
        apply_umask(staging)  # before the old files are linked in: their modes are theirs
        if old is not None:
            os.chmod(staging, stat.S_IMODE(old.st_mode))
            _link_old_files(folder, staging, keep)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        _active.discard(staging)
    os.rename(staging, complete)  # complete: from here on, an interrupted save is completed, not undone
    _swap(complete, folder)


def _link_old_files(folder: str, staging: str, keep: Callable[[str], bool] | None) -> None:
    """Hard-link the names of ``folder`` that the save did not write (and ``keep`` accepts) into ``staging``."""
    written = set(os.listdir(staging))
    new_weights = any(_WEIGHTS.fullmatch(name) for name in written)
    for name in os.listdir(folder):
        if name in written or (new_weights and _WEIGHTS.fullmatch(name)) or (keep is not None and not keep(name)):
            continue
        source, target = os.path.join(folder, name), os.path.join(staging, name)
        if os.path.islink(source):
            os.symlink(os.readlink(source), target)
        elif os.path.isdir(source):
            shutil.copytree(source, target, symlinks=True, copy_function=_link)
        else:
            _link(source, target)


def _link(source: str, target: str) -> None:
    """A hard link, or a copy where the file system has none."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _exchange(a: str, b: str) -> bool:
    """Swap the folders ``a`` and ``b`` in one step (Linux's ``renameat2(RENAME_EXCHANGE)``); False where the system
    or the file system cannot."""
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None) if sys.platform == "linux" else None
    if renameat2 is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), a, None, b)


def _swap(complete: str, folder: str) -> None:
    """Put the complete new state ``complete`` in ``folder``'s place and delete the old state."""
    if not os.path.isdir(folder):
        os.rename(complete, folder)
    elif _exchange(complete, folder):  # ``complete`` now holds the old state
        shutil.rmtree(complete, ignore_errors=True)
    else:  # two renames: ``recover_folder`` completes the save when killed between them
        os.rename(folder, f"{complete}.old")
        os.rename(complete, folder)
        shutil.rmtree(f"{complete}.old", ignore_errors=True)


def recover_folder(folder: str | os.PathLike) -> bool:
    """Clean up after a save of ``folder`` that was interrupted (:func:`save_folder`), with one log line each: an
    unfinished new state is deleted (the folder holds the old one), a complete one is swapped in (the save is
    completed), the old state a swap left is deleted. Returns whether an unfinished new state was deleted."""
    folder = os.path.realpath(os.fspath(folder))
    parent, name = os.path.split(folder)
    try:
        leftovers = sorted(e for e in os.listdir(parent) if (m := _STAGING.fullmatch(e)) and m["name"] == name)
    except OSError:
        return False
    unfinished = False
    for entry in leftovers:
        path, match = os.path.join(parent, entry), _STAGING.fullmatch(entry)
        assert match is not None  # leftovers are the names that match
        suffix, old_id = match["suffix"] or "", int(match["id"])
        if suffix.startswith(".partial-") and _running(int(suffix[len(".partial-") :])):
            continue  # a save under way in another process
        try:
            # sorted, a complete new state comes before the old state that two renames left: it is swapped in first
            if suffix or os.stat(path).st_ino == old_id:  # unfinished, or the old state after a swap
                shutil.rmtree(path)
                if suffix.startswith(".partial-"):
                    unfinished = True
                    logger.warning(
                        f"{folder}: deleted {entry}, the unfinished new state of a save that was interrupted; the "
                        "folder holds its state from before that save (run the command that saved it again)."
                    )
            elif not os.path.isdir(folder) or os.stat(folder).st_ino == old_id:
                _swap(path, folder)
                logger.warning(f"{folder}: completed a save that was interrupted after its new state was written.")
            else:  # the folder was replaced since: this new state is of an older one
                shutil.rmtree(path)
        except OSError as err:  # a reader without the right to write there loads what the folder holds
            logger.info(f"{folder}: could not clean up {entry} ({err}).")
    return unfinished


def _running(pid: int) -> bool:
    """Whether process ``pid`` of this machine is alive (and not this one)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another account's process
        pass
    return pid != os.getpid()


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
