"""Reading texts a chunk at a time from a file (txt / csv / tsv / jsonl / json / parquet), a ``datasets.Dataset`` or
any iterable of strings, each text checked as it comes: what :mod:`hf_textcluster.apps.streaming` predicts on.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..data.loading import TEXT_FILE_SUFFIXES, check_column, load_text_file
from ..data.readers import CSV_READ_OPTIONS
from ..modeling.validation import check_scalar, is_blank

DEFAULT_CHUNK_SIZE = 10_000


def _check_chunk(texts: list, start: int, source: str, suffix: str | None = None) -> list[str]:
    """Every text a non-blank string; an error names the text's place in the whole input (its line in a text file),
    not in the chunk."""
    for index, text in enumerate(texts, start):
        if isinstance(text, str) and not is_blank(text):  # the model's own test: a zero-width space is blank there too
            continue
        # where the text is, in the words of its file: a line of a .txt, a data row (and its line) of a CSV / TSV
        row = f"Data row {index + 1} (line {index + 2}, after the header)"
        where = {".txt": f"Line {index + 1}", ".csv": row, ".tsv": row}.get(suffix, f"Text {index + 1}")
        if not isinstance(text, str):
            raise TypeError(
                f"{where} of {source} is {type(text).__name__} ({text!r}), not a string. Every row needs a text."
            )
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
                yield from (line.rstrip("\n").removesuffix("\r") for line in handle)

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
