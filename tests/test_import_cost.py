"""``import hf_textcluster`` registers the Auto classes and the pipeline and imports nothing heavier."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

_PROBE = """
import json, sys, time
start = time.perf_counter()
import hf_textcluster
seconds = time.perf_counter() - start
from transformers import AutoConfig, AutoModel
from transformers.pipelines import PIPELINE_REGISTRY
print(json.dumps({
    "seconds": seconds,
    "loaded": [m for m in ("transformers.trainer", "sklearn", "datasets", "hf_textcluster.training",
                           "hf_textcluster.hub", "hf_textcluster.runs") if m in sys.modules],
    "auto_config": type(AutoConfig.for_model("sccl")).__name__,
    "auto_model": AutoModel._model_mapping[type(AutoConfig.for_model("sccl"))].__name__,
    "pipeline": "text-clustering" in PIPELINE_REGISTRY.get_supported_tasks(),
}))
"""


def test_import_is_light_and_still_registers_the_methods():
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, cwd=root, check=True)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"import hf_textcluster: {report['seconds']:.2f} s (fresh interpreter)")
    assert report["loaded"] == []
    assert report["auto_config"] == "SCCLConfig"
    assert report["auto_model"] == "SCCLModel"
    assert report["pipeline"] is True
