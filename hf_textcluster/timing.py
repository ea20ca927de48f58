"""Where a run's time goes: named phases, timed into the record of the enclosing :func:`recording_phases` block.

``train`` records its phases in ``training_run.json`` (``"seconds"``); outside such a block :func:`phase` costs
nothing. A phase inside another is named ``outer/inner``; a phase entered twice adds up.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_RECORD: ContextVar[dict[str, float] | None] = ContextVar("hf_textcluster_phases", default=None)
_PREFIX: ContextVar[str] = ContextVar("hf_textcluster_phase_prefix", default="")


@contextmanager
def recording_phases() -> Iterator[dict[str, float]]:
    """Collect the seconds of every :func:`phase` run inside the block into the dict it yields (inside another
    such block: that block's dict, the phases named under the enclosing phase).

    Example:
        >>> with recording_phases() as seconds:
        ...     with phase("outer"):
        ...         with phase("inner"):
        ...             pass
        >>> sorted(seconds)
        ['outer', 'outer/inner']
    """
    active = _RECORD.get()
    if active is not None:  # a run inside another (a signal of ``auto``): its phases are the outer run's
        yield active
        return
    record: dict[str, float] = {}
    record_token, prefix_token = _RECORD.set(record), _PREFIX.set("")
    try:
        yield record
    finally:
        _PREFIX.reset(prefix_token)
        _RECORD.reset(record_token)


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Time the block as ``name`` (under the enclosing phase's name) when phases are being recorded."""
    record = _RECORD.get()
    if record is None:
        yield
        return
    token = _PREFIX.set(_PREFIX.get() + name + "/")
    start = time.perf_counter()
    try:
        yield
    finally:
        _PREFIX.reset(token)
        add_seconds(name, time.perf_counter() - start)


def own_phases(record: dict[str, float]) -> dict[str, float]:
    """The phases of ``record`` under the enclosing phase, with its name cut off: a nested run's own seconds."""
    prefix = _PREFIX.get()
    return {name[len(prefix) :]: value for name, value in record.items() if name.startswith(prefix)}


def add_seconds(name: str, seconds: float) -> None:
    """Add ``seconds`` to the phase ``name`` (under the enclosing phase) when phases are being recorded: for a span
    that starts in one callback and ends in another."""
    record = _RECORD.get()
    if record is not None:
        full = _PREFIX.get() + name
        record[full] = round(record.get(full, 0.0) + seconds, 3)
