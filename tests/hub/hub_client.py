"""Running client code in a fresh Python process pointed at a Hub endpoint (see conftest.py for why)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

CLIENT_TIMEOUT = 300
RESULT_MARKER = "@@RESULT@@"

# Runs first in every client: the payload from the test, `emit` to answer, `error_of` to capture an exception.
CLIENT_PRELUDE = (
    """
import json, sys, warnings
PAYLOAD = json.loads(sys.stdin.read() or "{}")
def emit(result):
    print("\\n" + %r + json.dumps(result), flush=True)  # a new line: prompts (input()) print none
def error_of(fn):
    try:
        fn()
    except Exception as err:  # noqa: BLE001
        return {"type": type(err).__name__, "message": str(err)}
    return None
"""
    % RESULT_MARKER
)

# Makes `import hf_textcluster` fail in the client, as on a machine where the package is not installed (it is
# installed in editable mode here, so removing a path is not enough: a meta path finder refuses it first).
HIDE_PACKAGE = """
import importlib.abc
class _NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "hf_textcluster":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _NotInstalled())
"""


def hub_environment(endpoint: str, hf_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_", "TRANSFORMERS_"))}
    env.update(
        HF_ENDPOINT=endpoint,
        HF_HUB_DISABLE_XET="1",
        HF_HOME=str(hf_home),
        HF_HUB_OFFLINE="0",
        HF_DATASETS_OFFLINE="0",
        HF_TOKEN="hf_stand_in_token",
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HUB_DISABLE_PROGRESS_BARS="1",
        HF_DATASETS_DISABLE_PROGRESS_BARS="1",
        TOKENIZERS_PARALLELISM="false",
        OMP_NUM_THREADS="1",
        NO_PROXY="127.0.0.1,localhost",
    )
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        env.pop(key, None)
    return env


def run_client(code: str, env: dict, payload: dict | None = None, hide_package: bool = False, cwd=None) -> dict:
    """Run ``code`` in a fresh interpreter with ``env``; return what it passed to ``emit``."""
    script = CLIENT_PRELUDE + (HIDE_PACKAGE if hide_package else "") + textwrap.dedent(code)
    proc = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(payload or {}),
        capture_output=True,
        text=True,
        env=env,
        timeout=CLIENT_TIMEOUT,
        cwd=cwd,
    )
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_MARKER):
            return json.loads(line[len(RESULT_MARKER) :])
    raise AssertionError(f"client failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")


def shared_data_dir(name: str = "tweet") -> Path | None:
    """The benchmark CSV folder ($HF_TEXTCLUSTER_DATA_DIR, else ../shared/data) when it holds ``<name>.csv``."""
    candidate = os.environ.get("HF_TEXTCLUSTER_DATA_DIR") or str(
        Path(__file__).resolve().parents[2].parent / "shared" / "data"
    )
    path = Path(candidate)
    return path if (path / f"{name}.csv").is_file() else None
