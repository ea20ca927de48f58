"""The inference code a pushed repository carries, so that ``trust_remote_code=True`` works without this package.

Read from the registry and the package's own files, so it sits with the methods, below the run folder (whose edits
keep a folder's remote code) and the Hub layer (which pushes it): :func:`add_remote_code` writes it into a saved
model's folder.

There is no second copy of the classes: a method's ``configuration_<method>.py`` and ``modeling_<method>.py``, the
shared config / model base / layers / pipeline they import, and nothing else, import only torch, numpy,
transformers and each other. Shipping copies those package files into the repository's flat folder and rewrites
their relative imports (``from ...layers import X`` -> ``from .layers import X``), which is the layout transformers'
dynamic modules load (``auto_map`` names ``modeling_<method>.<Model>``; the files it imports come along).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
from pathlib import Path

from . import get_method

PIPELINE_TASK = "text-clustering"
PIPELINE_MODULE = "hf_textcluster.modeling.pipelines"
PIPELINE_CLASS = "TextClusteringPipeline"
_HEADER = "# `{path}` of hf_textcluster (relative imports flattened), shipped for `trust_remote_code=True`.\n"


def _flat_name(module: str) -> str:
    return module.rsplit(".", 1)[-1]


def _flatten(module: str) -> tuple[str, list[str]]:
    """The source of ``module`` with relative imports pointing at flat sibling files, and the modules it imports."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ImportError(f"Cannot find the source of module {module!r}.")
    path = Path(spec.origin)
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines(keepends=True)
    package = module.rpartition(".")[0]
    imported = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            if not node.module:
                raise ValueError(f"{path}: `from . import ...` cannot be shipped; import from a module instead.")
            target = importlib.util.resolve_name("." * node.level + node.module, package)
            imported.append(target)
            line = lines[node.lineno - 1]
            lines[node.lineno - 1] = re.sub(r"from\s+\.+[\w.]*", f"from .{_flat_name(target)}", line, count=1)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            if any(name and name.split(".")[0] == "hf_textcluster" for name in names):
                raise ValueError(f"{path} imports hf_textcluster absolutely: remote code must not need the package.")
    shown = module.replace(".", "/") + ("/__init__.py" if path.name == "__init__.py" else ".py")
    return _HEADER.format(path=shown) + "".join(lines), imported


def shipped_file_names() -> list[str]:
    """Every file name a push of any method may ship as remote code (each package module's flat name), and
    ``standalone_textcluster.py`` (shipped before the method registry): a re-push deletes these from the repository,
    so no stale code file of an earlier push stays; other files (a ``handler.py`` of the user's) are left alone."""
    root = Path(__file__).resolve().parents[1]
    names = {f"{p.parent.name if p.name == '__init__.py' else p.stem}.py" for p in root.rglob("*.py")}
    return sorted(names | {"standalone_textcluster.py"})


def remote_code_files(model_type: str) -> dict[str, str]:
    """File name -> source of the inference code of method ``model_type``: its configuration and modeling files,
    the pipeline, and every package module they import (recursively)."""
    method = get_method(model_type)
    queue = [method.config_class.__module__, method.model_class.__module__, PIPELINE_MODULE]
    files: dict[str, str] = {}
    origin: dict[str, str] = {}
    while queue:
        module = queue.pop(0)
        name = f"{_flat_name(module)}.py"
        if name in files:
            if origin[name] != module:
                raise ValueError(f"Two shipped modules share the file name {name}: {origin[name]} and {module}.")
            continue
        files[name], imported = _flatten(module)
        origin[name] = module
        queue.extend(imported)
    return dict(sorted(files.items()))


def auto_map(model_type: str) -> dict:
    """``config.json`` entries that point transformers at the shipped classes and pipeline."""
    method = get_method(model_type)
    return {
        "auto_map": {
            "AutoConfig": f"{_flat_name(method.config_class.__module__)}.{method.config_class.__name__}",
            "AutoModel": f"{_flat_name(method.model_class.__module__)}.{method.model_class.__name__}",
        },
        "custom_pipelines": {
            PIPELINE_TASK: {
                "impl": f"{_flat_name(PIPELINE_MODULE)}.{PIPELINE_CLASS}",
                "pt": ["AutoModel"],
                "tf": [],
                "type": "text",
            }
        },
    }


def add_remote_code(directory: str | Path, model_type: str) -> list[str]:
    """Write the method's inference code into a saved model ``directory`` and point ``config.json``'s ``auto_map``
    and ``custom_pipelines`` at it. Returns the file names added."""
    directory = Path(directory)
    files = remote_code_files(model_type)
    for name, source in files.items():
        (directory / name).write_text(source, encoding="utf-8")
    config_path = directory / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config.update(auto_map(model_type))
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return list(files)


def model_file(model_type: str) -> str:
    """The shipped file that defines the method's model class (what ``auto_map`` names)."""
    return f"{_flat_name(get_method(model_type).model_class.__module__)}.py"
