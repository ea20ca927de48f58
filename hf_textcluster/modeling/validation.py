"""The input checks shared by every entry point and serving: texts, a parameter table (scikit-learn's
``_parameter_constraints``), a number and a folder argument. The package's own are ``input_checks``."""

from __future__ import annotations

import numbers
import os
import unicodedata
from collections.abc import Iterable
from typing import Any


def _shorten(value: object, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


_BOUNDARIES = ("both", "left", "right", "neither")


class Interval:
    """Numbers of ``type`` from ``left`` to ``right`` (None: no bound; ``closed``: which bounds are allowed), as
    scikit-learn's ``Interval``. A bool is never a number."""

    def __init__(self, type: type | tuple[type, ...], left=None, right=None, *, closed: str = "both"):
        if closed not in _BOUNDARIES:
            raise ValueError(f"`closed` must be one of {', '.join(_BOUNDARIES)}, got {closed!r}.")
        self.types = type if isinstance(type, tuple) else (type,)
        self.left, self.right = left, right
        self.low_ok, self.high_ok = closed in ("both", "left"), closed in ("both", "right")

    def is_satisfied_by(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, self.types):
            return False
        low, high = self.left, self.right  # compared so that NaN is out of any bounds
        return (low is None or (value >= low if self.low_ok else value > low)) and (
            high is None or (value <= high if self.high_ok else value < high)
        )

    def __str__(self) -> str:
        kind = "an integer" if all(issubclass(t, numbers.Integral) for t in self.types) else "a number"
        low, high = self.left, self.right
        if kind == "an integer" and low == 1 and self.low_ok and high is None:
            return "a positive integer"
        if low is not None and high is not None:
            return f"{kind} in {'[' if self.low_ok else '('}{low}, {high}{']' if self.high_ok else ')'}"
        if low is not None:
            return f"{kind} {'>=' if self.low_ok else '>'} {low}"
        return f"{kind} {'<=' if self.high_ok else '<'} {high}" if high is not None else kind


class Options:
    """One of the given values (scikit-learn's ``StrOptions``, for any values but bools)."""

    def __init__(self, *options: Any):
        self.options = options

    def is_satisfied_by(self, value: Any) -> bool:
        return not isinstance(value, bool) and any(isinstance(value, type(o)) and value == o for o in self.options)

    def __str__(self) -> str:
        names = ", ".join(map(str, self.options))
        return names if len(self.options) == 1 else f"one of {names}"


def _as_list(constraints) -> list:
    return constraints if isinstance(constraints, list) else [constraints]


def describe(constraints, *, none: bool = True) -> str:
    """What ``constraints`` allow, in words, for messages and ``--help`` (``none=False``: a command line has none)."""
    return " or ".join("None" if c is None else str(c) for c in _as_list(constraints) if none or c is not None)


def validate_parameters(params: Any, constraints: dict, owner: str | None = None) -> None:
    """Check ``params`` (attributes or a dict's items) against a table of name -> :class:`Interval`, :class:`Options`,
    ``None`` or a list of them (any one suffices): a one-line ValueError names the first one out, after ``owner``."""
    values = params if isinstance(params, dict) else {name: getattr(params, name) for name in constraints}
    for name, allowed in constraints.items():
        value = values.get(name)
        if name in values and not any(c.is_satisfied_by(value) if c else value is None for c in _as_list(allowed)):
            prefix = f"{owner}: " if owner else ""
            raise ValueError(f"{prefix}`{name}` must be {describe(allowed)}, got {_shorten(value)}.")


def check_scalar(
    value: Any,
    name: str,
    target_type: type | tuple[type, ...],
    *,
    min_val: float | None = None,
    max_val: float | None = None,
    include_boundaries: str = "both",
    allow_none: bool = False,
    hint: str | None = None,
    type_error: type[Exception] = ValueError,
):
    """``value`` if it is in its :class:`Interval` (or None with ``allow_none``); else, as scikit-learn's
    ``check_scalar``, one message naming the argument, what it must be (``hint``: why) and the value. The wrong type
    raises ``type_error`` (ValueError by default, as every entry point answers a bad value)."""
    if include_boundaries not in _BOUNDARIES:
        raise ValueError(f"`include_boundaries` must be one of {_BOUNDARIES}, got {include_boundaries!r}.")
    interval = Interval(target_type, min_val, max_val, closed=include_boundaries)
    if (value is None and allow_none) or interval.is_satisfied_by(value):
        return value
    reason = f" ({hint})" if hint else ""
    none = " or None" if allow_none else ""
    error = type_error if isinstance(value, bool) or not isinstance(value, interval.types) else ValueError
    raise error(f"`{name}` must be {interval}{none}{reason}, got {value!r}.")


def validate_texts(texts: object, argument_name: str = "texts") -> list[str]:
    """``texts`` (any iterable of strings: a list, a numpy array, a ``datasets`` column, a generator) as a
    ``list[str]``, unchanged; a TypeError (None, a single string, a non-``str`` item) or ValueError (empty, a blank
    item) naming the first bad index otherwise."""
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
            missing = item is None or (isinstance(item, float) and item != item)
            hint = " Drop the missing values first." if missing else " Convert the items to str first."
            raise TypeError(
                f"`{argument_name}` must contain only strings, but item {index} is "
                f"{type(item).__name__} ({_shorten(item)}).{hint}"
            )

    blank = [index for index, item in enumerate(items) if is_blank(item)]
    if blank:
        first = blank[0]
        more = f" ({len(blank)} blank items in total, e.g. at indices {blank[:5]})" if len(blank) > 1 else ""
        raise ValueError(
            f"`{argument_name}` item {first} is empty or only whitespace / invisible characters ({items[first]!r})"
            f"{more}. Remove blank texts before clustering: they carry no content to cluster."
        )
    return items


def is_blank(text: str) -> bool:
    """Whether ``text`` is empty or only whitespace and invisible characters (zero-width spaces, BOMs, ...)."""
    return all(unicodedata.category(ch)[0] in "CZ" for ch in text)  # whitespace, control and format characters


def check_local_path(name_or_path: str, argument_name: str) -> None:
    """A string that can only be a local path (absolute, ``./``, ``../``, ``~``, or with more than one ``/``: a Hub
    id is ``name`` or ``org/name``) must exist; otherwise a FileNotFoundError naming the argument, instead of the
    Hub's "Repo id must be in the form ..."."""
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


# Cutting at this many characters per token of `max_length` changes no tokenization `max_length` keeps, and spares
# tokenizing a 50 MB line whole (gigabytes of memory).
MAX_CHARS_PER_TOKEN = 32


def clip_text(text: str, max_length: int) -> str:
    """``text`` cut to ``MAX_CHARS_PER_TOKEN * max_length`` characters before tokenizing."""
    limit = MAX_CHARS_PER_TOKEN * int(max_length)
    return text if len(text) <= limit else text[:limit]
