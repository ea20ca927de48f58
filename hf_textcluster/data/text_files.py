"""The one reader of a user's file of texts (``.txt``, ``.csv``, ``.tsv``, ``.jsonl``, ``.json``, ``.parquet``): read
whole (:func:`load_text_file`: train, evaluate, info, ...) or a chunk at a time (:func:`text_chunks`: what predict
streams, also from a ``datasets.Dataset`` or any iterable of strings).

Every error is one line that names the file, the line where there is one, and the fix: a folder or an empty file, a
binary file, text that is not UTF-8 (UTF-16 and UTF-32 files with a byte-order mark are read), a quote that never
closes or a row with more fields than the header, a line that is not JSON, a missing column, a blank or missing text,
a NUL byte in a text.
"""

from __future__ import annotations

import codecs
import csv
import itertools
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import datasets

from ..modeling.validation import check_scalar, is_blank
from .loading import check_column, load_texts

TEXT_FILE_SUFFIXES = (".csv", ".tsv", ".jsonl", ".json", ".parquet", ".txt")
DEFAULT_CHUNK_SIZE = 10_000

# UTF-32's marks first: UTF-32-LE's begins with UTF-16-LE's
_BYTE_ORDER_MARKS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_SAVE_AS_UTF8 = "save it as UTF-8 (e.g. `iconv -f latin1 -t utf-8 in.csv > out.csv`)"


def _open_file(source: str | os.PathLike) -> tuple[Path, str]:
    """The file and its text encoding (from its byte-order mark; UTF-8 without one): a missing path, a folder, an
    unknown suffix, an empty or a binary file is a one-line error naming it."""
    path = Path(source)
    if path.is_dir():
        raise ValueError(f"{path} is a folder, not a file: pass a file of texts ({', '.join(TEXT_FILE_SUFFIXES)}).")
    if not path.is_file():
        raise FileNotFoundError(f"Text file not found: {path.resolve()}. Pass the path of an existing file.")
    if path.suffix.lower() not in TEXT_FILE_SUFFIXES:
        raise ValueError(
            f"Unsupported file type {path.suffix!r} for {path}; use one of {', '.join(TEXT_FILE_SUFFIXES)}."
        )
    with open(path, "rb") as handle:
        head = handle.read(1 << 16)
    if not head:
        raise ValueError(f"{path} is empty (0 bytes): pass a file that holds your texts.")
    if path.suffix.lower() == ".parquet":
        return path, "binary"
    encoding = next((name for mark, name in _BYTE_ORDER_MARKS if head.startswith(mark)), "utf-8")
    if encoding == "utf-8" and b"\0" in head:
        if head.count(b"\0") * 10 < len(head) and _is_utf8(head):  # UTF-8 text with a few NUL bytes in it
            line = head[: head.index(b"\0")].count(b"\n") + 1
            raise _nul_error(path, f"{path}, line {line}")
        raise ValueError(
            f"{path} is not a text file (it holds NUL bytes: a binary file, or UTF-16 / UTF-32 without a "
            "byte-order mark): save it as UTF-8 text."
        )
    return path, encoding


def _nul_error(path: Path, where: str) -> ValueError:
    """A NUL byte in the texts of ``path`` (at ``where``): not text a model reads, and how to remove it."""
    return ValueError(
        f"{where}: a NUL byte (\\0) inside the text; remove the NUL bytes "
        f"(e.g. `tr -d '\\000' < {path.name} > clean{path.suffix}`) and pass that file."
    )


def _is_utf8(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes, maybe cut inside a character) is UTF-8."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return False
    return True


