"""Where every matplotlib picture of :mod:`hf_textcluster.apps` is drawn and saved.

A figure is a ``matplotlib.figure.Figure`` on its own Agg canvas: no window, no ``plt.show`` and no change to
pyplot's global backend, so drawing works the same in a notebook, a script or a server. matplotlib is optional:
``pip install "hf_textcluster[plot]"``.

    from hf_textcluster.apps.canvas import new_figure, save_figure
    fig = new_figure((6.0, 4.0))
    fig.add_subplot().plot([0, 1], [1, 0])
    save_figure(fig, "line.png")
"""

import math
import os
from pathlib import Path

import numpy as np

PLOT_EXTRA = 'pip install "hf_textcluster[plot]"'
SAVE_DPI = 120


def require_matplotlib():
    """``(Figure, FigureCanvasAgg)`` from matplotlib, or one clear error naming the extra to install.

    Returns:
        The two matplotlib classes every picture is built from.

    Raises:
        ImportError: matplotlib is not installed.

    Example:
        >>> Figure, FigureCanvasAgg = require_matplotlib()  # doctest: +SKIP
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as err:
        raise ImportError(f"Plotting needs matplotlib, which is not installed: {PLOT_EXTRA}") from err
    return Figure, FigureCanvasAgg


def new_figure(figsize: tuple[float, float]):
    """An empty figure of ``figsize`` inches with constrained layout, on an Agg canvas whatever pyplot's backend is.

    Args:
        figsize: ``(width, height)`` in inches.

    Returns:
        A ``matplotlib.figure.Figure``.

    Raises:
        ImportError: matplotlib is not installed.

    Example:
        >>> fig = new_figure((6.0, 4.0))  # doctest: +SKIP
    """
    Figure, FigureCanvasAgg = require_matplotlib()
    return FigureCanvasAgg(Figure(figsize=figsize, layout="constrained")).figure


def save_figure(fig, path: str | os.PathLike | None):
    """Save ``fig`` at ``path`` (the format from its suffix) when a path is given; return the figure either way.

    Args:
        fig: A matplotlib Figure.
        path: Where to write it, or None to only return it.

    Returns:
        ``fig``.

    Raises:
        FileNotFoundError: ``path``'s folder does not exist.

    Example:
        >>> save_figure(fig, "map.png")  # doctest: +SKIP
    """
    if path is not None:
        path = Path(path)
        if not path.parent.is_dir():
            raise FileNotFoundError(f"Cannot write {path}: the folder {path.parent} does not exist; create it first.")
        fig.savefig(path, dpi=SAVE_DPI)
    return fig


def check_image_path(path: str | os.PathLike) -> None:
    """Raise before any work when ``path`` cannot take a picture: unknown format (from the suffix) or no folder.

    Args:
        path: The image file a command will write.

    Raises:
        ValueError: matplotlib writes no format of that suffix.
        FileNotFoundError: the folder does not exist.
        ImportError: matplotlib is not installed.

    Example:
        >>> check_image_path("map.png")  # doctest: +SKIP
    """
    _, FigureCanvasAgg = require_matplotlib()
    path = Path(path)
    suffix = path.suffix.lower().lstrip(".")
    formats = FigureCanvasAgg.get_supported_filetypes()
    if suffix not in formats:
        raise ValueError(
            f"{path}: matplotlib cannot write {'.' + suffix if suffix else 'a file without a suffix'}; "
            f"use one of {', '.join('.' + f for f in sorted(formats))} (e.g. map.png)."
        )
    if not path.parent.resolve().is_dir():
        raise FileNotFoundError(f"{path}: the folder {path.parent.resolve()} does not exist; create it first.")


def is_drawable(value) -> bool:
    """Whether ``value`` is a number a picture can draw: finite, and not a bool (nor None, a string, ...).

    Example:
        >>> is_drawable(0.5), is_drawable(float("nan")), is_drawable(True)
        (True, False, False)
    """
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def palette(count: int) -> np.ndarray:
    """``count`` distinct RGBA colours: tab10 / tab20, else a shuffled walk around a perceptual colour map.

    Args:
        count: How many colours.

    Returns:
        A ``count`` x 4 array of RGBA values in [0, 1].

    Example:
        >>> palette(3).shape  # doctest: +SKIP
        (3, 4)
    """
    from matplotlib import colormaps

    if count <= 20:
        return colormaps["tab10" if count <= 10 else "tab20"](np.arange(count))
    order = np.random.default_rng(0).permutation(count)  # neighbouring ids get far-apart colours
    return colormaps["turbo"](np.linspace(0.03, 0.97, count)[order])
