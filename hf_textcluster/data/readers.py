"""Readers of corpus files: the prepared ``<name>.csv`` files and the raw formats of the public sources.

Every reader returns rows ``(text, raw_label)``. The ``parse_*`` functions return the same rows as the prepared CSV
files: line terminators (LF or CRLF) and the UTF-8 byte-order mark are stripped, texts are otherwise kept exactly
(including trailing spaces), and rows whose text is empty or only whitespace are dropped (GoogleNews-T and -S each
have one such row). Which corpus is in which format is in :mod:`hf_textcluster.data.corpora`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tarfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .corpora import CorpusSpec

logger = logging.getLogger(__name__)

# Raw formats of the public sources.
LINE_ALIGNED = "line_aligned"  # a text file and a label file (`*_gnd.txt`), one entry per line
JSON_LINES = "json_lines"  # one {"text": ..., "cluster": ...} object per line
LABEL_TAB_TEXT = "label_tab_text"  # `label<TAB>text` per line
TREC = "trec"  # `COARSE:fine text` per line, ISO-8859-1 (Li & Roth's question classification files)
CSV_COLUMNS = "csv_columns"  # a CSV with a header; the text and label columns are named in raw_options
JSON_SPLITS = "json_splits"  # one JSON object of splits, each a list of [text, label] pairs
TEXT_FOLDERS = "text_folders"  # a tar archive (or a folder) of `<root>/<label>/<name>.txt`, one text per file


def read_lines(path: str | os.PathLike, encoding: str = "utf-8-sig") -> list[str]:
    """Lines of a UTF-8 file (or one in ``encoding``), without the BOM and without the LF / CRLF terminators.

    Splits on ``\\n`` only (``str.splitlines`` would also split on form feeds, ``\\x1c``, ``\\u2028``, ...), and
    drops nothing but the empty string after a final newline.
    """
    with open(path, encoding=encoding, newline="") as handle:
        lines = handle.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _drop_blank(rows: list[tuple[str, str]], source: str | os.PathLike) -> list[tuple[str, str]]:
    kept = [row for row in rows if row[0].strip()]
    if len(kept) != len(rows):
        dropped = [i for i, row in enumerate(rows) if not row[0].strip()]
        logger.info("%s: dropped %d row(s) with an empty text (0-based lines %s).", source, len(dropped), dropped[:10])
    return kept


def parse_line_aligned(text_path: str | os.PathLike, label_path: str | os.PathLike) -> list[tuple[str, str]]:
    """Rows of a line-aligned pair of files (jacoxu/STC2: ``X.txt`` + ``X_gnd.txt``, one label per line)."""
    texts = read_lines(text_path)
    labels = [label.strip() for label in read_lines(label_path)]
    if len(texts) != len(labels):
        raise ValueError(
            f"{text_path} has {len(texts)} lines but {label_path} has {len(labels)}; the two files must be "
            "line-aligned (one label per text)."
        )
    return _drop_blank(list(zip(texts, labels)), text_path)


def parse_json_lines(
    path: str | os.PathLike, text_key: str = "text", label_key: str = "cluster"
) -> list[tuple[str, str]]:
    """Rows of a JSON-lines file (jackyin12/GSDMM: ``{"text": ..., "cluster": 17}`` per line)."""
    rows = []
    for number, line in enumerate(read_lines(path)):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            rows.append((record[text_key], str(record[label_key]).strip()))
        except (json.JSONDecodeError, KeyError, TypeError) as error:
            raise ValueError(
                f"{path}, line {number + 1}: expected a JSON object with keys {text_key!r} and {label_key!r} ({error})."
            ) from error
    return _drop_blank(rows, path)


def parse_label_tab_text(path: str | os.PathLike) -> list[tuple[str, str]]:
    """Rows of a ``label<TAB>text`` file (rashadulrakib/short-text-clustering-enhancement)."""
    rows = []
    for number, line in enumerate(read_lines(path)):
        label, tab, text = line.partition("\t")
        if not tab:
            raise ValueError(f"{path}, line {number + 1}: expected `label<TAB>text`, found no TAB.")
        rows.append((text, label.strip()))
    return _drop_blank(rows, path)


def parse_trec(path: str | os.PathLike) -> list[tuple[str, str]]:
    """Rows of a Li & Roth question-classification file (``COARSE:fine text`` per line, ISO-8859-1): the text
    after the first space and the coarse class (TREC-6); the fine class is dropped."""
    rows = []
    for number, line in enumerate(read_lines(path, encoding="iso-8859-1")):
        head, space, text = line.partition(" ")
        coarse, colon, _fine = head.partition(":")
        if not (space and colon and coarse):
            raise ValueError(f"{path}, line {number + 1}: expected `COARSE:fine text`, found {line[:40]!r}.")
        rows.append((text, coarse))
    return _drop_blank(rows, path)


def parse_csv_columns(
    path: str | os.PathLike,
    text_column: str = "text",
    label_column: str = "label",
    names: tuple[str, ...] | list[str] | None = None,
) -> list[tuple[str, str]]:
    """Rows of a CSV file from its text and label columns (any other column, such as an unnamed index column, is
    ignored); every field is read as written. ``names``: the column names of a file without a header row."""
    frame = read_csv_frame(path, required=(text_column, label_column), names=names)
    return _drop_blank(list(zip(frame[text_column].tolist(), frame[label_column].tolist())), path)


def parse_json_splits(path: str | os.PathLike, split: str = "train") -> list[tuple[str, str]]:
    """Rows of one split of a JSON object of splits, each a list of ``[text, label]`` pairs (clinc/oos-eval)."""
    with open(path, encoding="utf-8-sig") as handle:
        data = json.load(handle)
    if not isinstance(data, dict) or split not in data:
        keys = list(data) if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"{path}: expected a JSON object with the split {split!r}; found {keys}.")
    rows = []
    for number, pair in enumerate(data[split]):
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
            raise ValueError(f"{path}, split {split!r}, item {number}: expected [text, label], found {pair!r:.80}.")
        rows.append((pair[0], str(pair[1]).strip()))
    return _drop_blank(rows, path)


def _decode_article(data: bytes) -> str:
    """UTF-8, else ISO-8859-1 (one BBC file holds a bare 0xA3 pound sign), without the trailing newlines (four BBC
    files end in more than one)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")
    return text.rstrip("\r\n")


