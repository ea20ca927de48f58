"""Pictures of a training run from the Trainer's ``log_history``: one panel per loss term, one for the cluster health.

from hf_textcluster.apps.training_curves import plot_training_curves
plot_training_curves(trainer.state.log_history, path="curves.png")  # or a run folder / trainer_state.json
"""

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .canvas import is_drawable, new_figure, save_figure

_HEALTH_KEYS = ("health_agreement", "health_size_entropy", "health_changed")
_SCORE_KEYS = ("eval_acc", "eval_nmi", "eval_kmeans_acc", "eval_kmeans_nmi")
_CLUSTERS_USED = "health_clusters_used"


def load_log_history(source: str | os.PathLike) -> list[dict]:
    """The Trainer's ``log_history`` from a file or a folder.

    Args:
        source: A ``trainer_state.json`` file, a checkpoint folder, a run folder (its own ``trainer_state.json``,
            else that of its newest ``checkpoint-N``), or a JSON file with a ``log_history`` key.

    Returns:
        The list of logged entries (dicts).

    Raises:
        FileNotFoundError: no such file, or a folder without a ``trainer_state.json``.
        ValueError: the file holds no ``log_history`` list.

    Example:
        >>> history = load_log_history("runs/my-run")  # doctest: +SKIP
    """
    path = Path(source)
    if path.is_dir():  # its own trainer_state.json, else that of its newest checkpoint-N
        states = [p for p in path.glob("checkpoint-*/trainer_state.json") if p.parent.name[11:].isdigit()]
        candidates = [path / "trainer_state.json", *sorted(states, key=lambda p: -int(p.parent.name[11:]))]
        folder, path = path, next((c for c in candidates if c.is_file()), None)
        if path is None:
            raise FileNotFoundError(
                f"{folder} holds no trainer_state.json (nor a checkpoint-N with one): the run was "
                "saved without checkpoints (save_strategy='no'), so no log history was kept."
            )
    if not path.is_file():
        raise FileNotFoundError(f"No log history file {path.resolve()}.")
    data = json.loads(path.read_text())
    history = data.get("log_history") if isinstance(data, dict) else data
    if not isinstance(history, list):
        raise ValueError(f"{path} has no `log_history` list.")
    return history


def plot_training_curves(
    log_history: Sequence[Mapping[str, Any]] | str | os.PathLike,
    *,
    title: str | None = None,
    path: str | os.PathLike | None = None,
    ncols: int = 3,
):
    """One panel per loss term over the steps, and one panel with the cluster health checks and scores.

    The loss panels show ``loss`` and each ``loss_<term>`` the clustering trainers log; the last panel shows
    ``health_agreement``, ``health_size_entropy``, ``health_changed`` (``health_clusters_used`` on its own axis) and
    any ``eval_acc`` / ``eval_nmi`` logged.

    Args:
        log_history: The Trainer's ``state.log_history``, or a path :func:`load_log_history` reads.
        title: A title above the panels (wrapped to the figure's width).
        path: Where to save the picture (its format from the suffix); None only returns it.
        ncols: Panels per row.

    Returns:
        The matplotlib Figure.

    Raises:
        ValueError: nothing with a step to plot.

    Example:
        >>> plot_training_curves(trainer.state.log_history, path="curves.png")  # doctest: +SKIP
    """
    if isinstance(log_history, (str, os.PathLike)):
        log_history = load_log_history(log_history)
    history = [entry for entry in log_history if isinstance(entry, Mapping)]
    keys = dict.fromkeys(k for entry in history for k in entry)
    # (steps, values) of each key with a value at a step
    drawn = {k: [entry for entry in history if "step" in entry and is_drawable(entry.get(k))] for k in keys}
    series = {
        k: ([e["step"] for e in entries], [float(e[k]) for e in entries]) for k, entries in drawn.items() if entries
    }
    loss_keys = [k for k in series if k == "loss" or k.startswith("loss_")]
    score_keys = [k for k in (*_HEALTH_KEYS, *_SCORE_KEYS) if k in series]
    health = bool(score_keys) or _CLUSTERS_USED in series
    panels = len(loss_keys) + health
    if panels == 0:
        raise ValueError(
            "The log history holds no loss, health_* or eval_acc / eval_nmi values with a step: nothing "
            "to plot (was anything logged? see --logging-steps)."
        )
    ncols = max(1, min(ncols, panels))
    nrows = math.ceil(panels / ncols)
    fig = new_figure((4.6 * ncols, 3.4 * nrows))
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False).ravel())
    for ax, key in zip(axes, loss_keys):
        ax.plot(*series[key], marker="o" if len(series[key][0]) < 30 else None, markersize=3, color="tab:blue")
        ax.set(title="total loss" if key == "loss" else f"loss term: {key[5:]}", xlabel="step")
        ax.grid(alpha=0.3)
    if health:
        _draw_health(axes[len(loss_keys)], series, score_keys)
    for ax in axes[panels:]:
        ax.set_visible(False)
    if title:
        import textwrap

        width = max(40, int(18 * fig.get_size_inches()[0]))  # characters that fit the figure's width
        fig.suptitle("\n".join(textwrap.wrap(title, width)), fontsize="medium")
    return save_figure(fig, path)


def _draw_health(ax, series: Mapping[str, tuple], score_keys: Sequence[str]) -> None:
    """The health checks and scores (all in [0, 1]) on ``ax``, the number of clusters used on a second axis."""
    for key in score_keys:
        ax.plot(*series[key], marker="o", markersize=3, label=key)
    title = "cluster health" + (" and scores" if any(k.startswith("eval_") for k in score_keys) else "")
    ax.set(ylim=(-0.02, 1.02), xlabel="step", title=title)
    ax.grid(alpha=0.3)
    handles, names = ax.get_legend_handles_labels()
    if _CLUSTERS_USED in series:
        twin = ax.twinx()
        steps, values = series[_CLUSTERS_USED]
        line = twin.plot(steps, values, color="0.35", linestyle="--", marker="s", markersize=3, label=_CLUSTERS_USED)
        twin.set(ylabel="clusters used", ylim=(0, max(values) * 1.1 + 1))
        handles, names = handles + line, names + [f"{_CLUSTERS_USED} (right)"]
    ax.legend(handles, names, fontsize="x-small", loc="lower left", frameon=False)
