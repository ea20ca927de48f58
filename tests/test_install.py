"""README's install line, end to end: an empty virtual environment, `pip install ".[default]"` from a fresh clone (with
the Makefile's torch pin, the CPU build), then `hf-textcluster demo` and `hf-textcluster report` on the demo's model,
with no data folder beside the clone, no HF_TEXTCLUSTER_DATA_DIR and no network once installed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import venv
from pathlib import Path

import pytest

from tests.apps.test_demo import NO_NETWORK

REPO_ROOT = Path(__file__).resolve().parents[1]


def _readme_install_line() -> str:
    """The extra README's install line names (``hf_textcluster[default] @ git+URL``)."""
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    (extra,) = set(re.findall(r'pip install "hf_textcluster\[(\w+)\] @ git\+URL"', readme))
    return extra


def _torch_pin() -> str:
    (pin,) = re.findall(r"^TORCH_PIN \?= (\S+)$", (REPO_ROOT / "Makefile").read_text(encoding="utf-8"), re.M)
    return pin


@pytest.mark.slow  # a fresh environment: torch, transformers, ... installed, then the demo (minutes on 2 CPU cores)
def test_readme_install_line_runs_the_demo_and_the_report(tmp_path):
    if shutil.which("git") is None or not (REPO_ROOT / ".git").exists():
        pytest.skip("needs git and the repository's checkout")
    extra = _readme_install_line()
    assert extra == "default"
    clone = tmp_path / "fresh" / "hf_textcluster"  # nothing beside it: no shared/ data
    subprocess.run(["git", "clone", "--quiet", "--no-local", str(REPO_ROOT), str(clone)], check=True, timeout=300)
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TEXTCLUSTER_DATA_DIR", "PYTHONPATH", "VIRTUAL_ENV")}
    env["HF_HOME"] = str(tmp_path / "hf_home")  # nothing cached by an earlier run
    install = [str(python), "-m", "pip", "install", "-q", f".[{extra}]", _torch_pin()]
    done = subprocess.run(install, cwd=clone, env=env, capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]

    guard = tmp_path / "no_network"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(NO_NETWORK)
    env.update(PYTHONPATH=str(guard), TOKENIZERS_PARALLELISM="false")
    cli = env_dir / "bin" / "hf-textcluster"
    work = tmp_path / "work"  # the demo writes runs/demo under the folder it runs in
    work.mkdir()
    done = subprocess.run([str(cli), "demo"], cwd=work, env=env, capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    model = work / "runs" / "demo"
    assert (model / "report.html").is_file() and "The report of every cluster" in done.stdout
    # the imports came from the environment, not from the clone or this checkout
    where = subprocess.run(
        [str(python), "-c", "import hf_textcluster; print(hf_textcluster.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert str(env_dir) in where.stdout, where.stdout + where.stderr

    (work / "my_texts.txt").write_text(
        "\n".join(["how do i join two tables in sql", "python list sort by key", "git undo last commit"] * 20) + "\n"
    )
    report = [str(cli), "report", "--model", str(model), "--input", "my_texts.txt", "--output", "my_report.html"]
    done = subprocess.run(report, cwd=work, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    page = (work / "my_report.html").read_text(encoding="utf-8")
    assert "plotly" in page and 'src="https://cdn.plot.ly' not in page  # plotly's JavaScript inlined: offline
