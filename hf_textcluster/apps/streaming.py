"""Clustering inputs too large to hold: read in chunks, predict each chunk, write the results as they come.

``predict_iter(clusterer, source)`` yields ``(text, result)`` for every text of a file (txt / csv / tsv / jsonl /
parquet), a ``datasets.Dataset`` or any iterable of strings, holding one chunk at a time. ``predict_file`` writes
them as JSON lines and can be stopped and restarted: a small progress file beside the output records how many
texts are done and how many bytes of the output hold them, so a restart truncates a half-written chunk and
continues after the last complete one.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from transformers.utils import logging

from ..data.corpora import CSV_READ_OPTIONS
from ..data.loading import TEXT_FILE_SUFFIXES, check_column, load_text_file
from ..modeling.validation import check_scalar, is_blank

logger = logging.get_logger(__name__)

DEFAULT_CHUNK_SIZE = 10_000
PROGRESS_SUFFIX = ".progress.json"


def _text_position(index: int, suffix: str | None) -> str:
    """Where the text at ``index`` (0-based, in the whole input) is, in the words of its file: a line of a .txt, a
    data row (and its line, after the header) of a CSV / TSV, else the text's number."""
    if suffix == ".txt":
        return f"Line {index + 1}"
    if suffix in (".csv", ".tsv"):
        return f"Data row {index + 1} (line {index + 2}, after the header)"
    return f"Text {index + 1}"


def _check_chunk(texts: list, start: int, source: str, suffix: str | None = None) -> list[str]:
    """Every text a non-blank string; an error names the text's place in the whole input (its line in a text file),
    not in the chunk."""
    for offset, text in enumerate(texts):
        where = _text_position(start + offset, suffix)
        if not isinstance(text, str):
            raise TypeError(
                f"{where} of {source} is {type(text).__name__} ({text!r}), not a string. Every row needs a text."
            )
        if is_blank(text):  # the model's own test: a zero-width space is blank there too
            raise ValueError(
                f"{where} of {source} is blank ({text!r}). Every row needs a text (every output line "
                "answers one input row); remove blank rows first (e.g. `grep -v '^\\s*$' in > out`)."
            )
    return texts


def _chunks_of(items: Iterable, size: int) -> Iterator[list]:
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def _file_chunks(path: Path, text_column: str, size: int) -> tuple[Iterator[list], int | None]:
    suffix = path.suffix.lower()
    if suffix == ".txt":

        def lines():
            # split on "\n" only, as load_text_file does (not on "\r", form feeds, ...)
            with open(path, encoding="utf-8-sig", newline="\n") as handle:
                for line in handle:
                    yield line.rstrip("\n").removesuffix("\r")

        return _chunks_of(lines(), size), None
    if suffix in (".csv", ".tsv"):
        import pandas as pd

        # a blank line is a blank text (an error below), never silently skipped: each output line answers one row
        options = dict(sep="\t" if suffix == ".tsv" else ",", skip_blank_lines=False, **CSV_READ_OPTIONS)
        check_column(path, text_column, [str(c) for c in pd.read_csv(path, nrows=0, **options).columns])
        frames = pd.read_csv(path, usecols=[text_column], chunksize=size, **options)
        return (frame[text_column].tolist() for frame in frames), None
    if suffix == ".jsonl" or (suffix == ".json" and not _starts_with_array(path)):

        def rows():
            with open(path, encoding="utf-8-sig") as handle:
                for number, line in enumerate(handle):
                    if not line.strip():
                        continue
                    record = json.loads(line)
                    if not isinstance(record, dict) or text_column not in record:
                        keys = sorted(record) if isinstance(record, dict) else type(record).__name__
                        raise ValueError(
                            f"Line {number + 1} of {path} has no field {text_column!r} (it has {keys}). "
                            "Pass text_column= (--text-column) the field holding the texts."
                        )
                    yield record[text_column]

        return _chunks_of(rows(), size), None
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        parquet = pq.ParquetFile(path)
        check_column(path, text_column, parquet.schema_arrow.names)
        batches = parquet.iter_batches(batch_size=size, columns=[text_column])
        return (batch.column(0).to_pylist() for batch in batches), parquet.metadata.num_rows
    if suffix == ".json":  # a JSON array cannot be read piecewise: it is loaded whole
        texts = load_text_file(path, text_column=text_column)["text"]
        return _chunks_of(texts, size), len(texts)
    raise ValueError(f"Unsupported file type {path.suffix!r} for {path}; use one of {', '.join(TEXT_FILE_SUFFIXES)}.")


def _starts_with_array(path: Path) -> bool:
    with open(path, encoding="utf-8-sig") as handle:
        return handle.read(4096).lstrip().startswith("[")


