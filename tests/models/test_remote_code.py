"""What ``trust_remote_code`` loads: the serving core (``hf_textcluster/modeling/``) and the method's two files, small
and closed. Editing, k-means, the reuse cache and training stay in the package (``hf_textcluster.editing`` and above).
"""

from __future__ import annotations

import ast

import pytest

from hf_textcluster.models import METHODS, get_method
from hf_textcluster.models.remote_code import remote_code_files

METHOD_NAMES = sorted(METHODS)
# Lines shipped per method, all files together (docstrings included: code is moved out, never stripped), at most
# 1,500; docs/architecture.md ("What remote code ships") says what is shipped. The cap only goes down.
MAX_REMOTE_CODE_LINES = 1_500
# Third-party modules the shipped files may import (transformers' dynamic modules check the installed ones).
ALLOWED = {"__future__", "torch", "numpy", "transformers", "huggingface_hub", "tqdm", "safetensors"}


def _shipped_lines(method: str) -> dict[str, int]:
    return {name: len(source.splitlines()) for name, source in remote_code_files(method).items()}


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_the_shipped_code_is_at_most_the_cap(method):
    lines = _shipped_lines(method)
    assert sum(lines.values()) <= MAX_REMOTE_CODE_LINES, (sum(lines.values()), lines)


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_the_shipped_files_import_nothing_outside_the_shipped_set(method):
    files = remote_code_files(method)
    stdlib = set(__import__("sys").stdlib_module_names)
    for name, source in files.items():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.level == 1 and f"{node.module}.py" in files, (name, node.module)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                modules = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                for module in modules:
                    top = module.split(".")[0]
                    assert top in ALLOWED or top in stdlib, (name, module)
            elif isinstance(node, ast.Call):  # nor a module reached by name (`importlib.import_module("...")`)
                called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                assert called not in ("import_module", "__import__"), (name, node.lineno)


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_no_editing_or_training_code_ships(method):
    """Merge, split, online update, k-means and the reuse cache are package-only; no mixin is shipped either."""
    files = remote_code_files(method)
    assert not {"kmeans.py", "reuse.py", "rows.py", "curation.py", "clusters.py"} & set(files)
    model_class = get_method(method).model_class
    edits = ("merge_clusters", "split_cluster", "update", "start_online", "initialize_clusters", "set_refined_head")
    assert [name for name in edits if hasattr(model_class, name)] == []
    ours = [c.__name__ for c in model_class.__mro__ if c.__module__.startswith("hf_textcluster")]
    assert ours == [model_class.__name__, "TextClusteringPreTrainedModel"], ours
