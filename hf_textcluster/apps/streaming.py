"""Clustering inputs too large to hold: read in chunks, predict each chunk, write the results as they come.

``predict_iter(clusterer, source)`` yields ``(text, result)`` for every text of a file (txt / csv / tsv / jsonl /
parquet), a ``datasets.Dataset`` or any iterable of strings, holding one chunk at a time. ``predict_file`` writes
them as JSON lines and can be stopped and restarted: a small progress file beside the output records how many
texts are done and how many bytes of the output hold them, so a restart truncates a half-written chunk and
continues after the last complete one. The input is read by :func:`~hf_textcluster.data.text_files.text_chunks`.
"""

import hashlib
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from transformers.utils import logging

from ..cache import write_whole
from ..data.text_files import DEFAULT_CHUNK_SIZE, text_chunks
from ..modeling.serialization import release_lock, take_lock

logger = logging.get_logger(__name__)

PROGRESS_SUFFIX = ".progress.json"


def _as_pipeline(clusterer):
    if hasattr(clusterer, "cluster_probabilities"):  # a model: the pipeline formats its results
        from transformers import pipeline

        return pipeline("text-clustering", model=clusterer, tokenizer=clusterer.tokenizer, device=clusterer.device)
    return clusterer


def predict_iter(
    clusterer, source, text_column: str = "text", chunk_size: int = DEFAULT_CHUNK_SIZE, skip: int = 0, **call_kwargs
) -> Iterator[tuple[str, dict | list]]:
    """``(text, result)`` for every text of ``source``, in order, lazily, holding one chunk of texts at a time.

    Args:
        clusterer: a ``text-clustering`` pipeline or an hf_textcluster model.
        source: a file path (txt, csv, jsonl, parquet), a ``datasets.Dataset`` or any iterable of strings.
        text_column: the column holding the texts (files with columns and datasets).
        chunk_size: texts held in memory at a time.
        skip: texts to pass over first.
        **call_kwargs: pipeline options (``batch_size``, ``top_k``, ``flag_outliers``, ...).

    Returns:
        An iterator of ``(text, result)``; ``result`` is what the pipeline returns for that text.

    Example:
        >>> for text, result in predict_iter(model, ["reset my password"]):  # doctest: +SKIP
        ...     print(result["cluster"], text)
    """
    chunks, _ = text_chunks(source, text_column, chunk_size)
    for chunk, results in _predicted_chunks(_as_pipeline(clusterer), chunks, skip, call_kwargs):
        yield from zip(chunk, results)


def _predicted_chunks(clusterer, chunks: Iterator[list[str]], skip: int, call_kwargs: dict):
    """``(texts, results)`` per chunk, after passing over the first ``skip`` texts."""
    for chunk in chunks:
        chunk, skip = chunk[skip:], max(0, skip - len(chunk))
        if chunk:
            yield chunk, clusterer(chunk, **call_kwargs)


def _blocks(path, size: int | None = None) -> Iterator[bytes]:
    """The first ``size`` bytes of ``path`` (all of them for None), a MiB at a time."""
    left = os.path.getsize(path) if size is None else size
    with open(path, "rb") as handle:
        while left > 0 and (block := handle.read(min(1 << 20, left))):
            left -= len(block)
            yield block


def _sha256(path, size: int | None = None):
    """The sha256 (a ``hashlib`` object, to be continued) of the first ``size`` bytes of ``path`` (None: all)."""
    digest = hashlib.sha256()
    for block in _blocks(path, size):
        digest.update(block)
    return digest


def _source_identity(source, text_column: str, call_kwargs: dict, model_name: str) -> dict:
    """What a restart must find unchanged to continue a half-written output: for a file, its content (a hash, one
    read of the file: a size and a modification time can stay the same while the texts change)."""
    if isinstance(source, (str, os.PathLike)):
        path = os.path.abspath(source)
        what = {"path": path, "bytes": os.path.getsize(path), "sha256": _sha256(path).hexdigest()}
    elif hasattr(source, "_fingerprint"):
        what = {"dataset_fingerprint": source._fingerprint, "rows": len(source)}
    else:
        what = {"iterable": type(source).__name__}  # nothing to check: the caller vouches that it is the same
    options = hashlib.sha1(json.dumps(call_kwargs, sort_keys=True, default=str).encode()).hexdigest()
    return {"input": what, "text_column": text_column, "model": model_name, "options_sha1": options}


