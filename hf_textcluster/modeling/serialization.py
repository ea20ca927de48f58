"""Saving a folder all or nothing, with the umask's file modes (:func:`save_folder`, :func:`apply_umask`): what the
model's ``save_pretrained``, the Hub layer, the edit commands and the run folders write with.

A save writes the folder's new state into a staging folder beside it (``.<name>.saving-<id>``): the files it writes,
then every other file of the folder hard-linked (not copied). The two folders are then swapped in one step (Linux's
``renameat2(RENAME_EXCHANGE)``; elsewhere two renames), and the old state is deleted. Killed at any point, the folder
holds its old state or its new one; the next save of the folder (:func:`recover_folder`) deletes what an interrupted
save left, or completes the save when its new state was complete; a load only reports a complete new state, never
applies it. A swap that fails (a mount point, a read-only file system) deletes the new state: nothing is left to apply.

One writer at a time: a save holds the folder's lock (:func:`folder_lock`, ``fcntl.flock`` on ``.<name>.lock`` beside
it), which a process that reads, edits and saves the folder takes first, for all of it. Symbolic links in the folder
are never followed by a save: one the save does not write again stays a link, one it writes is replaced by the file.

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
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

from transformers.utils import logging

logger = logging.get_logger(__name__)

# the weight files of a save: a new save's replace all the old ones (a sharded checkpoint's too)
_WEIGHTS = re.compile(r"(model|pytorch_model)(-\d+-of-\d+)?\.(safetensors|bin)(\.index\.json)?")
_STAGING = re.compile(r"\.(?P<name>.+)\.saving-(?P<id>\d+)(?P<suffix>\.old|\.partial-\d+)?")
_active: set[str] = set()  # the staging folders being written: a save into one writes there directly
_held: dict[str, list] = {}  # folder -> [lock file handle, depth]: the folder locks this process holds
LOCK_WAIT_SECONDS = 10.0  # how long a writer waits for another process's lock on a folder before it gives up
# How a save of an edited model writes its card again, ``card_writer(model, run_record, texts) -> str``: set by
# ``import hf_textcluster`` (the Hub layer's, imported when a card is written); None, no card is written.
card_writer: Callable | None = None


class FolderBusyError(RuntimeError):
    """Another process is writing the folder or file (it holds its lock)."""


class FolderWriteError(OSError):
    """A folder could not be written (left as it was): its message says why and what to do."""


def take_lock(path: str, what: str, advice: str, wait: float = 0.0):
    """An exclusive lock on the file ``path`` (``fcntl.flock``), as its open handle, with this process's id and
    command line written in it: the kernel releases it when the process dies, so a killed writer never leaves a stale
    lock. Held by another process: waited for up to ``wait`` seconds (one log line), then :class:`FolderBusyError`
    naming the holder and ``advice``. None where there is no flock (Windows): no protection against a second writer.
    """
    try:
        import fcntl
    except ImportError:
        return None
    deadline, waiting = time.monotonic() + wait, False
    while True:
        handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held until release_lock
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "a process"
            handle.close()
            if time.monotonic() >= deadline:
                raise FolderBusyError(
                    f"Another process is writing {what} ({holder}; it holds the lock {path}): wait for it to finish "
                    f"or stop it, {advice}."
                ) from None
            if not waiting:
                logger.warning(f"Waiting for another process writing {what} ({holder}) to finish...")
                waiting = True
            time.sleep(0.1)
            continue
        try:  # the lock file a holder deletes as it lets go is not the lock: take the one at ``path`` now
            if os.stat(path).st_ino == os.fstat(handle.fileno()).st_ino:
                break
        except FileNotFoundError:
            pass
        handle.close()
    handle.seek(0)
    handle.truncate()
    handle.write(f"process {os.getpid()}: {' '.join(sys.argv)}"[:500] + "\n")
    handle.flush()
    return handle


def release_lock(handle, remove: bool = True) -> None:
    """Let go of a :func:`take_lock` lock (its file deleted first when ``remove``)."""
    if handle is None:
        return
    if remove:
        with suppress(OSError):
            os.unlink(handle.name)
    handle.close()


def _lock_file(folder: str) -> str:
    parent, name = os.path.split(folder)
    return os.path.join(parent, f".{name}.lock")


@contextmanager
def folder_lock(folder: str | os.PathLike) -> Iterator[None]:
    """Hold ``folder``'s writer lock (``.<name>.lock`` beside it) inside: one process writes a model folder at a
    time; another waits up to :data:`LOCK_WAIT_SECONDS`, then is refused in one line naming the holder. Re-entered,
    not taken again, by this process (an edit's save within its edit)."""
    folder = os.path.realpath(os.fspath(folder))
    if folder in _held:
        _held[folder][1] += 1
    else:
        try:
            os.makedirs(os.path.dirname(folder), exist_ok=True)
            lock = take_lock(_lock_file(folder), folder, "then run this command again", wait=LOCK_WAIT_SECONDS)
        except OSError as err:  # no lock file beside the folder: a read-only file system, a mount's root
            raise _unwritable(folder, err) from None
        _held[folder] = [lock, 1]
    try:
        yield
    finally:
        _held[folder][1] -= 1
        if not _held[folder][1]:
            release_lock(_held.pop(folder)[0])


def _writer_elsewhere(folder: str) -> bool:
    """Whether another process holds ``folder``'s writer lock now (its save may be under way)."""
    if folder in _held or not os.path.exists(_lock_file(folder)):
        return False
    try:
        import fcntl

        with open(_lock_file(folder), encoding="utf-8") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
    except ImportError:
        return False
    except OSError:
        return True
    return False


def save_folder(folder: str | os.PathLike, write: Callable[[str], None], keep: Callable[[str], bool] | None = None):
    """Replace ``folder`` (created if missing) by its new state all at once, holding its lock (:func:`folder_lock`):
    ``write(staging)`` writes the new files into an empty staging folder, which gets the umask's modes; then every
    name of ``folder`` that ``write`` did not write is hard-linked into it (but old weights when new ones were
    written, and names ``keep(name)`` refuses; a symbolic link stays a link, never followed), and the two folders are
    swapped. A save within ``write`` into the staging folder writes there directly.

    Raises:
        NotADirectoryError: ``folder`` is a file.
        OSError: the folder could not be written (it is left as it was, and nothing of the new state remains).
        KeyboardInterrupt: interrupted; its message says what the folder holds.
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
    with folder_lock(folder):
        recover_folder(folder, complete=True)
        old = os.stat(folder) if os.path.isdir(folder) else None
        try:
            _save(folder, old, write, keep)
        except KeyboardInterrupt:
            kept = "its state from before this save" if old is not None else "no saved model yet"
            raise KeyboardInterrupt(f"the save into {given} was interrupted; it holds {kept}") from None


def _save(folder: str, old: os.stat_result | None, write: Callable[[str], None], keep) -> None:
    parent, name = os.path.split(folder)
    complete = os.path.join(parent, f".{name}.saving-{old.st_ino if old else 0}")
    staging = f"{complete}.partial-{os.getpid()}"
    try:
        os.mkdir(staging)
    except OSError as err:
        raise _unwritable(folder, err) from None
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
    try:
        _swap(complete, folder)
    except OSError as err:  # never swapped in later by another command: this save failed
        shutil.rmtree(complete, ignore_errors=True)
        raise _unwritable(folder, err) from None


def _unwritable(folder: str, err: OSError) -> FolderWriteError:
    error = FolderWriteError(
        f"{folder} cannot be written ({err.strerror or err}): it is unchanged. A save writes a lock file and the new "
        "state beside the folder and swaps the two, which a read-only file system or a mount point refuses: save to "
        "a folder elsewhere (--output-dir, path=)."
    )
    error.errno = err.errno
    return error


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
        try:
            os.rename(complete, folder)
        except OSError:
            os.rename(f"{complete}.old", folder)
            raise
        shutil.rmtree(f"{complete}.old", ignore_errors=True)


def save_interrupted(folder: str | os.PathLike) -> bool:
    """Whether a save of ``folder`` was interrupted: it left a new or an old state beside the folder (what
    :func:`recover_folder` cleans up)."""
    folder = os.path.realpath(os.fspath(folder))
    parent, name = os.path.split(folder)
    try:
        return any((m := _STAGING.fullmatch(e)) and m["name"] == name for e in os.listdir(parent))
    except OSError:
        return False


def recover_folder(folder: str | os.PathLike, complete: bool = False) -> bool:
    """Clean up after a save of ``folder`` that was interrupted (:func:`save_folder`), with one log line each: an
    unfinished new state is deleted (the folder holds the old one), the old state a swap left is deleted by a writer
    (``complete``; a reader leaves it, so that an edit run again sees its save happened). A complete
    new state that was not swapped in is swapped in with ``complete`` (what a writer, holding the folder's lock, does:
    the save is completed), else only reported: a reader loads the folder as it is. Nothing is touched while another
    process holds the folder's lock (its save is under way).

    Returns:
        Whether a save was interrupted and the folder does not hold its new state.
    """
    folder = os.path.realpath(os.fspath(folder))
    parent, name = os.path.split(folder)
    try:
        leftovers = sorted(e for e in os.listdir(parent) if (m := _STAGING.fullmatch(e)) and m["name"] == name)
    except OSError:
        return False
    if not leftovers or _writer_elsewhere(folder):
        return False
    interrupted = False
    for entry in leftovers:
        path, match = os.path.join(parent, entry), _STAGING.fullmatch(entry)
        assert match is not None  # leftovers are the names that match
        suffix, old_id = match["suffix"] or "", int(match["id"])
        if suffix.startswith(".partial-") and _running(int(suffix[len(".partial-") :])):
            continue  # a save under way in another process
        try:
            # sorted, a complete new state comes before the old state that two renames left: it is swapped in first
            if suffix.startswith(".partial-"):
                shutil.rmtree(path)
                interrupted = True
                logger.warning(
                    f"{folder}: deleted {entry}, the unfinished new state of a save that was interrupted; the folder "
                    "holds its state from before that save (run the command that saved it again)."
                )
            elif suffix or os.stat(path).st_ino == old_id:  # the old state after a swap (or between two renames)
                if not os.path.isdir(folder):  # between the two renames, the new state not applied: the old one back
                    os.rename(path, folder)
                    continue
                if not complete:  # left for the next writer: it tells a re-run edit that the save happened
                    logger.warning(
                        f"{folder}: a save was interrupted after its new state was swapped in (the folder holds it)."
                    )
                    continue
                shutil.rmtree(path)
                logger.warning(
                    f"{folder}: a save was interrupted after its new state was swapped in (the folder holds it); "
                    f"deleted {entry}, the state it replaced."
                )
            elif not os.path.isdir(folder) or os.stat(folder).st_ino == old_id:
                if not complete:
                    interrupted = True
                    logger.warning(
                        f"{folder}: {entry} holds the complete new state of a save that was interrupted before it "
                        "replaced the folder: not applied by this command, which only reads the folder as it was. "
                        "The next command that saves the folder completes that save."
                    )
                    continue
                _swap(path, folder)
                logger.warning(f"{folder}: completed a save that was interrupted after its new state was written.")
            else:  # the folder was replaced since: this new state is of an older one
                shutil.rmtree(path)
        except OSError as err:  # a reader without the right to write there loads what the folder holds
            logger.info(f"{folder}: could not clean up {entry} ({err}).")
    return interrupted


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