def _not_utf8(path: Path, encoding: str, err: UnicodeDecodeError) -> ValueError:
    """The line of the first bytes that are not UTF-8 (a line ends at the byte 0x0A in UTF-8, so the bytes are split
    there), and the fix."""
    if encoding.startswith("utf-8"):
        with open(path, "rb") as handle:
            for number, line in enumerate(handle, 1):
                try:
                    line.decode(encoding if number == 1 else "utf-8")
                except UnicodeDecodeError as found:
                    return ValueError(
                        f"{path}, line {number}: not UTF-8 text ({found.reason} at byte {found.start + 1} of the "
                        f"line): {_SAVE_AS_UTF8}."
                    )
    return ValueError(f"{path} is not valid {encoding.upper()} text ({err.reason}): {_SAVE_AS_UTF8}.")


def _csv_error(path: Path, encoding: str, sep: str, err: Exception) -> ValueError:
    """pandas' parse error as the line where the bad row starts (pandas counts rows, not lines) and the fix."""
    unclosed, what = "EOF inside string" in str(err), "tab" if sep == "\t" else "comma"
    with open(path, encoding=encoding, newline="") as handle:
        reader = csv.reader(handle, delimiter=sep)
        header = next(reader, [])
        start = last = reader.line_num + 1  # the line where the next row starts; where the last one read started
        try:
            for row in reader:
                if len(row) > len(header) and not unclosed:
                    return ValueError(
                        f"{path}, line {start}: {len(row)} fields where the header has {len(header)}; quote a text "
                        f'that holds a {what} ("a{sep} b") or remove the extra {what}.'
                    )
                last, start = start, reader.line_num + 1
        except csv.Error:  # a field past the csv module's size limit: the unclosed quote's row
            last = start
    if unclosed:  # the csv module reads an unclosed quote to the end of the file: the last row holds it
        return ValueError(
            f'{path}, line {last}: a quote (") opens a field that never closes; close it, or write a quote inside '
            'a quoted field twice ("").'
        )
    return ValueError(f"{path} is not valid CSV ({str(err).strip().splitlines()[-1]}); check the quotes of its rows.")


def _check_text(text, where: str) -> None:
    """A non-blank string (the model's own test: a zero-width space is blank there too), else an error at ``where``."""
    if not isinstance(text, str):
        raise TypeError(f"{where} is {type(text).__name__} ({text!r}), not a string. Every row needs a text.")
    if is_blank(text):
        raise ValueError(
            f"{where} is blank ({text!r}). Every row needs a text (every output line answers one input row); "
            "remove blank rows first (e.g. `grep -v '^\\s*$' in > out`)."
        )


def _chunks_of(items: Iterable, size: int) -> Iterator[list]:
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def _checked(chunks: Iterator[tuple[list, list | None]], place, path: Path | None = None):
    """Every text of every chunk checked; an error names the text by ``place(index in the whole input)``. A text of
    the file ``path`` with a NUL byte is refused too (past the first bytes :func:`_open_file` reads)."""
    start = 0
    for texts, labels in chunks:
        for index, text in enumerate(texts, start):
            _check_text(text, place(index))
            if path is not None and "\0" in text:
                raise _nul_error(path, place(index))
        start += len(texts)
        yield texts, labels


def _text_lines(path: Path, encoding: str, size: int):
    def lines():  # split on "\n" only (not on "\r", form feeds, ...), without the LF / CRLF terminators
        with open(path, encoding=encoding, newline="\n") as handle:
            yield from (line.rstrip("\n").removesuffix("\r") for line in handle)

    return ((chunk, None) for chunk in _chunks_of(lines(), size)), None, lambda i: f"Line {i + 1} of {path}"


