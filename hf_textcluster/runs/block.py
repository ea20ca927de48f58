"""A block of a JSON file written beside a model (``training_run.json``'s, :mod:`~hf_textcluster.runs.record`): a
dataclass read from and written to the JSON object of its fields, the blocks nested in it typed as theirs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, fields
from functools import cache
from types import UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

__all__ = ["NULL", "Block"]

NULL = {"null": True}  # a field's metadata: written as null while None, not left out


class Block(Mapping):
    """A block of ``training_run.json``: a dataclass written as the JSON object of its fields (one that defaults to
    None is left out while None, unless its metadata says ``null``) and read back from it, nested blocks typed; it
    reads like that mapping."""

    _what = None  # what an error calls it (default: its class's block)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]):
        """The block of its JSON object.

        Raises:
            ValueError: ``data`` is not an object, lacks a key the block needs or has one it does not have.
        """
        what = cls._what or f"its {cls.__name__} block"
        if not isinstance(data, Mapping):
            raise ValueError(f"holds {type(data).__name__}, not an object of {what}'s fields")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"has keys {what} does not have ({', '.join(map(repr, unknown))})")
        missing = [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING]
        if set(missing) - set(data):
            raise ValueError(f"lacks keys {what} needs ({', '.join(repr(n) for n in missing if n not in data)})")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the block, in its fields' order, nested blocks written as theirs."""
        return {name: _write(value) for name, value in self._written().items()}

    def __post_init__(self):  # a nested block given as its mapping is read into its type
        for name, hint in _hints(type(self)).items():
            object.__setattr__(self, name, _read(hint, getattr(self, name)))

    def __setattr__(self, name: str, value) -> None:  # a block that is not frozen (the record): the same
        object.__setattr__(self, name, _read(_hints(type(self)).get(name), value))

    def _written(self) -> dict[str, Any]:
        nulls = {f.name for f in fields(self) if f.default is not None or f.metadata.get("null")}  # written as null
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return {name: value for name, value in values.items() if value is not None or name in nulls}

    def __getitem__(self, key: str):
        return self._written()[key]

    def __iter__(self):
        return iter(self._written())

    def __len__(self) -> int:
        return len(self._written())


@cache
def _hints(cls) -> dict[str, Any]:
    hints = get_type_hints(cls)
    return {f.name: hints[f.name] for f in fields(cls)}


def _read(hint, value):
    """``value`` (a JSON value) as ``hint`` types it: the blocks in it read into theirs."""
    if value is None or hint is None:
        return value
    if get_origin(hint) in (Union, UnionType):  # X | None
        hint = next(arg for arg in get_args(hint) if arg is not type(None))
    origin, args = get_origin(hint), get_args(hint)
    if isinstance(hint, type) and issubclass(hint, Block):
        return value if isinstance(value, hint) else hint.from_dict(value)
    if origin is tuple:
        return tuple(_read(args[0], item) for item in value)
    if origin is dict and isinstance(args[1], type) and issubclass(args[1], Block):
        return {key: _read(args[1], item) for key, item in value.items()}
    return value


def _write(value):
    if isinstance(value, Block):
        return value.to_dict()
    if isinstance(value, tuple):
        return [_write(item) for item in value]
    if isinstance(value, dict):
        return {key: _write(item) for key, item in value.items()}
    return value
