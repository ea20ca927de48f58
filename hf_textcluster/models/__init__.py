"""The clustering methods, one folder each. Adding a method = its folder + one name in ``METHOD_FOLDERS``."""

from __future__ import annotations

import importlib

from .registry import ClusteringMethod

METHOD_FOLDERS = ("sccl", "decmlm", "deccrl", "aecl", "clusterbert")

_DECLARED = [importlib.import_module(f"{__name__}.{folder}").METHOD for folder in METHOD_FOLDERS]
METHODS: dict[str, ClusteringMethod] = {method.name: method for method in _DECLARED}


def get_method(name: str) -> ClusteringMethod:
    """The registered method ``name``, or a clear error listing the choices."""
    if name not in METHODS:
        raise ValueError(f"Unknown method {name!r}; choose one of {', '.join(METHODS)}.")
    return METHODS[name]


__all__ = ["METHODS", "ClusteringMethod", "get_method"]