def _csv_rows(path: Path, encoding: str, columns: list[str], size: int):
    import pandas as pd

    from .readers import CSV_READ_OPTIONS

    sep = "\t" if path.suffix.lower() == ".tsv" else ","
    # a blank line is a blank text (an error), never silently skipped: each output line answers one row
    options = {**CSV_READ_OPTIONS, "sep": sep, "encoding": encoding, "skip_blank_lines": False}
    try:
        header = [str(c) for c in pd.read_csv(path, nrows=0, **options).columns]
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path} has no header row: its first line names the columns (e.g. `text`).") from None
    except pd.errors.ParserError as err:
        raise _csv_error(path, encoding, sep, err) from None
    if sep == "," and len(header) == 1 and "\t" in header[0]:
        raise ValueError(f"{path} looks tab-separated (its header is {header[0]!r}): rename it to .tsv.")
    for argument, column in zip(("text_column", "label_column"), columns):
        check_column(path, column, header, argument)

    def rows():
        try:
            # every column read: a row with more fields than the header is an error, not a text cut at a comma
            for frame in pd.read_csv(path, chunksize=size, **options):
                yield frame[columns[0]].tolist(), frame[columns[1]].tolist() if len(columns) > 1 else None
        except pd.errors.ParserError as err:
            raise _csv_error(path, encoding, sep, err) from None

    return rows(), None, lambda i: f"Data row {i + 1} (line {i + 2}, after the header) of {path}"


def _json_records(path: Path, encoding: str, columns: list[str], size: int):
    """The records of a JSON Lines file (or of a JSON array, loaded whole: it cannot be read piecewise)."""
    with open(path, encoding=encoding) as handle:
        is_array = handle.read(4096).lstrip().startswith("[")
    fix = (
        'each line of a JSON Lines file is one object, e.g. {"text": "..."}'
        if path.suffix.lower() == ".jsonl"
        else 'a .json file holds one array of objects ([{"text": "..."}, ...]) or one object per line'
    )

    def parsed(number, text):
        try:
            return json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(
                f"{path}, line {number + err.lineno - 1}: not JSON ({err.msg}, column {err.colno}); {fix}."
            ) from None

    if is_array:
        records = list(enumerate(parsed(1, path.read_text(encoding=encoding)), 1))
        where, total = (lambda number: f"Item {number} of {path}"), len(records)
    else:

        def lines():
            with open(path, encoding=encoding) as handle:
                yield from ((n, parsed(n, line.rstrip())) for n, line in enumerate(handle, 1) if line.strip())

        records, where, total = lines(), (lambda number: f"Line {number} of {path}"), None
    text_column, label_column = columns[0], columns[1] if len(columns) > 1 else None

    def fields():
        first, labelled = None, False
        for number, record in records:
            if not isinstance(record, dict) or text_column not in record:
                keys = sorted(record) if isinstance(record, dict) else type(record).__name__
                raise ValueError(
                    f"{where(number)} has no field {text_column!r} (it has {keys}). "
                    "Pass text_column= (--text-column) the field holding the texts."
                )
            _check_text(record[text_column], where(number))
            first, labelled = first or record, labelled or label_column in record
            yield record[text_column], record.get(label_column)
        if label_column is not None and first and not labelled:  # a label missing from some records is a hole
            check_column(path, label_column, sorted(first), "label_column")

    def chunks():
        for chunk in _chunks_of(fields(), size):
            texts, labels = zip(*chunk)
            yield list(texts), list(labels) if label_column is not None else None

    return chunks(), total, lambda i: f"Text {i + 1} of {path}"


def _parquet_rows(path: Path, columns: list[str], size: int):
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as err:
        raise ValueError(
            f"{path} is not a Parquet file ({err}); write it again (e.g. `DataFrame.to_parquet`)."
        ) from None
    for argument, column in zip(("text_column", "label_column"), columns):
        check_column(path, column, parquet.schema_arrow.names, argument)
    batches = parquet.iter_batches(batch_size=size, columns=list(dict.fromkeys(columns)))
    chunks = (
        (batch.column(columns[0]).to_pylist(), batch.column(columns[-1]).to_pylist() if len(columns) > 1 else None)
        for batch in batches
    )
    return chunks, parquet.metadata.num_rows, lambda i: f"Row {i + 1} of {path}"


