"""Where a run's training texts are found again: the user's file it recorded (``training_run.json``'s ``"input"``)
or its benchmark, when the files are available locally (never downloaded)."""

from __future__ import annotations

import os

from ..data import default_data_dir, load_benchmark, load_text_file
from .record import RunRecord

__all__ = ["find_training_texts", "run_input_file"]


def run_input_file(run: RunRecord | None) -> dict | None:
    """The user's file a run was trained on (``training_run.json``'s ``"input"``: path, text_column, label_column).

    Args:
        run: a run record (:class:`~hf_textcluster.runs.record.RunRecord`), or ``None``.

    Returns:
        The ``"input"`` entry, or ``None`` when the run was trained on a benchmark or is unknown.

    Example:
        >>> run_input_file(RunRecord(input={"path": "tickets.csv", "text_column": "text"}))["path"]
        'tickets.csv'
    """
    return dict(run.input) if run is not None and run.input and run.input.path else None


def find_training_texts(
    run: RunRecord | None, data_dir: str | os.PathLike | None = None
) -> tuple[list[str] | None, str | None]:
    """The texts a run was trained on: from the user's file it recorded (``"input"``) or from its benchmark when the
    files are available locally (``data_dir`` or ``$HF_TEXTCLUSTER_DATA_DIR``; never downloads).

    Args:
        run: a run record (:class:`~hf_textcluster.runs.record.RunRecord`), or ``None``.
        data_dir: the folder of the benchmark files.

    Returns:
        ``(texts, None)``; ``(None, why)`` when the run's file is gone or unreadable; ``(None, None)`` when there is
        nothing to look for.

    Example:
        >>> find_training_texts(None)
        (None, None)
    """
    source = run_input_file(run)
    if source is not None:
        path = source["path"]
        if not os.path.isfile(path):
            return None, f"the run's input file {path} is no longer there"
        try:
            dataset = load_text_file(path, text_column=source.get("text_column") or "text")
        except (ValueError, TypeError, OSError) as err:
            return None, f"the run's input file {path} could not be read ({err})"
        return list(dataset["text"]), None
    data_dir = data_dir or default_data_dir()
    corpus = run and (run.dataset or run.corpus)
    if not corpus or not data_dir:
        return None, None
    return list(load_benchmark(corpus, data_dir=data_dir)["text"]), None
