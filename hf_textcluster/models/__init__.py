"""The clustering methods, one folder each. Adding a method = its folder + one name in ``METHOD_FOLDERS``."""

from __future__ import annotations

import importlib

from .registry import ClusteringMethod

METHOD_FOLDERS = ("sccl", "decmlm", "deccrl", "aecl", "clusterbert")

METHODS: dict[str, ClusteringMethod] = {}
for _folder in METHOD_FOLDERS:
    _method = importlib.import_module(f"{__name__}.{_folder}").METHOD
    METHODS[_method.name] = _method


def get_method(name: str) -> ClusteringMethod:
    """The registered method ``name``, or a clear error listing the choices."""
    if name not in METHODS:
        raise ValueError(f"Unknown method {name!r}; choose one of {', '.join(METHODS)}.")
    return METHODS[name]


__all__ = ["METHODS", "ClusteringMethod", "get_method"]