def _file_chunks(source, text_column: str, label_column: str | None, size: int):
    """``(chunks, total)``: the checked ``(texts, labels)`` of a file (``labels`` None without ``label_column``) a
    chunk at a time, and the number of rows when it is known without reading them."""
    path, encoding = _open_file(source)
    suffix, columns = path.suffix.lower(), [text_column] + ([label_column] if label_column is not None else [])
    try:
        if suffix == ".txt":
            if label_column is not None:
                raise ValueError(f"{path} is a plain-text file (one text per line): it has no label column.")
            chunks, total, place = _text_lines(path, encoding, size)
        elif suffix in (".csv", ".tsv"):
            chunks, total, place = _csv_rows(path, encoding, columns, size)
        elif suffix == ".parquet":
            chunks, total, place = _parquet_rows(path, columns, size)
        else:
            chunks, total, place = _json_records(path, encoding, columns, size)
    except UnicodeDecodeError as err:
        raise _not_utf8(path, encoding, err) from None

    def decoded():
        try:
            yield from chunks
        except UnicodeDecodeError as err:
            raise _not_utf8(path, encoding, err) from None

    return _checked(decoded(), place, path), total


def load_text_file(
    path: str | os.PathLike, text_column: str = "text", label_column: str | None = None
) -> datasets.Dataset:
    """Load a user's file of texts as a ``datasets.Dataset`` (columns ``text`` and, optionally, ``label``).

    Formats, from the suffix: ``.csv`` / ``.tsv`` (a header row; every field a string, as written), ``.jsonl`` /
    ``.json`` (JSON Lines or a JSON array of objects), ``.parquet``, and ``.txt`` (one text per line;
    ``text_column`` / ``label_column`` do not apply). UTF-8, or UTF-16 / UTF-32 with a byte-order mark.

    Args:
        path: the file.
        text_column: the column holding the texts.
        label_column: a column of known classes, kept as ``label`` (only ever scored against, never trained on).

    Returns:
        A dataset with a ``text`` column and, with ``label_column``, a ``label`` ``ClassLabel`` column.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: a file that cannot be read (the message names it, its line where there is one, and the fix); a
            missing column (the message lists the available ones); a blank text (named by its line).
        TypeError: a text that is not a string (e.g. a number or null in a JSON file).
    """
    texts, labels = [], []
    for chunk_texts, chunk_labels in _file_chunks(path, text_column, label_column, 100_000)[0]:
        texts += chunk_texts
        labels += chunk_labels or []
    if not texts:
        raise ValueError(f"{path} holds no texts: it needs at least one row under its header.")
    return load_texts(
        texts, labels if label_column is not None else None, label_source=f"column {label_column!r} of {path}"
    )


def text_chunks(
    source, text_column: str = "text", chunk_size: int = DEFAULT_CHUNK_SIZE
) -> tuple[Iterator[list[str]], int | None]:
    """``(chunks, total)``: lists of at most ``chunk_size`` texts read lazily from ``source`` (a file path, a
    ``datasets.Dataset`` whose ``text_column`` holds the texts, or an iterable of strings), each text checked as it
    comes, and the number of texts when it is known without reading them (None otherwise)."""
    check_scalar(chunk_size, "chunk_size", int, min_val=1)
    if isinstance(source, (str, os.PathLike)):
        chunks, total = _file_chunks(source, text_column, None, chunk_size)
        return (texts for texts, _ in chunks), total
    if hasattr(source, "column_names") and hasattr(source, "select"):  # a datasets.Dataset, sliced chunk by chunk
        check_column("The dataset", text_column, source.column_names)
        texts = (source[start : start + chunk_size][text_column] for start in range(0, len(source), chunk_size))
        total, name = len(source), f"the dataset's column {text_column!r}"
    elif isinstance(source, Iterable) and not isinstance(source, bytes):
        texts = _chunks_of(source, chunk_size)
        total, name = (len(source) if hasattr(source, "__len__") else None), "the texts"
    else:
        raise TypeError(
            f"`source` must be a file path, a datasets.Dataset or an iterable of strings, got {type(source).__name__}."
        )
    return (chunk for chunk, _ in _checked(((t, None) for t in texts), lambda i: f"Text {i + 1} of {name}")), total
