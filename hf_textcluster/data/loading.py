"""Loaders: a benchmark corpus, the sample shipped in the package, a user's list of texts, or a user's file, each as
a ``datasets.Dataset``."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import datasets

from ..modeling.input_checks import MISSING_LABEL, missing_labels, validate_labels
from ..modeling.validation import validate_texts
from .benchmark import DATA_DIR_ENV, ShortTextClusteringBenchmark
from .corpora import CORPORA, resolve_benchmark_name
from .readers import read_csv_frame, read_lines, read_text_label_csv

__all__ = ["load_benchmark", "load_sample", "load_texts", "load_text_file", "check_column", "default_data_dir"]

TEXT_FILE_SUFFIXES = (".csv", ".tsv", ".jsonl", ".json", ".parquet", ".txt")
# The labelled sample shipped in the package (its source, sampling and licence: SOURCE.md beside it).
SAMPLE_FILE = Path(__file__).parent / "sample" / "stackoverflow_titles.csv.gz"


def default_data_dir() -> str | None:
    """The folder named by the ``HF_TEXTCLUSTER_DATA_DIR`` environment variable, or ``None``."""
    return os.environ.get(DATA_DIR_ENV) or None


def load_benchmark(
    name: str,
    data_dir: str | os.PathLike | None = None,
    augmentation: str | None = None,
    cache_dir: str | os.PathLike | None = None,
    *,
    augmented_dir: str | os.PathLike | None = None,
) -> datasets.Dataset:
    """Load one benchmark corpus (split ``train``) as a ``datasets.Dataset``.

    Args:
        name: one of :data:`~hf_textcluster.data.BENCHMARKS`.
        data_dir: folder holding ``<name>.csv``. Defaults to ``$HF_TEXTCLUSTER_DATA_DIR``; when neither is set,
            the raw public sources are downloaded (needs internet once; the result is cached).
        augmentation: ``None``, ``"sccl_contextual"``, ``"mist_contextual"`` or ``"aecl_eda"``: join the
            precomputed views as ``text_aug1``/``text_aug2`` (see :mod:`hf_textcluster.data.precomputed`).
        cache_dir: the ``datasets`` cache folder (default: the ``datasets`` default).
        augmented_dir: folder holding ``<family>/<name>.csv``; default ``<data_dir>/augmented``.

    Returns:
        A dataset with columns ``text`` (str), ``label`` (``ClassLabel``) and, with augmentation,
        ``text_aug1``/``text_aug2``.
    """
    builder = ShortTextClusteringBenchmark(
        config_name=resolve_benchmark_name(name),
        data_dir=default_data_dir() if data_dir is None else data_dir,
        augmentation=augmentation,
        augmented_dir=augmented_dir,
        cache_dir=os.fspath(cache_dir) if cache_dir is not None else None,
    )
    builder.download_and_prepare()
    return builder.as_dataset(split="train")


def load_sample() -> datasets.Dataset:
    """2,000 StackOverflow question titles with their tags, shipped in the package: offline, no download, no folder.

    A seeded stratified sample of the ``stackoverflow`` benchmark corpus (100 titles of each of its 20 tags; Xu et al.
    2017's release of Stack Overflow titles, CC BY-SA 3.0, see ``hf_textcluster/data/sample/SOURCE.md``). The demo
    clusters it; it is small enough to try a method in minutes on a CPU.

    Returns:
        A dataset with columns ``text`` (str) and ``label`` (``ClassLabel`` named by the 20 tags, as the
        ``stackoverflow`` benchmark's), in the corpus' order.

    Example:
        >>> from hf_textcluster.data import load_sample
        >>> sample = load_sample()
        >>> len(sample), sample.features["label"].names[:3]
        (2000, ['wordpress', 'oracle', 'svn'])
    """
    names = list(CORPORA["stackoverflow"].label_names)
    rows = read_text_label_csv(SAMPLE_FILE)
    features = datasets.Features({"text": datasets.Value("string"), "label": datasets.ClassLabel(names=names)})
    info = datasets.DatasetInfo(
        description="2,000 StackOverflow question titles, 100 per tag (a sample of Xu et al. 2017's corpus).",
        license="CC BY-SA 3.0 (Stack Exchange content)",
        homepage="https://github.com/jacoxu/STC2",
        features=features,
    )
    columns = {"text": [text for text, _ in rows], "label": [names.index(label) for _, label in rows]}
    return datasets.Dataset.from_dict(columns, info=info)


def _numeric_aware_key(value: str):
    try:
        return (0, float(value), value)
    except ValueError:
        return (1, 0.0, value)


def load_texts(texts, labels=None, *, label_source: str = "`labels`") -> datasets.Dataset:
    """A ``datasets.Dataset`` with a ``text`` column (and a ``label`` column when ``labels`` is given).

    Args:
        texts: a list (or any iterable) of non-blank strings; checked with
            :func:`~hf_textcluster.data.validate_texts`.
        labels: optional, one label per text (str or int). They become a ``ClassLabel`` whose names are the
            distinct labels as strings, in numeric order when they are numbers (so integer labels ``0..K-1`` keep
            their values). Missing ones (None, NaN, blank) get the class id -1: they are clustered but left out of
            scoring, with one warning that says how many (see
            :func:`~hf_textcluster.modeling.input_checks.missing_labels`);
            labels that are all missing are an error.
        label_source: how the warning and errors name the labels (e.g. "column 'label' of data.csv").
    """
    texts = validate_texts(texts, "texts")
    columns: dict = {"text": texts}
    features: dict = {"text": datasets.Value("string")}
    if labels is not None:
        labels = validate_labels(labels, len(texts), label_source)
        missing = missing_labels(labels, encoded=False)
        if missing.any():
            logging.getLogger(__name__).warning(
                f"{int(missing.sum())} of {len(labels)} texts have no label in {label_source}: they are clustered "
                "but left out of the scores (never a class of their own)."
            )
        labels = [None if gone else str(label) for label, gone in zip(labels, missing)]
        names = sorted({label for label in labels if label is not None}, key=_numeric_aware_key)
        index = {name: i for i, name in enumerate(names)}
        columns["label"] = [MISSING_LABEL if label is None else index[label] for label in labels]
        features["label"] = datasets.ClassLabel(names=names)
    return datasets.Dataset.from_dict(columns, features=datasets.Features(features))


def _read_table(path: Path):
    """The file as a DataFrame; a file that cannot be parsed is a ValueError naming it, what went wrong and the fix."""
    import pandas as pd

    suffix = path.suffix.lower()
    if path.stat().st_size == 0 and suffix in TEXT_FILE_SUFFIXES:
        raise ValueError(f"{path} is empty (0 bytes): nothing to read.")
    if suffix not in (".csv", ".tsv", ".jsonl", ".json", ".parquet"):
        raise ValueError(
            f"Unsupported file type {path.suffix!r} for {path}. Supported: {', '.join(TEXT_FILE_SUFFIXES)}."
        )
    try:
        if suffix in (".csv", ".tsv"):
            frame = read_csv_frame(path, sep="\t" if suffix == ".tsv" else ",")
        elif suffix == ".parquet":
            frame = pd.read_parquet(path)
        else:
            with open(path, encoding="utf-8-sig") as handle:
                head = handle.read(4096).lstrip()
            frame = pd.read_json(path, lines=not head.startswith("["), dtype=False, encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        raise ValueError(
            f"{path} is not UTF-8 text ({err.reason} at byte {err.start}); re-save it as UTF-8 (e.g. with "
            "`iconv -f latin1 -t utf-8`)."
        ) from err
    except ValueError as err:
        raise ValueError(f"{path} could not be parsed as {path.suffix.lstrip('.').upper()}: {err}") from err
    columns = [str(c) for c in frame.columns]
    if suffix == ".csv" and len(columns) == 1 and "\t" in columns[0]:
        raise ValueError(f"{path} looks tab-separated (its header is {columns[0]!r}): rename it to .tsv.")
    return frame


def check_column(source, column: str, available: list, argument: str = "text_column") -> None:
    """A clear error when ``source`` (a file, a dataset) has no ``column``: what it has, and which argument to set."""
    if column not in available:
        raise ValueError(
            f"{source} has no column {column!r}. Available columns: {list(available)}. Pass {argument}= one of them."
        )


def load_text_file(
    path: str | os.PathLike, text_column: str = "text", label_column: str | None = None
) -> datasets.Dataset:
    """Load a user's file of texts as a ``datasets.Dataset`` (columns ``text`` and, optionally, ``label``).

    Formats, from the suffix: ``.csv`` / ``.tsv`` (a header row; read with pandas, every field as a string,
    no NA conversion), ``.jsonl`` / ``.json`` (JSON lines or a JSON array of records), ``.parquet``, and
    ``.txt`` (one text per line; ``text_column``/``label_column`` do not apply).

    Args:
        path: the file.
        text_column: the column holding the texts.
        label_column: a column of known classes, kept as ``label`` (only ever scored against, never trained on).

    Returns:
        A dataset with a ``text`` column and, with ``label_column``, a ``label`` ``ClassLabel`` column.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: unsupported suffix; ``text_column`` or ``label_column`` missing (the message lists the
            available columns); blank texts (the message names the row).
        TypeError: non-string texts (e.g. numbers or nulls in the text column).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Text file not found: {path.resolve()}. Pass the path of an existing file.")
    if path.suffix.lower() == ".txt":
        if label_column is not None:
            raise ValueError(f"{path} is a plain-text file (one text per line): it has no label column.")
        return load_texts(validate_texts(read_lines(path), f"lines of {path} (0-based)"))

    frame = _read_table(path)
    available = [str(column) for column in frame.columns]
    for argument, column in (("text_column", text_column), ("label_column", label_column)):
        if column is not None:
            check_column(path, column, available, argument)
    texts = validate_texts(frame[text_column].tolist(), f"column {text_column!r} of {path} (0-based rows)")
    labels = frame[label_column].tolist() if label_column is not None else None
    return load_texts(texts, labels, label_source=f"column {label_column!r} of {path}")
