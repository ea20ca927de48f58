"""Downloads through a third-party Hub mirror: ``olah`` (PyPI, in the ``test`` extra) serving a local git repository
(``mirrors-path``, ``[accessibility] offline = true``) on 127.0.0.1. A pushed-style model directory is committed to
``<mirrors>/models/org/sccl-mirror`` and loaded by repo id with ``HF_ENDPOINT`` pointing at olah.

olah accepts no uploads, and in offline mode it answers the repository-info and tree routes with 401, which
transformers' tokenizer loading needs: the tokenizer is passed explicitly, as the README says.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hub_client import hub_environment, run_client

pytestmark = pytest.mark.timeout(600)

LAUNCHER = Path(__file__).resolve().parent / "olah_launcher.py"
STARTUP_SECONDS = 60

LOAD_THROUGH_MIRROR = """
import glob, os
import hf_textcluster
from transformers import AutoModel, AutoTokenizer, pipeline

tokenizer = AutoTokenizer.from_pretrained(PAYLOAD["tokenizer_dir"])
model = AutoModel.from_pretrained("org/sccl-mirror", tokenizer=tokenizer)
clusterer = pipeline("text-clustering", model=model, tokenizer=tokenizer)
cached = glob.glob(os.path.join(os.environ["HF_HOME"], "hub", "models--org--sccl-mirror", "snapshots", "*", "*"))
emit({
    "class": type(model).__name__,
    "predictions": model.predict(PAYLOAD["texts"]).tolist(),
    "pipeline": [r["cluster"] for r in clusterer(PAYLOAD["texts"])],
    "cached": sorted(os.path.basename(p) for p in cached),
    "weights": open([p for p in cached if p.endswith("model.safetensors")][0], "rb").read().hex(),
})
"""


def _git(*args, cwd):
    subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.com",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com",
            "HOME": str(cwd),
            "PATH": "/usr/bin:/bin",
        },
    )


@pytest.fixture(scope="module")
def olah_endpoint(trained_run, tmp_path_factory):
    pytest.importorskip("olah", reason="olah (the Hub mirror) is not installed: pip install 'hf_textcluster[test]'")
    if shutil.which("git") is None:
        pytest.skip("olah serves local mirrors from git repositories, and git is not installed")
    root = tmp_path_factory.mktemp("olah")
    repo = root / "mirrors" / "models" / "org" / "sccl-mirror"
    shutil.copytree(trained_run, repo)
    _git("init", "-q", "-b", "main", cwd=repo)
    _git("add", ".", cwd=repo)
    _git("commit", "-q", "-m", "mirror of a trained clusterer", cwd=repo)
    config = root / "olah.toml"
    config.write_text(
        f'[basic]\nhost = "127.0.0.1"\nrepos-path = "{root / "cache"}"\nmirrors-path = ["{root / "mirrors"}"]\n'
        "[accessibility]\noffline = true\n"
    )
    port_file = root / "port"
    log = open(root / "olah.out", "wb")  # noqa: SIM115 - the server writes to it until the fixture closes it
    proc = subprocess.Popen(
        [sys.executable, str(LAUNCHER), str(config), str(root / "logs"), str(port_file)],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=root,
    )
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        port = None
        while time.monotonic() < deadline and proc.poll() is None:
            if port_file.is_file() and port_file.read_text().strip():
                port = int(port_file.read_text())
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    pass
            time.sleep(0.2)
        else:
            raise AssertionError(f"olah did not start:\n{(root / 'olah.out').read_text()[-3000:]}")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_load_by_repo_id_through_olah(olah_endpoint, trained_run, toy_corpus, tmp_path):
    from transformers import AutoModel

    import hf_textcluster  # noqa: F401

    texts = toy_corpus[0][:30]
    expected = AutoModel.from_pretrained(trained_run).predict(texts).tolist()
    env = hub_environment(olah_endpoint, tmp_path / "hf-home")
    result = run_client(LOAD_THROUGH_MIRROR, env, {"texts": texts, "tokenizer_dir": str(trained_run)})
    assert result["class"] == "SCCLModel"
    assert result["predictions"] == expected and result["pipeline"] == expected
    assert {"config.json", "model.safetensors"} <= set(result["cached"])
    # the fresh HF_HOME got the weights from olah, byte for byte
    assert bytes.fromhex(result["weights"]) == (trained_run / "model.safetensors").read_bytes()