def check_output(source, output: str | os.PathLike, overwrite: bool = False) -> Path:
    """``output`` as a Path, once it is known that writing it cannot replace the input or a finished prediction
    (unless ``overwrite``) or fail for a missing folder (checked before any work: a wrong output must not cost a whole
    prediction pass). A half-written one, with its progress record, is left to resume."""
    output = Path(output)
    if isinstance(source, (str, os.PathLike)) and output.resolve() == Path(source).resolve():
        raise ValueError(f"`output` {output} is the input file: it would replace your texts. Write elsewhere.")
    if not output.parent.is_dir():
        raise FileNotFoundError(f"`output` {output}: the folder {output.parent} does not exist; create it first.")
    if output.exists() and not output.is_file():
        kind = "a folder" if output.is_dir() else "not a regular file (a device, a pipe, ...)"
        raise ValueError(
            f"`output` {output} is {kind}: predictions are written to a file (resumable, with a progress "
            "record beside it). Pass a file path, or omit the output to write to standard output."
        )
    writing = _lock_path(output).exists()  # another process is writing it: the lock says so, later
    if output.exists() and not (overwrite or writing or _progress_path(output).exists()):
        raise _finished(output)
    return output


def _lock_path(output: Path) -> Path:
    return output.with_name(output.name + ".lock")


def _progress_path(output: Path) -> Path:
    return output.with_name(output.name + PROGRESS_SUFFIX)


def _finished(output: Path) -> FileExistsError:
    return FileExistsError(
        f"{output} exists (a finished prediction: it has no {_progress_path(output).name}); pass overwrite=True "
        "(--overwrite) to replace it, or write elsewhere."
    )


class _StandardOutput:
    """Where ``predict_file`` writes without an output file: standard output, neither locked nor resumable."""

    done = 0

    def write(self, lines: str, texts_done: int) -> None:
        sys.stdout.write(lines)
        sys.stdout.flush()

    def finish(self) -> None:
        pass

    close = finish


class _ResumableOutput:
    """The JSON-lines file ``predict_file`` writes: locked while it is written, continued after the last chunk its
    progress record (``<output>.progress.json``) describes, each chunk on disk before that record says so."""

    def __init__(self, output: Path, identity: dict, overwrite: bool):
        self.output = output
        self.progress_path = _progress_path(output)
        self.identity = identity
        # an exclusive lock on <output>.lock: a second process writing the same output fails at once
        self.lock = take_lock(str(_lock_path(output)), str(output), "or write to another output")
        self.digest = hashlib.sha256()
        self.done = 0
        try:
            if output.exists() and not overwrite:
                self._resume()
            self.handle = open(output, "ab" if self.done else "wb")  # noqa: SIM115 - kept open until close()
        except BaseException:
            self._unlock(remove=False)
            raise
        if not self.done:
            self._record(0)

    def _resume(self) -> None:
        """Continue a half-written output of the same input, model and options; refuse a finished or foreign one.

        The output must still start with what the progress record describes (its first ``output_bytes``, by hash,
        holding ``texts_done`` lines); one shorter than the record (cut off by a copy, a full disk) resumes after its
        last complete line, never padded. Anything else is an error."""
        output, progress_path = self.output, self.progress_path
        if not progress_path.exists():
            raise _finished(output)
        try:
            progress = json.loads(progress_path.read_text(encoding="utf-8"))
            recorded, done = int(progress["output_bytes"]), int(progress["texts_done"])
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(
                f"The progress record {progress_path} is damaged ({err}): it cannot say where to resume. "
                "Pass overwrite=True (--overwrite) to predict again from the start."
            ) from None
        if progress.get("identity") != self.identity:
            raise ValueError(
                f"{output} is a half-written prediction of another input, model or options "
                f"(see {progress_path}). Pass overwrite=True (--overwrite) to start again."
            )
        region = min(output.stat().st_size, recorded)
        lines, last_newline, position = 0, -1, 0
        for block in _blocks(output, region):
            self.digest.update(block)
            lines += block.count(b"\n")
            if (found := block.rfind(b"\n")) >= 0:
                last_newline = position + found
            position += len(block)
        kept, self.done = recorded, done
        digest = self.digest.hexdigest()
        if region == recorded and (progress.get("output_sha256", digest) != digest or lines != done):
            raise ValueError(
                f"{output} no longer holds what its progress record {output.name}{PROGRESS_SUFFIX} "
                f"describes (its first {done:,} lines): it was changed since. Pass overwrite=True "
                "(--overwrite) to predict again from the start."
            )
        if region < recorded:
            kept, self.done, self.digest = last_newline + 1, lines, _sha256(output, last_newline + 1)
            logger.warning(
                f"{output} is shorter than its progress record says ({region:,} of {recorded:,} bytes): resuming "
                f"after its last complete line ({lines:,} texts)."
            )
        with open(output, "r+b") as partial:  # drop a chunk that a crash cut off after the last record
            partial.truncate(kept)
        logger.warning(f"Resuming {output} after {self.done:,} texts.")

    def _record(self, texts_done: int) -> None:
        progress = {
            "identity": self.identity,
            "texts_done": texts_done,
            "output_bytes": self.handle.tell(),
            "output_sha256": self.digest.hexdigest(),
        }
        write_whole(self.progress_path, json.dumps(progress, indent=1))

    def write(self, lines: str, texts_done: int) -> None:
        data = lines.encode("utf-8")
        try:
            self.handle.write(data)
            self.handle.flush()
            os.fsync(self.handle.fileno())  # the output holds the chunk before the progress file says so
        except OSError as err:
            raise OSError(
                f"Could not write `output` {self.output}: {err.strerror or err} (the texts before this chunk are kept; "
                "free space or write elsewhere, then run the same command again to resume)."
            ) from err
        self.digest.update(data)
        self._record(texts_done)

    def finish(self) -> None:
        self.progress_path.unlink()  # finished: the output is complete

    def close(self) -> None:
        self.handle.close()
        self._unlock(remove=not self.progress_path.exists())

    def _unlock(self, remove: bool) -> None:
        release_lock(self.lock, remove)


