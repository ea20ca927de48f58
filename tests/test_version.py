"""The version is written once, in hf_textcluster/_version.py; pyproject.toml reads it from there."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import hf_textcluster

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_the_version_has_one_source():
    project = tomllib.loads(PYPROJECT.read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    module, _, name = project["tool"]["setuptools"]["dynamic"]["version"]["attr"].rpartition(".")
    assert getattr(importlib.import_module(module), name) == hf_textcluster.__version__


def test_every_package_data_pattern_matches_a_file():
    """What pyproject.toml ships beside the code is there: ``py.typed`` (the package is typed), the card templates,
    each method's card fragment and recipes."""
    patterns = tomllib.loads(PYPROJECT.read_text())["tool"]["setuptools"]["package-data"]["hf_textcluster"]
    package = Path(hf_textcluster.__file__).parent
    assert "py.typed" in patterns
    for pattern in patterns:
        assert list(package.glob(pattern)), f"package-data {pattern!r} matches no file in {package}"
