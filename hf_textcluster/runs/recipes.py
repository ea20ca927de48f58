"""Hyper-parameter recipes per method: ``paper`` (the paper's / authors' values) and ``cpu`` (a 2-core budget).

Each method folder's ``recipes.json`` holds, per variant, ``config`` (model config fields), ``training``
(TrainingArguments fields), ``augmentation`` and per-dataset overrides under ``datasets``. Precision is never set by
a recipe: it follows the hardware (see :mod:`hf_textcluster.modeling.precision`).
"""

from __future__ import annotations

import copy
import json

from ..models import get_method


def load_recipe(method: str, variant: str = "cpu", dataset: str | None = None) -> dict:
    """The recipe of ``method`` / ``variant`` with the overrides for ``dataset`` merged in."""
    recipes = json.loads(get_method(method).recipe_file.read_text())
    if variant not in recipes or variant == "method":
        choices = [k for k in recipes if k != "method"]
        raise ValueError(f"Method {method!r} has no recipe {variant!r}; choose one of {choices}.")
    recipe = copy.deepcopy(recipes[variant])
    overrides = recipe.pop("datasets", {}).get(dataset or "", {})
    for section in ("config", "training"):
        recipe.setdefault(section, {}).update(overrides.get(section, {}))
    if "augmentation" in overrides:
        recipe["augmentation"] = overrides["augmentation"]
    return recipe