def text_chunks(
    source, text_column: str = "text", chunk_size: int = DEFAULT_CHUNK_SIZE
) -> tuple[Iterator[list[str]], int | None]:
    """``(chunks, total)``: lists of at most ``chunk_size`` texts read lazily from ``source`` (a file path, a
    ``datasets.Dataset`` whose ``text_column`` holds the texts, or an iterable of strings), and the number of texts
    when it is known without reading them (None otherwise)."""
    check_scalar(chunk_size, "chunk_size", int, min_val=1)
    suffix = None
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"Text file not found: {path.resolve()}. Pass the path of an existing file.")
        chunks, total = _file_chunks(path, text_column, chunk_size)
        name, suffix = str(path), path.suffix.lower()
    elif hasattr(source, "column_names") and hasattr(source, "select"):  # a datasets.Dataset, sliced chunk by chunk
        check_column("The dataset", text_column, source.column_names)
        chunks = (source[start : start + chunk_size][text_column] for start in range(0, len(source), chunk_size))
        total, name = len(source), f"the dataset's column {text_column!r}"
    elif isinstance(source, Iterable) and not isinstance(source, bytes):
        chunks = _chunks_of(source, chunk_size)
        total, name = (len(source) if hasattr(source, "__len__") else None), "the texts"
    else:
        raise TypeError(
            f"`source` must be a file path, a datasets.Dataset or an iterable of strings, got {type(source).__name__}."
        )

    def checked():
        start = 0
        for chunk in chunks:
            yield _check_chunk(chunk, start, name, suffix)
            start += len(chunk)

    return checked(), total


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
        if skip >= len(chunk):
            skip -= len(chunk)
            continue
        chunk, skip = chunk[skip:], 0
        yield chunk, clusterer(chunk, **call_kwargs)


