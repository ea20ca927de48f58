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


def card_fields(config) -> tuple[dict[str, str], list[str]]:
    """What the model card of ``config``'s method says that depends on the config beyond its raw hyper-parameters
    (:attr:`ClusteringMethod.card_fields`): the values of its fragment's ``$fields`` and Limitations lines; none for
    a method without any, or a model type no method names."""
    method = METHODS.get(config.model_type)
    return method.card_fields(config) if method and method.card_fields else ({}, [])


__all__ = ["METHODS", "ClusteringMethod", "card_fields", "get_method"]
