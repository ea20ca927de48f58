"""Hyper-parameter recipes per method: ``paper`` (the paper's / authors' values) and ``cpu`` (a 2-core budget).

Each ``<method>.json`` holds, per variant, ``config`` (model config fields), ``training`` (TrainingArguments
fields), ``augmentation`` and per-dataset overrides under ``datasets``. ``training/recipes`` links here.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

RECIPE_DIR = Path(__file__).resolve().parent


def available_recipes() -> dict[str, list[str]]:
    return {
        path.stem: [k for k in json.loads(path.read_text()) if k != "method"] for path in sorted(RECIPE_DIR.glob("*.json"))
    }


def load_recipe(method: str, variant: str = "cpu", dataset: str | None = None) -> dict:
    """The recipe of ``method`` / ``variant`` with the overrides for ``dataset`` merged in."""
    path = RECIPE_DIR / f"{method}.json"
    if not path.is_file():
        raise ValueError(f"No recipe for method {method!r}; recipes exist for {sorted(available_recipes())}.")
    recipes = json.loads(path.read_text())
    if variant not in recipes or variant == "method":
        raise ValueError(f"Method {method!r} has no recipe {variant!r}; choose one of {available_recipes()[method]}.")
    recipe = copy.deepcopy(recipes[variant])
    overrides = recipe.pop("datasets", {}).get(dataset or "", {})
    for section in ("config", "training"):
        recipe.setdefault(section, {}).update(overrides.get(section, {}))
    if "augmentation" in overrides:
        recipe["augmentation"] = overrides["augmentation"]
    return recipe
