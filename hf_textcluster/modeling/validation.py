"""Input checks shared by every entry point that accepts texts.

One function, :func:`validate_texts`, so that a bad argument gets the same clear message whether it reaches
the library through :func:`~hf_textcluster.data.load_texts`, a file loader, an augmenter or a model.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

import numpy as np

__all__ = ["check_local_path", "check_num_clusters", "missing_labels", "validate_texts"]


def _shorten(value: object, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def validate_texts(texts: object, argument_name: str = "texts") -> list[str]:
    """Check that ``texts`` is a non-empty list of non-blank strings and return it as a ``list[str]``.

    Accepts any sequence or iterable of strings (list, tuple, numpy array of ``str``, a ``datasets`` column, a
    generator, ...). Strings are returned unchanged (no stripping: leading or trailing spaces are kept).

    Raises:
        TypeError: ``texts`` is ``None``, a single ``str``/``bytes``, not iterable, or holds a non-``str`` item
            (the message names the first bad index and its type).
        ValueError: ``texts`` is empty, or one of its strings is empty or only whitespace (the message names the
            first such index and how many there are).
    """
    if texts is None:
        raise TypeError(
            f"`{argument_name}` is None. Pass a list of strings, e.g. {argument_name}=['first text', 'second text']."
        )
    if isinstance(texts, (str, bytes)):
        raise TypeError(
            f"`{argument_name}` must be a list of strings, got a single {type(texts).__name__} "
            f"({_shorten(texts)}). Wrap it in a list: {argument_name}=[{_shorten(texts, 40)}]."
        )
    if not isinstance(texts, Iterable):
        raise TypeError(
            f"`{argument_name}` must be a list of strings, got {type(texts).__name__}. "
            f"Pass e.g. {argument_name}=['first text', 'second text']."
        )
    items = texts if isinstance(texts, list) else list(texts)
    if len(items) == 0:
        raise ValueError(f"`{argument_name}` is empty. Pass at least one non-empty string.")

    for index, item in enumerate(items):
        if not isinstance(item, str):
            missing = item is None or _is_nan(item)
            hint = " Drop the missing values first." if missing else " Convert the items to str first."
            raise TypeError(
                f"`{argument_name}` must contain only strings, but item {index} is "
                f"{type(item).__name__} ({_shorten(item)}).{hint}"
            )

    blank = [index for index, item in enumerate(items) if not _visible(item)]
    if blank:
        first = blank[0]
        more = f" ({len(blank)} blank items in total, e.g. at indices {blank[:5]})" if len(blank) > 1 else ""
        raise ValueError(
            f"`{argument_name}` item {first} is empty or only whitespace / invisible characters ({items[first]!r})"
            f"{more}. Remove blank texts before clustering: they carry no content to cluster."
        )
    return items


def is_blank(text: str) -> bool:
    """Whether ``text`` holds nothing to cluster: empty, or only whitespace and invisible characters (zero-width
    spaces, BOMs, ...); the one test of a blank text, used by :func:`validate_texts` and streaming predict.

    Example:
        >>> is_blank(" \u200b "), is_blank("a")
        (True, False)
    """
    return not _visible(text)


def _visible(text: str) -> str:
    """``text`` without whitespace, control and format characters (zero-width spaces, BOMs, ...)."""
    return "".join(ch for ch in text if unicodedata.category(ch)[0] not in "CZ")


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and value != value


# A text without a known class (the `datasets` ClassLabel convention): clustered like any other, left out of scoring.
MISSING_LABEL = -1


def missing_labels(labels: object, *, encoded: bool = True) -> np.ndarray:
    """The one rule for labels with holes, shared by loading, evaluation, the report and the benchmark: a boolean mask
    of the labels that are missing (None, NaN, empty or blank strings, and with ``encoded`` the class id -1 that
    :func:`~hf_textcluster.data.load_texts` gives them). Texts without a label are clustered but never scored, and
    never a class of their own.

    Args:
        labels: one label per text (any sequence or array).
        encoded: whether ``labels`` are class ids (as a ``ClassLabel`` column holds them): then -1 is missing too;
            False for a file's raw values, where -1 can be a real class.

    Returns:
        A numpy bool array, True where the label is missing.

    Example:
        >>> missing_labels(["a", "", None, "b"], encoded=False).tolist()
        [False, True, True, False]
    """
    items = labels.tolist() if isinstance(labels, np.ndarray) else list(labels)

    def missing(value) -> bool:
        if value is None or _is_nan(value) or (isinstance(value, np.floating) and np.isnan(value)):
            return True
        if isinstance(value, str):
            return not _visible(value)
        return encoded and not isinstance(value, bool) and isinstance(value, (int, np.integer)) and value == -1

    return np.fromiter((missing(v) for v in items), dtype=bool, count=len(items))


def validate_labels(labels: object, num_texts: int, argument_name: str = "labels") -> list:
    """Check that ``labels`` is a sequence with one entry per text (used by the loaders), and that at least one of
    them is a label (see :func:`missing_labels`: the missing ones are left out of scoring)."""
    if isinstance(labels, (str, bytes)) or not isinstance(labels, Iterable):
        raise TypeError(f"`{argument_name}` must be a list with one label per text, got {type(labels).__name__}.")
    items = list(labels)
    if len(items) != num_texts:
        raise ValueError(
            f"`{argument_name}` has {len(items)} entries but there are {num_texts} texts; pass one label per text."
        )
    if items and missing_labels(items, encoded=False).all():
        raise ValueError(
            f"{argument_name} holds no label at all ({len(items)} empty values): pass the column with the known "
            "classes, or no labels."
        )
    return items


def check_num_clusters(num_clusters: object, num_texts: int, texts: Iterable[str] | None = None) -> None:
    """K must be an integer with 2 <= K <= the number of texts (of distinct texts, when ``texts`` are given: K
    clusters of copies of fewer texts mean nothing); a clear error naming `num_clusters` otherwise."""
    if isinstance(num_clusters, bool) or not isinstance(num_clusters, (int, np.integer)):
        raise TypeError(f"`num_clusters` must be an integer, got {type(num_clusters).__name__}.")
    if num_clusters < 2:
        raise ValueError(f"`num_clusters` must be at least 2, got {num_clusters}.")
    if num_clusters > num_texts:
        raise ValueError(
            f"`num_clusters` ({num_clusters}) is larger than the number of texts ({num_texts}); "
            "pass more texts or a smaller `num_clusters`."
        )
    if texts is not None:
        distinct = len({" ".join(_visible_words(t)) for t in texts})
        if distinct < num_clusters:
            raise ValueError(
                f"`num_clusters` ({num_clusters}) is larger than the number of distinct texts ({distinct} of "
                f"{num_texts}, ignoring case, spacing and invisible characters); pass more varied texts or "
                "`num_clusters` <= that number."
            )


def _visible_words(text: str) -> list[str]:
    return ["".join(ch for ch in word if unicodedata.category(ch)[0] != "C").casefold() for word in text.split()]


def check_local_path(name_or_path: str, argument_name: str) -> None:
    """A string that can only be a local path (absolute, ``./``, ``../``, ``~``, or with more than one ``/``: a Hub
    id is ``name`` or ``org/name``) must exist; otherwise a FileNotFoundError naming the argument, instead of the
    Hub's "Repo id must be in the form ..."."""
    import os

    path = str(name_or_path)
    looks_local = (
        path.startswith(("/", "./", "../", "~", ".\\")) or path.count("/") > 1 or os.sep in path.replace("/", "")
    )
    # `runs/name` where `runs` is a local folder is a path with a typo, not the Hub id of an org called "runs"
    looks_local = looks_local or (path.count("/") == 1 and os.path.isdir(path.split("/")[0]))
    if looks_local and not os.path.exists(os.path.expanduser(path)):
        raise FileNotFoundError(
            f"`{argument_name}`: no such folder {path!r} (check the path; a Hub id looks like 'org/name')."
        )