def parse_text_folders(path: str | os.PathLike, root: str = "bbc") -> list[tuple[str, str]]:
    """Rows of a corpus kept as one text file per document, ``<root>/<label>/<name>.txt``, in a tar archive (such
    as a repository archive, whose top folder is ignored) or a folder: label = the folder name, text = the whole file
    (newlines kept, the trailing newlines removed), files sorted by their path below ``root``."""
    pattern = re.compile(rf"(?:^|/){re.escape(root)}/([^/]+)/([^/]+\.txt)$")
    path = Path(path)
    if path.is_dir():
        found = {file.as_posix(): file.read_bytes() for file in path.rglob("*.txt") if pattern.search(file.as_posix())}
    else:
        with tarfile.open(path, "r:*") as archive:
            found = {m.name: archive.extractfile(m).read() for m in archive if m.isfile() and pattern.search(m.name)}
    files = {"/".join(pattern.search(name).groups()): data for name, data in found.items()}  # <label>/<name>.txt
    if not files:
        raise ValueError(f"{path}: no file matches <...>/{root}/<label>/<name>.txt.")
    rows = [(_decode_article(data), key.split("/")[0]) for key, data in sorted(files.items())]
    return _drop_blank(rows, path)


def parse_raw(spec: CorpusSpec, paths: dict) -> list[tuple[str, str]]:
    """Rows of a corpus from its downloaded raw files (``paths`` has the keys of ``spec.urls``, in that order: the
    parser's file arguments)."""
    if spec.raw_format not in _PARSERS:
        raise ValueError(f"Unknown raw format {spec.raw_format!r}: expected one of {list(_PARSERS)}.")
    return _PARSERS[spec.raw_format](*(paths[key] for key in spec.urls), **spec.raw_options)


_PARSERS = {
    LINE_ALIGNED: parse_line_aligned,
    JSON_LINES: parse_json_lines,
    LABEL_TAB_TEXT: parse_label_tab_text,
    TREC: parse_trec,
    CSV_COLUMNS: parse_csv_columns,
    JSON_SPLITS: parse_json_splits,
    TEXT_FOLDERS: parse_text_folders,
}


# every field a string, exactly as written (no NA conversion, no stripping)
CSV_READ_OPTIONS = {"dtype": str, "keep_default_na": False, "na_filter": False, "encoding": "utf-8"}


def read_csv_frame(
    path: str | os.PathLike, required: tuple[str, ...] = (), sep: str = ",", names: Sequence[str] | None = None
):
    """Read a CSV file with every field as a string, exactly as written (no NA conversion, no stripping);
    ``names``: the column names of a file without a header row."""
    import pandas as pd

    header = {} if names is None else {"header": None, "names": list(names)}
    return require_columns(pd.read_csv(path, sep=sep, **header, **CSV_READ_OPTIONS), required, path)


def require_columns(frame, required: Sequence[str], path: str | os.PathLike):
    """``frame`` if it has every ``required`` column, else a ValueError naming the missing ones and ``path``."""
    missing = [column for column in required if column not in frame.columns]
    if missing:
        raise ValueError(f"{path} has no column(s) {missing}; its columns are {list(frame.columns)}.")
    return frame


def read_text_label_csv(path: str | os.PathLike) -> list[tuple[str, str]]:
    """Rows of a prepared benchmark CSV (header ``text,label``)."""
    frame = read_csv_frame(path, required=("text", "label"))
    return list(zip(frame["text"].tolist(), frame["label"].tolist()))
