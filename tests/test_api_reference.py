"""The API reference's griffe extension (docs/_hooks/griffe_docstrings.py): docstring types render as types and
config fields show their defaults, as mkdocstrings will render them."""

from __future__ import annotations

from pathlib import Path

import pytest

griffe = pytest.importorskip("griffe")

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_config_fields_get_their_types_and_defaults():
    extension = griffe.load_extensions(str(REPO_ROOT / "docs" / "_hooks" / "griffe_docstrings.py"))
    package = griffe.load(
        "hf_textcluster.models.sccl.configuration_sccl",
        search_paths=[str(REPO_ROOT)],
        extensions=extension,
        docstring_parser="google",
    )
    config = package["SCCLConfig"]
    parameters = {
        p.name: p
        for section in config.docstring.parsed
        if section.kind is griffe.DocstringSectionKind.parameters
        for p in section.value
    }
    assert parameters["alpha"].annotation == "float" and parameters["alpha"].default == "1.0"
    assert parameters["eta"].default == "10.0"