def holds_trained_model(folder: str) -> bool:
    """Whether ``folder`` holds a saved hf_textcluster model (a config.json with ``num_clusters`` beside its weights)."""
    import json
    import os

    config = os.path.join(folder, "config.json")
    if not os.path.isfile(config) or not any(
        os.path.isfile(os.path.join(folder, name)) for name in ("model.safetensors", "model.safetensors.index.json")
    ):
        return False
    try:
        with open(config, encoding="utf-8") as f:
            return "num_clusters" in json.load(f)
    except (OSError, ValueError):
        return False


def check_may_replace_model(
    output_dir: str,
    *,
    overwrite: bool,
    argument: str = "--output-dir",
    command: str = "this command",
    source: str | None = None,
) -> None:
    """The one ownership check of every writer (train, recluster, refine, calibrate): a folder holding a trained
    model is replaced only with ``overwrite`` (or when it is ``source``, the model being updated in place); a path that
    is a file is an error. Raises FileExistsError / NotADirectoryError naming the argument and the fix."""
    import os

    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
        raise NotADirectoryError(
            f"{argument} {output_dir} is a file, not a folder: pass a folder (it is created if missing)."
        )
    if overwrite or not holds_trained_model(output_dir):
        return
    if source is not None and os.path.isdir(source) and os.path.samefile(source, output_dir):
        return
    raise FileExistsError(
        f"{argument} {output_dir} already holds a trained model, which {command} would replace. "
        "Pass --overwrite (overwrite=True) to replace it, or choose another folder."
    )


# A token is rarely longer than a few characters: cutting a text at this many characters per token of `max_length`
# changes no tokenization that `max_length` keeps, and spares tokenizing a 50 MB line whole (gigabytes of memory).
MAX_CHARS_PER_TOKEN = 32


def clip_text(text: str, max_length: int) -> str:
    """``text`` cut to ``MAX_CHARS_PER_TOKEN * max_length`` characters before tokenizing (the one place predict,
    train and the pipeline bound the work a single huge text costs); shorter texts are returned unchanged."""
    limit = MAX_CHARS_PER_TOKEN * int(max_length)
    return text if len(text) <= limit else text[:limit]
