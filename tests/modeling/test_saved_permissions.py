"""A saved model is readable as the user's umask allows (safetensors alone writes its files 0600), so another account
on a shared machine can load it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from transformers import AutoModel

import hf_textcluster  # noqa: F401

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "saved_models"


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_saved_files_have_the_umask_permissions(tmp_path, umask):
    model = AutoModel.from_pretrained(FIXTURES / "sccl")
    old = os.umask(umask)
    try:
        model.save_pretrained(tmp_path / "saved")
    finally:
        os.umask(old)
    files = [p for p in (tmp_path / "saved").rglob("*") if p.is_file()]
    assert any(p.name == "model.safetensors" for p in files)
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask, path.name
