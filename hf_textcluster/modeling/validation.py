"""Input checks shared by every entry point that accepts texts.

One function, :func:`validate_texts`, so that a bad argument gets the same clear message whether it reaches
the library through :func:`~hf_textcluster.data.load_texts`, a file loader, an augmenter or a model.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

import numpy as np

__all__ = ["check_local_path", "check_num_clusters", "validate_texts"]


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


def _visible(text: str) -> str:
    """``text`` without whitespace, control and format characters (zero-width spaces, BOMs, ...)."""
    return "".join(ch for ch in text if unicodedata.category(ch)[0] not in "CZ")


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and value != value


def validate_labels(labels: object, num_texts: int, argument_name: str = "labels") -> list:
    """Check that ``labels`` is a sequence with one entry per text (used by the loaders)."""
    if isinstance(labels, (str, bytes)) or not isinstance(labels, Iterable):
        raise TypeError(f"`{argument_name}` must be a list with one label per text, got {type(labels).__name__}.")
    items = list(labels)
    if len(items) != num_texts:
        raise ValueError(
            f"`{argument_name}` has {len(items)} entries but there are {num_texts} texts; pass one label per text."
        )
    bad = [i for i, label in enumerate(items) if label is None or _is_nan(label)]
    if bad:
        raise ValueError(
            f"`{argument_name}` item {bad[0]} is missing ({items[bad[0]]!r}). Every text needs a label, "
            "or pass labels=None."
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


# A token is rarely longer than a few characters: cutting a text at this many characters per token of `max_length`
# changes no tokenization that `max_length` keeps, and spares tokenizing a 50 MB line whole (gigabytes of memory).
MAX_CHARS_PER_TOKEN = 32


def clip_text(text: str, max_length: int) -> str:
    """``text`` cut to ``MAX_CHARS_PER_TOKEN * max_length`` characters before tokenizing (the one place predict,
    train and the pipeline bound the work a single huge text costs); shorter texts are returned unchanged."""
    limit = MAX_CHARS_PER_TOKEN * int(max_length)
    return text if len(text) <= limit else text[:limit]
