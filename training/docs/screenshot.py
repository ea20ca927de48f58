"""docs/report.png: the HTML report (``hf-textcluster report``) of the example SCCL model on its toy tickets, as
headless Chromium shows it; the report test opens its page with the same :func:`chromium_screenshot`.

    python -m training.docs screenshot     # needs chromium and the report extra (plotly); about a minute
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCREENSHOT = REPO / "docs" / "report.png"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
]


def chromium() -> str | None:
    """The Chromium executable, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def run_chromium(page: Path, *args: str, profile: Path, timeout: int = 120) -> subprocess.CompletedProcess:
    """Headless Chromium on a local page (``args``: ``--screenshot=...``, ``--dump-dom``, ...)."""
    executable = chromium()
    if executable is None:
        raise FileNotFoundError("chromium is not installed (apt-get install chromium).")
    return subprocess.run(
        [executable, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, page.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def chromium_screenshot(page: Path, png: Path, *, size: tuple[int, int] = (1280, 900)) -> subprocess.CompletedProcess:
    """A PNG of ``page`` as a ``size`` window shows it once its scripts have drawn (10 s of virtual time)."""
    with tempfile.TemporaryDirectory() as profile:
        return run_chromium(
            page,
            f"--screenshot={png}",
            f"--window-size={size[0]},{size[1]}",
            "--virtual-time-budget=10000",
            profile=Path(profile),
        )


def write(check: bool = False) -> list[Path]:
    """Train the example SCCL model, write its report on the toy tickets and screenshot it into docs/report.png
    (``check``: only say whether the picture is missing; a PNG is not byte-for-byte reproducible)."""
    if check:
        return [] if SCREENSHOT.is_file() else [SCREENSHOT]
    from hf_textcluster.apps.report import cluster_report
    from hf_textcluster.runs.folder import load_clusterer

    from .example_cards import toy_tickets, train_example

    rows = toy_tickets()
    texts, teams = [text for text, _ in rows], [team for _, team in rows]
    names = sorted(set(teams))
    with tempfile.TemporaryDirectory() as tmp:
        model = load_clusterer(train_example("sccl", Path(tmp)))
        page = cluster_report(
            model,
            texts,
            [names.index(team) for team in teams],
            Path(tmp) / "report.html",
            label_names=names,
            title="SCCL on 200 IT tickets (the example card's model)",
        )
        done = chromium_screenshot(page, SCREENSHOT, size=(1280, 1600))
        if not SCREENSHOT.is_file():
            raise RuntimeError(f"chromium wrote no screenshot: {done.stderr[-2000:]}")
    return [SCREENSHOT]
