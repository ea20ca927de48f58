"""The package's layers: every import between two of its folders points down (see docs/architecture.md).

Every module is parsed, and every import of the package is checked, including those inside functions (an import
in a function is still an arrow, it only arrives later).
"""

from __future__ import annotations

import ast
import importlib.util
import io
import tokenize
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hf_textcluster"

# Rank of each layer (a top-level folder or module of the package): a module may import its own layer and any layer
# of a lower rank, never one of its own rank or higher. Keep in step with docs/architecture.md.
RANKS = {
    "__init__": 10,  # the public facade: lazy exports of every layer
    "__main__": 10,
    "cli": 9,
    "apps": 8,
    "hub": 7,
    "runs": 6,
    "choosing": 5,
    "models": 4,
    "training": 3,
    "figures": 3,  # plotly figures and 2-D projections from plain arrays: the report's and Clusterer.visualize_*'s
    "editing": 2,  # package-only: k-means and what sets or changes a model's clusters (merge, split, update)
    "evaluation": 1,
    "data": 1,
    "representation": 1,
    "encoders": 1,
    "distributed": 1,
    "reuse": 1,  # results computed once within a scope (an encoding pass, a k-means fit)
    "modeling": 0,
    "cache": 0,
    "timing": 0,  # named phases of a run, timed: imports nothing of the package
    "markup": 0,  # escaping for markdown and HTML: imports nothing of the package
    "_version": 0,
}
# Upward arrows that exist today, each with why and how it goes away. A test below fails once one is no longer used,
# so that this list only shrinks.
KNOWN_UPWARD: dict[tuple[str, str], str] = {}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _modules(root: Path = PACKAGE, prefix: str = "hf_textcluster"):
    for path in sorted(root.rglob("*.py")):
        parts = [*prefix.split("."), *path.relative_to(root).with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        module = ".".join(parts)
        yield path, module, module if is_package else module.rpartition(".")[0]


def _imports(path: Path, package: str, prefix: str = "hf_textcluster"):
    """(line, imported module) for every import of the package ``prefix`` in the file, at any depth."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = importlib.util.resolve_name("." * node.level + base, package)
            # `from . import x` / `from hf_textcluster import hub`: the names may be modules of their own
            names = (
                [base] + [f"{base}.{alias.name}" for alias in node.names]
                if not node.module or not node.level
                else [base]
            )
        elif isinstance(node, ast.Call) and _dynamic_import_target(node) is not None:
            names = [_dynamic_import_target(node)]  # `importlib.import_module("hf_textcluster.hub")`: an arrow too
        else:
            continue
        for name in names:
            if name == prefix or name.startswith(f"{prefix}."):
                yield node.lineno, name


def _dynamic_import_target(call: ast.Call) -> str | None:
    """The module an ``import_module(...)`` / ``__import__(...)`` call names by a literal string, or the literal part
    before the first placeholder of an f-string (``f"hf_textcluster.{name}"``: the package, which no layer below
    the facade may reach); None for any other call."""
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
    if name not in ("import_module", "__import__") or not call.args:
        return None
    first = call.args[0]
    if isinstance(first, ast.JoinedStr):
        first = first.values[0] if first.values else None
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value.rstrip(".")
    return None


def _arrows():
    """(where, source layer, target layer, imported name) for every import that crosses two layers."""
    for path, module, package in _modules():
        for line, target in _imports(path, package):
            target_layer = _layer(target)
            if target_layer not in RANKS:  # `from hf_textcluster import Name`: the facade, counted through its base
                continue
            if target_layer != _layer(module):
                yield f"{module}:{line}", _layer(module), target_layer, target


def test_every_layer_has_a_rank():
    layers = {_layer(module) for _, module, _ in _modules()}
    assert layers <= set(RANKS), (
        f"give these new folders a rank here and in docs/architecture.md: {layers - set(RANKS)}"
    )


def test_no_import_points_up():
    upward = [
        f"{where} ({source} -> {target}): imports {name}"
        for where, source, target, name in _arrows()
        if RANKS[target] >= RANKS[source] and (source, target) not in KNOWN_UPWARD
    ]
    assert upward == [], "imports against the layers (see docs/architecture.md):\n" + "\n".join(upward)


@pytest.mark.parametrize("pair", sorted(KNOWN_UPWARD))
def test_each_known_upward_arrow_is_still_there(pair):
    used = {(source, target) for _, source, target, _ in _arrows()}
    assert pair in used, f"{pair[0]} -> {pair[1]} is gone: delete it from KNOWN_UPWARD"


def test_modeling_imports_nothing_else_of_the_package():
    """modeling/ is what remote code ships: it must stand alone."""
    outside = [f"{where}: imports {name}" for where, source, target, name in _arrows() if source == "modeling"]
    assert outside == []


def test_the_checker_sees_function_level_imports(tmp_path):
    source = tmp_path / "probe.py"
    source.write_text("def f():\n    from ..hub import push\n", encoding="utf-8")
    assert list(_imports(source, "hf_textcluster.modeling")) == [(2, "hf_textcluster.hub")]


def test_the_checker_sees_imports_by_name(tmp_path):
    """A module reached through ``importlib`` is an arrow like any import: ``modeling/`` reaching the package by
    dotted path would be an upward arrow the shipped code cannot follow."""
    source = tmp_path / "probe.py"
    source.write_text(
        "import importlib\n"
        "def f(name):\n"
        "    importlib.import_module('hf_textcluster.hub.push').save_pretrained\n"
        "    return importlib.import_module(f'hf_textcluster.{name}'), importlib.import_module(name)\n",
        encoding="utf-8",
    )
    assert list(_imports(source, "hf_textcluster.modeling")) == [(3, "hf_textcluster.hub.push"), (4, "hf_textcluster")]
    arrows = [(source, target) for _, source, target, _ in _arrows() if source == "modeling"]
    assert arrows == []


MAX_MODULE_LINES = 450


def test_no_module_is_over_the_line_cap():
    """A module past the cap holds more than one job: split it along its seams into modules named for what they hold."""
    long = {
        path.relative_to(PACKAGE.parent).as_posix(): lines
        for path, _, _ in _modules()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, f"modules over {MAX_MODULE_LINES} lines: {long}"


# Lines of code in the package, docstrings, comments and blank lines not counted. The cap only goes down: a change that
# adds code removes as much elsewhere, or lowers nothing and says why in review.
MAX_CODE_LINES = 15_128


def _code_lines(source: str) -> int:
    """Lines that hold a token of code: docstrings (a module's, class's or function's first string), comments and
    blank lines are not counted; a statement over three lines counts three."""
    tree = ast.parse(source)
    docstrings: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                docstrings.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    lines = {
        line
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type not in skip
        for line in range(token.start[0], token.end[0] + 1)
    }
    return len(lines - docstrings)


def test_code_lines_leave_out_docstrings_comments_and_blank_lines():
    source = 'def f(x):\n    """Doc.\n\n    More.\n    """\n    # why\n\n    return (\n        x + 1\n    )\n'
    assert _code_lines(source) == 4  # def, return (, x + 1, )


def test_the_package_code_is_at_most_the_cap():
    total = sum(_code_lines(path.read_text(encoding="utf-8")) for path, _, _ in _modules())
    assert total <= MAX_CODE_LINES, f"{total} lines of code; the cap is {MAX_CODE_LINES}"


def _runtime_imports(path: Path, package: str, modules: set[str], prefix: str = "hf_textcluster"):
    """The modules of ``modules`` the file imports when it runs: :func:`_imports` without TYPE_CHECKING blocks, each
    name cut to the module that defines it (``from . import name`` of a submodule is that submodule, and the package
    only when it also imports a name of the package itself)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        node.lineno
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for node in ast.walk(block)
        if hasattr(node, "lineno")
    }
    by_line: dict[int, list[str]] = {}
    for line, name in _imports(path, package, prefix):
        if line not in typing_only:
            by_line.setdefault(line, []).append(name)
    for names in by_line.values():
        submodules = [n for n in names if n in modules and any(n.startswith(f"{m}.") for m in names if m != n)]
        for name in submodules or names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != prefix:
                yield name


def _cycles(root: Path, prefix: str) -> list[str]:
    """Every import cycle among the modules under ``root`` (the package ``prefix``), function-level imports included."""
    found = list(_modules(root, prefix))
    modules = {module for _, module, _ in found}
    graph = {
        module: set(_runtime_imports(path, package, modules, prefix)) - {module} for path, module, package in found
    }
    seen, cycles = set(), []
    for start in graph:
        stack, path_to = [(start, iter(graph[start]))], {start: [start]}
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                continue
            if child == start:
                cycles.append(" -> ".join([*path_to[node], start]))
            elif child not in path_to and child not in seen and child in graph:
                path_to[child] = [*path_to[node], child]
                stack.append((child, iter(graph[child])))
        seen.add(start)
    return cycles


# The modules that may call the all-or-nothing save of a folder: the one writer of a model folder, and the Hub layer's
# staging (a model with its remote code and card). The shipped save_pretrained reaches it through `folder_writer`.
FOLDER_WRITERS = {"hf_textcluster.runs.saving", "hf_textcluster.hub.push"}


def test_a_model_folder_has_one_writer():
    """``save_folder`` is called from the owner of a model folder (``runs/saving.py``) and the Hub layer's staging
    only, and the names of the files beside a model are defined in the owner only."""
    callers, names = set(), {}
    for path, module, _ in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) == "save_folder"
            ):
                callers.add(module)
        for node in tree.body:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and module.startswith("hf_textcluster.runs")
            ):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id.endswith(("_FILE", "_FOLDER", "_DIR")):
                        names[target.id] = module
    assert callers <= FOLDER_WRITERS, f"save_folder called outside the owner: {sorted(callers - FOLDER_WRITERS)}"
    assert "hf_textcluster.runs.saving" in callers
    assert set(names.values()) == {"hf_textcluster.runs.saving"}, names


def test_no_two_modules_import_each_other_even_through_others():
    """An import cycle (also through function-level imports) means two modules share one job or point both ways."""
    assert _cycles(PACKAGE, "hf_textcluster") == [], "import cycles"


BENCH = PACKAGE.parent / "training" / "bench"


def test_the_benchmark_has_no_import_cycle_and_no_module_over_the_line_cap(tmp_path):
    """The benchmark is held to the package's shape: acyclic, and no module over the cap."""
    assert _cycles(BENCH, "training.bench") == [], "import cycles"
    long = {
        p.name: n
        for p in BENCH.glob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, f"modules over {MAX_MODULE_LINES} lines: {long}"
    # the checker sees a cycle closed by a function-level import
    fake = tmp_path / "training" / "bench"
    fake.mkdir(parents=True)
    (fake / "a.py").write_text("from . import b\n")
    (fake / "b.py").write_text("def f():\n    from .a import x\n")
    assert _cycles(fake, "training.bench")