def predict_file(
    clusterer,
    source,
    output: str | os.PathLike | None = None,
    text_column: str = "text",
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    overwrite: bool = False,
    show_progress_bar: bool | None = None,
    **call_kwargs,
) -> dict:
    """Cluster every text of ``source`` and write one JSON line per text (``{"text", "cluster", "label", "score",
    ...}``, in input order) to ``output`` (None or ``"-"``: standard output), chunk by chunk: memory holds one chunk
    whatever the input's size.

    Resumable: while it runs, ``<output>.progress.json`` records the texts done; started again with the same
    input, model and options, it continues after the last complete chunk (a chunk cut off by a crash is written
    again). An output that exists without a progress file is a finished one: it is only replaced with
    ``overwrite=True``, which also discards a half-written one.

    Args:
        clusterer: a ``text-clustering`` pipeline or an hf_textcluster model.
        source: a file path (txt, csv, jsonl, parquet), a ``datasets.Dataset`` or any iterable of strings.
        output: the JSON-lines file; ``None`` or ``"-"`` writes to standard output (not resumable).
        text_column: the column holding the texts.
        chunk_size: texts held in memory, and written, at a time.
        overwrite: replace a finished output (or discard a half-written one).
        show_progress_bar: a tqdm bar with the throughput; ``None`` shows it when writing to a file.
        **call_kwargs: pipeline options (``batch_size``, ``top_k``, ``flag_outliers``, ...); checked before any
            output is written.

    Returns:
        ``{"texts", "resumed_after", "seconds", "texts_per_second"}`` (the rate of this call's texts).

    Raises:
        FileExistsError: ``output`` is finished and ``overwrite`` is False.
        ValueError: ``output`` is a half-written prediction of another input, model or options; ``output`` is the
            input; a bad pipeline option value; a blank text (named by its row).
        TypeError: an unknown pipeline option, or a text that is not a string.
        RuntimeError: another process is writing ``output``.

    Example:
        >>> predict_file(model, "titles.txt", "clusters.jsonl", chunk_size=10_000)  # doctest: +SKIP
        {'texts': 120000, 'resumed_after': 0, 'seconds': 612.4, 'texts_per_second': 196.0}
    """
    from tqdm.auto import tqdm

    clusterer = _as_pipeline(clusterer)
    if hasattr(clusterer, "_sanitize_parameters"):  # bad options fail now, not after the output is started
        clusterer._sanitize_parameters(**call_kwargs)
    chunks, total = text_chunks(source, text_column, chunk_size)  # checks the input before any output is touched
    out: _StandardOutput | _ResumableOutput
    if output is None or str(output) == "-":
        out = _StandardOutput()
        show = logging.get_verbosity() <= logging.INFO if show_progress_bar is None else show_progress_bar
    else:
        output = check_output(source, output, overwrite)
        model_name = str(getattr(clusterer.model.config, "name_or_path", ""))
        out = _ResumableOutput(output, _source_identity(source, text_column, call_kwargs, model_name), overwrite)
        show = show_progress_bar is not False
    bar = tqdm(total=total, initial=out.done, unit=" texts", unit_scale=True, desc="Clustering", disable=not show)
    start, count = time.perf_counter(), out.done
    try:
        for chunk, results in _predicted_chunks(clusterer, chunks, out.done, call_kwargs):
            count += len(chunk)
            # one JSON line per text: the text and its result; with top_k (a list of results, most likely first),
            # the line without top_k (the first result, its confidence included) and the list under "top_k"
            lines = (
                json.dumps({"text": t, **(r if isinstance(r, dict) else {**r[0], "top_k": r})}, ensure_ascii=False)
                for t, r in zip(chunk, results)
            )
            out.write("".join(line + "\n" for line in lines), count)
            bar.update(len(chunk))
        out.finish()
    finally:
        bar.close()
        out.close()
    seconds = time.perf_counter() - start
    rate = round((count - out.done) / seconds, 1) if seconds > 0 else None
    logger.info(f"Clustered {count - out.done:,} texts in {seconds:.1f}s ({rate} texts/s).")
    return {"texts": count, "resumed_after": out.done, "seconds": round(seconds, 2), "texts_per_second": rate}
