"""Checks of the package's own arguments that a served model never needs: the names of the partitions a model can
serve (:func:`check_serve`), labels with holes (:func:`missing_labels`, :func:`validate_labels`) and K: as a user
gives it (:func:`parse_num_clusters`) and against the texts (:func:`check_num_clusters`).

Package-only: no shipped module imports this one, so it is not part of a pushed repository's remote code (the checks
serving needs are :mod:`~hf_textcluster.modeling.validation`).
"""

from __future__ import annotations

import numbers
import unicodedata
from collections.abc import Iterable
from typing import Any

import numpy as np

from .validation import Options, check_scalar, is_blank, validate_parameters

# The partitions a trained model can serve (its config's `served_partition`; hf_textcluster.choosing.serving chooses
# among them): its head, k-means and UMAP k-means on its embeddings, each also refined.
BASE_CANDIDATES = ("head", "kmeans", "umap_kmeans")
REFINED_SUFFIX = "+refined"
CANDIDATES = (*BASE_CANDIDATES, *(f"{name}{REFINED_SUFFIX}" for name in BASE_CANDIDATES))
SERVE_CHOICES = ("auto", *CANDIDATES)


def check_serve(value: str, argument_name: str = "serve") -> str:
    """``value`` if it names a servable partition or ``"auto"``, else one clear error."""
    validate_parameters({argument_name: value}, {argument_name: Options(*SERVE_CHOICES)})
    return value


# A text without a known class (the `datasets` ClassLabel convention): clustered like any other, left out of scoring.
MISSING_LABEL = -1


def missing_labels(labels: Any, *, encoded: bool = True) -> Any:
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
        if value is None or (
            isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral) and value != value
        ):
            return True
        if isinstance(value, str):
            return is_blank(value)
        return encoded and not isinstance(value, bool) and isinstance(value, numbers.Integral) and value == -1

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


def parse_num_clusters(value: Any, auto: bool = True) -> int | str:
    """K as a user gives it, to the library (``num_clusters``) or on the command line (``--num-clusters``): a whole
    number >= 2 (or its text), or with ``auto`` the text ``"auto"`` (any case: chosen from the embeddings). The one
    parse of K; a clear error naming `num_clusters` and the fix otherwise."""
    or_auto = " or 'auto'" if auto else ""
    if isinstance(value, str):
        text = value.strip().lower()
        if auto and text == "auto":
            return "auto"
        if not text.lstrip("+-").isdigit():
            raise ValueError(f"`num_clusters` must be a whole number of clusters{or_auto}, got {value!r}.")
        value = int(text)
    fix = "one cluster groups nothing: pass 2 or more" + (", or 'auto' to choose K" if auto else "")
    return int(check_scalar(value, "num_clusters", numbers.Integral, min_val=2, hint=fix, type_error=TypeError))


def check_num_clusters(num_clusters: Any, num_texts: int, texts: Iterable[str] | None = None) -> None:
    """K (:func:`parse_num_clusters`, a number) must be at most the number of texts (of distinct texts, when ``texts``
    are given: K clusters of copies of fewer texts mean nothing); a clear error naming `num_clusters` otherwise."""
    num_clusters = parse_num_clusters(num_clusters, auto=False)
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
