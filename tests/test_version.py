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
