"""`make demo`: a user's first command. It runs on a fresh clone with nothing beside it (no data folder, no environment
variable, no network), trains the default and prints it beside the BERTopic way and k-means, and it ends on the
clusters the model is surest of."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

# Put first on PYTHONPATH, it makes every connection to an address other than the loopback fail (as on a machine
# without network); a local socket (AF_UNIX) or loopback stays allowed.
NO_NETWORK = """
import ipaddress
import socket

_connect, _connect_ex = socket.socket.connect, socket.socket.connect_ex


def _check(sock, address):
    if sock.family in (socket.AF_INET, socket.AF_INET6):
        host = address[0]
        try:
            local = host == "localhost" or ipaddress.ip_address(host).is_loopback
        except ValueError:
            local = False
        if not local:
            raise OSError(f"network access blocked in this test: {address!r}")


def connect(self, address):
    _check(self, address)
    return _connect(self, address)


def connect_ex(self, address):
    _check(self, address)
    return _connect_ex(self, address)


socket.socket.connect, socket.socket.connect_ex = connect, connect_ex
"""
# a row of the demo's table: its name, ACC / NMI / ARI in percent and its wall time
ROW = re.compile(
    r"^  (?P<name>\S.*?)\s+ACC\s+(?P<acc>[\d.]+)\s+NMI\s+(?P<nmi>[\d.]+)\s+ARI\s+(?P<ari>-?[\d.]+)\s+\(\d+s\)$"
)


@pytest.mark.slow  # a fresh clone, the real MiniLM (a minute or two on 2 CPU cores)
def test_the_demo_runs_on_a_fresh_clone_offline_with_nothing_beside_it(tmp_path):
    if shutil.which("git") is None or not (REPO_ROOT / ".git").exists():
        pytest.skip("needs git and the repository's checkout")
    clone = tmp_path / "fresh" / "hf_textcluster"  # its parent holds nothing else: no shared/ data beside it
    subprocess.run(["git", "clone", "--quiet", "--no-local", str(REPO_ROOT), str(clone)], check=True, timeout=300)
    assert os.listdir(clone.parent) == ["hf_textcluster"]
    guard = tmp_path / "no_network"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(NO_NETWORK)
    env = {key: value for key, value in os.environ.items() if key != "HF_TEXTCLUSTER_DATA_DIR"}
    env.update(
        PYTHONPATH=os.pathsep.join([str(guard), str(clone)]),
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        HF_HOME=str(tmp_path / "hf_home"),  # nothing cached by an earlier run
        TOKENIZERS_PARALLELISM="false",
    )
    blocked = subprocess.run(
        [sys.executable, "-c", "import socket; socket.create_connection(('192.0.2.1', 80), timeout=5)"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "network access blocked" in blocked.stderr  # the guard is in force in the demo's interpreter

    out = tmp_path / "demo"
    command = [sys.executable, "-m", "hf_textcluster.cli", "demo", "--train-sample", "100"]
    done = subprocess.run(
        [*command, "--output-dir", str(out)], cwd=clone, env=env, capture_output=True, text=True, timeout=1800
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    printed = done.stdout
    assert "Clustering 100 StackOverflow question titles" in printed and "Results on the 100 texts" in printed
    rows = [match.groupdict() for line in printed.splitlines() if (match := ROW.match(line))]
    names = [row["name"] for row in rows]
    assert len(rows) == 3, printed
    assert names[0].startswith("the BERTopic way: UMAP -> k-means") and names[1].startswith("k-means on MiniLM")
    assert re.fullmatch(r"the default `train`: serves \S+", names[2]), names[2]
    for row in rows:
        assert 0 <= float(row["acc"]) <= 100 and 0 <= float(row["nmi"]) <= 100 and -100 <= float(row["ari"]) <= 100
    assert float(rows[0]["acc"]) > 100 / 20  # 20 tags: better than chance on the real MiniLM
    # the model the default saved, and its report
    assert (out / "config.json").is_file() and (out / "model.safetensors").is_file()
    assert (out / "report.html").is_file() and "The report of every cluster" in printed


def test_the_demo_refuses_a_size_it_cannot_show_naming_the_flag():
    from hf_textcluster.apps.demo import run_demo

    with pytest.raises(ValueError, match=r"--train-sample\) must be at least 100; got 10"):
        run_demo(num_texts=10)


def test_demo_shows_the_most_confident_clusters_of_a_useful_size_not_the_largest():
    from hf_textcluster.apps.demo import min_shown_size, most_confident_clusters

    summaries = [
        {"cluster": k, "size": size, "mean_confidence": conf}
        for k, (size, conf) in enumerate([(500, 0.2), (300, 0.9), (40, 0.7), (5, 1.0), (60, 0.8)])
    ]
    assert min_shown_size(4000, 20) == 50 and min_shown_size(100, 20) == 10
    assert [s["cluster"] for s in most_confident_clusters(summaries, 50, 2)] == [1, 4]
    assert [s["cluster"] for s in most_confident_clusters(summaries, 10, 5)] == [1, 4, 2, 0]
    assert [s["cluster"] for s in most_confident_clusters(summaries, 1000, 2)] == [3, 1]  # none that large: all
