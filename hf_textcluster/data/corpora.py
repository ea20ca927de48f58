"""The eight short-text clustering benchmark corpora: label names, raw public sources, and parsers.

Everything here is plain Python (no ``datasets``): the builder in :mod:`hf_textcluster.data.benchmark` turns
these rows into an Arrow dataset. The provenance of every file is described in ``SOURCES.md`` next to the CSV
files (``../shared/data`` in the development checkout).

Two ways to get rows ``(text, raw_label)``:

* :func:`read_text_label_csv` reads a prepared ``<name>.csv`` (header ``text,label``);
* the ``parse_*`` functions read the raw files of the public sources, in their own formats, and return the same
  rows as the prepared CSV files: line terminators (LF or CRLF) and the UTF-8 byte-order mark are stripped,
  texts are otherwise kept exactly (including trailing spaces), and rows whose text is empty or only
  whitespace are dropped (GoogleNews-T and -S each have one such row).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from functools import cached_property

logger = logging.getLogger(__name__)

__all__ = [
    "BENCHMARKS",
    "CorpusSpec",
    "CORPORA",
    "resolve_benchmark_name",
    "parse_line_aligned",
    "parse_json_lines",
    "parse_label_tab_text",
    "read_lines",
    "read_text_label_csv",
]

_STC2 = "https://raw.githubusercontent.com/jacoxu/STC2/34a28c5a8cf2d6e1db300d32f271f6522db3bde5/dataset/"
_GSDMM = "https://raw.githubusercontent.com/jackyin12/GSDMM/1b344d9de28faee43ec0df0c3cf7ea57737fe14e/data/"
_RAKIB = (
    "https://raw.githubusercontent.com/rashadulrakib/short-text-clustering-enhancement/"
    "f363b66e6fd51f9dd1db679d2a9ce55538ab9868/data/"
)

# Raw formats of the public sources.
LINE_ALIGNED = "line_aligned"  # a text file and a label file (`*_gnd.txt`), one entry per line
JSON_LINES = "json_lines"  # one {"text": ..., "cluster": ...} object per line
LABEL_TAB_TEXT = "label_tab_text"  # `label<TAB>text` per line


@dataclass(frozen=True)
class CorpusSpec:
    """What the library knows about one benchmark corpus.

    Attributes:
        name: the builder config name and the CSV file stem (``<data_dir>/<name>.csv``).
        label_ids: the raw label ids of the source, as strings, in numeric order.
        label_names: the ``ClassLabel`` names, aligned with ``label_ids`` (the real class names where the
            source documents them, otherwise the raw ids).
        num_rows: the number of rows of the prepared file.
        raw_format: one of ``"line_aligned"``, ``"json_lines"``, ``"label_tab_text"``.
        urls: the raw files to download (keys ``"texts"``/``"labels"`` for line-aligned sources, ``"data"``
            otherwise), pinned to the commits given in SOURCES.md.
        description: one line for ``DatasetInfo.description``.
    """

    name: str
    label_ids: tuple[str, ...]
    label_names: tuple[str, ...]
    num_rows: int
    raw_format: str
    urls: dict
    description: str

    @property
    def num_labels(self) -> int:
        return len(self.label_ids)

    def label_index(self, raw_label: str) -> int:
        """Index of a raw label id in ``label_ids`` (the integer stored in the ``ClassLabel`` column)."""
        index = self._index.get(raw_label.strip())
        if index is None:
            raise ValueError(
                f"Unknown label {raw_label!r} for corpus {self.name!r}: expected one of the {self.num_labels} raw "
                f"label ids {list(self.label_ids[:10])}{' ...' if self.num_labels > 10 else ''}."
            )
        return index

    @cached_property
    def _index(self) -> dict:
        return {label: i for i, label in enumerate(self.label_ids)}


def _ids(n: int) -> tuple[str, ...]:
    return tuple(str(i) for i in range(1, n + 1))


# The 89 distinct cluster ids of the Tweet corpus (they range over 1..110 with gaps).
_TWEET_IDS = tuple(
    str(i)
    for i in (
        1, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 32, 36, 37, 38, 40,
        41, 42, 44, 45, 46, 49, 51, 52, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 70, 71, 72, 73,
        74, 75, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100,
        101, 102, 103, 104, 106, 107, 108, 109, 110,
    )
)  # fmt: skip


def _googlenews(suffix: str, source_file: str, num_rows: int, part: str) -> CorpusSpec:
    return CorpusSpec(
        name=f"googlenews_{suffix}",
        label_ids=_ids(152),
        label_names=_ids(152),
        num_rows=num_rows,
        raw_format=JSON_LINES,
        urls={"data": _GSDMM + source_file},
        description=f"GoogleNews ({part}) of Yin & Wang (GSDMM release, JSON lines); 152 clusters, labels are the "
        "GSDMM cluster ids.",
    )


CORPORA: dict[str, CorpusSpec] = {
    spec.name: spec
    for spec in (
        CorpusSpec(
            name="agnews",
            label_ids=_ids(4),
            label_names=("World", "Sports", "Business", "Sci/Tech"),
            num_rows=8000,
            raw_format=LABEL_TAB_TEXT,
            urls={"data": _RAKIB + "agnewsdataraw-8000"},
            description="AG News subset of Rakib et al. 2020 (lowercased, stop words removed); 4 balanced classes.",
        ),
        CorpusSpec(
            name="searchsnippets",
            label_ids=_ids(8),
            label_names=(
                "Business",
                "Computers",
                "Culture-Arts-Entertainment",
                "Education-Science",
                "Engineering",
                "Health",
                "Politics-Society",
                "Sports",
            ),
            num_rows=12340,
            raw_format=LINE_ALIGNED,
            urls={"texts": _STC2 + "SearchSnippets.txt", "labels": _STC2 + "SearchSnippets_gnd.txt"},
            description="SearchSnippets (Phan et al. 2008, STC2 release): web search snippets in 8 domains.",
        ),
        CorpusSpec(
            name="stackoverflow",
            label_ids=_ids(20),
            label_names=(
                "wordpress",
                "oracle",
                "svn",
                "apache",
                "excel",
                "matlab",
                "visual-studio",
                "cocoa",
                "osx",
                "bash",
                "spring",
                "hibernate",
                "scala",
                "sharepoint",
                "ajax",
                "qt",
                "drupal",
                "linq",
                "haskell",
                "magento",
            ),  # fmt: skip
            num_rows=20000,
            raw_format=LINE_ALIGNED,
            urls={"texts": _STC2 + "StackOverflow.txt", "labels": _STC2 + "StackOverflow_gnd.txt"},
            description="StackOverflow question titles (STC2 release, original casing); 20 tags, 1000 each.",
        ),
        CorpusSpec(
            name="biomedical",
            label_ids=_ids(20),
            label_names=_ids(20),
            num_rows=20000,
            raw_format=LINE_ALIGNED,
            urls={"texts": _STC2 + "Biomedical.txt", "labels": _STC2 + "Biomedical_gnd.txt"},
            description="Biomedical paper titles (BioASQ, STC2 release); 20 topic groups, 1000 each.",
        ),
        _googlenews("ts", "TS", 11109, "title + snippet"),
        _googlenews("t", "T", 11108, "titles; the one empty title is dropped"),
        _googlenews("s", "S", 11108, "snippets; the one empty snippet is dropped"),
        CorpusSpec(
            name="tweet",
            label_ids=_TWEET_IDS,
            label_names=_TWEET_IDS,
            num_rows=2472,
            raw_format=JSON_LINES,
            urls={"data": _GSDMM + "Tweet"},
            description="Tweet corpus of Yin & Wang (TREC microblog); 89 clusters whose ids range over 1..110.",
        ),
    )
}

BENCHMARKS: tuple[str, ...] = tuple(CORPORA)


def resolve_benchmark_name(name: object) -> str:
    """Return the canonical corpus name for ``name`` (case and ``-``/``_``/space insensitive).

    Raises:
        TypeError: ``name`` is not a string.
        ValueError: ``name`` is not one of :data:`BENCHMARKS` (the message lists the valid names).
    """
    if not isinstance(name, str):
        raise TypeError(f"The benchmark name must be a string, one of {list(BENCHMARKS)}; got {type(name).__name__}.")
    key = name.strip().lower().replace("-", "_").replace(" ", "_")
    if key not in CORPORA:
        raise ValueError(f"Unknown benchmark {name!r}. Valid names: {', '.join(BENCHMARKS)}.")
    return key


# ---------------------------------------------------------------------------------------------------------------
# Parsers of the raw formats
# ---------------------------------------------------------------------------------------------------------------


def read_lines(path: str | os.PathLike) -> list[str]:
    """Lines of a UTF-8 file, without the BOM and without the LF / CRLF terminators.

    Splits on ``\\n`` only (``str.splitlines`` would also split on form feeds, ``\\x1c``, ``\\u2028``, ...), and
    drops nothing but the empty string after a final newline.
    """
    with open(path, encoding="utf-8-sig", newline="") as handle:
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


def parse_raw(spec: CorpusSpec, paths: dict) -> list[tuple[str, str]]:
    """Rows of a corpus from its downloaded raw files (``paths`` has the keys of ``spec.urls``)."""
    if spec.raw_format == LINE_ALIGNED:
        return parse_line_aligned(paths["texts"], paths["labels"])
    if spec.raw_format == JSON_LINES:
        return parse_json_lines(paths["data"])
    if spec.raw_format == LABEL_TAB_TEXT:
        return parse_label_tab_text(paths["data"])
    raise ValueError(f"Unknown raw format {spec.raw_format!r}.")


# every field a string, exactly as written (no NA conversion, no stripping)
CSV_READ_OPTIONS = {"dtype": str, "keep_default_na": False, "na_filter": False, "encoding": "utf-8"}


def read_csv_frame(path: str | os.PathLike, required: tuple[str, ...] = (), sep: str = ","):
    """Read a CSV file with every field as a string, exactly as written (no NA conversion, no stripping)."""
    import pandas as pd

    frame = pd.read_csv(path, sep=sep, **CSV_READ_OPTIONS)
    missing = [column for column in required if column not in frame.columns]
    if missing:
        raise ValueError(f"{path} has no column(s) {missing}; its columns are {list(frame.columns)}.")
    return frame


def read_text_label_csv(path: str | os.PathLike) -> list[tuple[str, str]]:
    """Rows of a prepared benchmark CSV (header ``text,label``)."""
    frame = read_csv_frame(path, required=("text", "label"))
    return list(zip(frame["text"].tolist(), frame["label"].tolist()))
