"""Saved files are readable as the user's umask allows (another account of a shared machine may load the model)."""

from __future__ import annotations

import os
import stat
import sys

import pytest

from hf_textcluster.modeling.serialization import apply_umask, current_umask

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")


@pytest.fixture()
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def _modes(folder):
    return {
        os.path.relpath(os.path.join(root, name), folder): stat.S_IMODE(os.stat(os.path.join(root, name)).st_mode)
        for root, folders, files in os.walk(folder)
        for name in files + folders
    }


def test_a_saved_model_is_readable_by_others_under_umask_022(toy_model, tmp_path, umask_022):
    toy_model.save_pretrained(tmp_path / "model")
    modes = _modes(tmp_path / "model")
    assert modes["model.safetensors"] == 0o644, oct(modes["model.safetensors"])
    assert all(mode & 0o044 == 0o044 for mode in modes.values()), {k: oct(v) for k, v in modes.items()}


def test_a_stricter_umask_is_kept(toy_model, tmp_path):
    old = os.umask(0o077)
    try:
        toy_model.save_pretrained(tmp_path / "model")
    finally:
        os.umask(old)
    assert _modes(tmp_path / "model")["model.safetensors"] == 0o600


def test_apply_umask_sets_files_and_folders(tmp_path, umask_022):
    (tmp_path / "sub").mkdir(mode=0o700)
    (tmp_path / "sub" / "f").write_text("x")
    os.chmod(tmp_path / "sub" / "f", 0o600)
    assert current_umask() == 0o022
    apply_umask(str(tmp_path))
    assert _modes(tmp_path) == {"sub": 0o755, os.path.join("sub", "f"): 0o644}