def _file_sha256(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _source_identity(source, text_column: str, call_kwargs: dict, model_name: str) -> dict:
    """What a restart must find unchanged to continue a half-written output: for a file, its content (a hash, one
    read of the file: a size and a modification time can stay the same while the texts change)."""
    if isinstance(source, (str, os.PathLike)):
        what = {"path": os.path.abspath(source), "bytes": os.path.getsize(source), "sha256": _file_sha256(source)}
    elif hasattr(source, "_fingerprint"):
        what = {"dataset_fingerprint": source._fingerprint, "rows": len(source)}
    else:
        what = {"iterable": type(source).__name__}  # nothing to check: the caller vouches that it is the same
    options = json.dumps(call_kwargs, sort_keys=True, default=str)
    return {
        "input": what,
        "text_column": text_column,
        "model": model_name,
        "options_sha1": hashlib.sha1(options.encode()).hexdigest(),
    }


def _sha256_of_prefix(path: Path, size: int):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while size > 0 and (block := handle.read(min(1 << 20, size))):
            digest.update(block)
            size -= len(block)
    return digest


def _write_json_atomic(path: Path, payload: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(payload, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def check_output(source, output: str | os.PathLike) -> Path:
    """``output`` as a Path, once it is known that writing it cannot replace the input or fail for a missing folder
    (checked before any work: a wrong output must not cost a whole prediction pass)."""
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
    return output


LOCK_SUFFIX = ".lock"


class _OutputLock:
    """An exclusive lock on ``<output>.lock`` (``fcntl.flock``): a second process writing the same output fails at
    once instead of interleaving its lines. The kernel releases it when the process dies, so a killed run never
    leaves a stale lock behind."""

    def __init__(self, output: Path):
        self.path = output.with_name(output.name + LOCK_SUFFIX)
        self.output = output
        self.handle = None

    def __enter__(self):
        try:
            import fcntl
        except ImportError:  # no flock (Windows): no protection against a second writer
            return self
        self.handle = open(self.path, "a")
        try:
            fcntl.flock(self.handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.handle.close()
            self.handle = None
            raise RuntimeError(
                f"Another process is writing {self.output} (it holds the lock {self.path}): wait for "
                "it to finish or stop it, or write to another output."
            ) from None
        return self

    def release(self, remove: bool) -> None:
        if self.handle is not None:
            if remove:
                self.path.unlink(missing_ok=True)
            self.handle.close()
            self.handle = None

    def __exit__(self, *exc):
        self.release(remove=False)


def _read_progress(progress_path: Path) -> dict:
    try:
        progress = json.loads(progress_path.read_text(encoding="utf-8"))
        int(progress["texts_done"]), int(progress["output_bytes"])
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(
            f"The progress record {progress_path} is damaged ({err}): it cannot say where to resume. "
            "Pass overwrite=True (--overwrite) to predict again from the start."
        ) from None
    return progress


def _resume_point(output: Path, progress: dict) -> tuple[int, int, hashlib._Hash]:
    """``(texts_done, bytes to keep, sha256 of those bytes)`` to resume from. The output must still start with what
    the progress record describes (its first ``output_bytes``, by hash, holding ``texts_done`` lines); one shorter
    than the record (cut off by a copy, a full disk) resumes after its last complete line, never padded. Anything
    else is an error."""
    recorded, done = int(progress["output_bytes"]), int(progress["texts_done"])
    region = min(output.stat().st_size, recorded)
    digest, lines, last_newline, position = hashlib.sha256(), 0, -1, 0
    with open(output, "rb") as handle:
        while position < region and (block := handle.read(min(1 << 20, region - position))):
            digest.update(block)
            lines += block.count(b"\n")
            if (found := block.rfind(b"\n")) >= 0:
                last_newline = position + found
            position += len(block)
    if region == recorded:
        if progress.get("output_sha256", digest.hexdigest()) != digest.hexdigest() or lines != done:
            raise ValueError(
                f"{output} no longer holds what its progress record {output.name}{PROGRESS_SUFFIX} "
                f"describes (its first {done:,} lines): it was changed since. Pass overwrite=True "
                "(--overwrite) to predict again from the start."
            )
        return done, recorded, digest
    kept = last_newline + 1
    logger.warning(
        f"{output} is shorter than its progress record says ({region:,} of {recorded:,} bytes): resuming "
        f"after its last complete line ({lines:,} texts)."
    )
    return lines, kept, _sha256_of_prefix(output, kept)


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
    clusterer = _as_pipeline(clusterer)
    if hasattr(clusterer, "_sanitize_parameters"):  # bad options fail now, not after the output is started
        clusterer._sanitize_parameters(**call_kwargs)
    to_stdout = output is None or str(output) == "-"
    chunks, total = text_chunks(source, text_column, chunk_size)  # checks the input before any output is touched
    done, handle, progress_path, identity = 0, sys.stdout, None, None
    if not to_stdout:
        output = check_output(source, output)
        progress_path = output.with_name(output.name + PROGRESS_SUFFIX)
        identity = _source_identity(
            source, text_column, call_kwargs, str(getattr(clusterer.model.config, "name_or_path", ""))
        )
        lock = _OutputLock(output).__enter__()  # held until the output is finished (or this process ends)
        digest = hashlib.sha256()
        try:
            if output.exists() and not overwrite:
                if not progress_path.exists():
                    raise FileExistsError(
                        f"{output} already exists (a finished prediction: it has no "
                        f"{progress_path.name}). Pass overwrite=True (--overwrite) to replace it, or "
                        "write elsewhere."
                    )
                progress = _read_progress(progress_path)
                if progress.get("identity") != identity:
                    raise ValueError(
                        f"{output} is a half-written prediction of another input, model or options "
                        f"(see {progress_path}). Pass overwrite=True (--overwrite) to start again."
                    )
                done, kept, digest = _resume_point(output, progress)
                with open(output, "r+b") as partial:  # drop a chunk that a crash cut off after the last record
                    partial.truncate(kept)
                logger.warning(f"Resuming {output} after {done:,} texts.")
            handle = open(output, "ab" if done else "wb")  # noqa: SIM115 - the writer returned keeps it open
        except BaseException:
            lock.release(remove=False)
            raise
        if not done:
            _write_json_atomic(
                progress_path,
                {"identity": identity, "texts_done": 0, "output_bytes": 0, "output_sha256": digest.hexdigest()},
            )
    if show_progress_bar is None:
        show_progress_bar = logging.get_verbosity() <= logging.INFO or not to_stdout
    from tqdm.auto import tqdm

    bar = tqdm(
        total=total,
        initial=done,
        unit=" texts",
        unit_scale=True,
        desc="Clustering",
        disable=not show_progress_bar,
        file=sys.stderr,
    )
    start, count = time.perf_counter(), done
    try:
        for chunk, results in _predicted_chunks(clusterer, chunks, done, call_kwargs):
            lines = "".join(
                json.dumps({"text": text, **(r if isinstance(r, dict) else {"top_k": r})}, ensure_ascii=False) + "\n"
                for text, r in zip(chunk, results)
            )
            count += len(chunk)
            if to_stdout:
                handle.write(lines)
                handle.flush()
            else:
                data = lines.encode("utf-8")
                try:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())  # the output holds the chunk before the progress file says so
                except OSError as err:
                    raise OSError(
                        f"Could not write `output` {output}: {err.strerror or err} (the texts before this "
                        "chunk are kept; free space or write elsewhere, then run the same command again to "
                        "resume)."
                    ) from err
                digest.update(data)
                _write_json_atomic(
                    progress_path,
                    {
                        "identity": identity,
                        "texts_done": count,
                        "output_bytes": handle.tell(),
                        "output_sha256": digest.hexdigest(),
                    },
                )
            bar.update(len(chunk))
        if progress_path is not None:
            progress_path.unlink()  # finished: the output is complete
    finally:
        bar.close()
        if not to_stdout:
            handle.close()
            lock.release(remove=not progress_path.exists())
    seconds = time.perf_counter() - start
    new = count - done
    stats = {
        "texts": count,
        "resumed_after": done,
        "seconds": round(seconds, 2),
        "texts_per_second": round(new / seconds, 1) if seconds > 0 else None,
    }
    logger.info(f"Clustered {new:,} texts in {seconds:.1f}s ({stats['texts_per_second']} texts/s).")
    return stats
