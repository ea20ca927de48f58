"""Embeddings to 2-D points, for the maps of :mod:`~hf_textcluster.apps.plotting`, the cluster report and
``Clusterer.visualize_documents``.

UMAP (umap-learn), t-SNE or PCA (scikit-learn). A map of many texts
draws a seeded sample of them (:func:`~hf_textcluster.representation.summary.sample_rows`), so the same call draws
the same picture.

    from hf_textcluster.figures.projection import project_2d
    from hf_textcluster.representation.summary import sample_rows
    rows = sample_rows(len(embeddings), 3000, seed=0)
    coords = project_2d(embeddings[rows], method="pca")                 # -> (len(rows), 2)
"""

import importlib.util
import warnings

import numpy as np

from ..editing.kmeans import keeping_torch_threads
from ..modeling.validation import Options, validate_parameters

MAP_METHODS = ("umap", "tsne", "pca")
# What a map's projection may be asked for: one of MAP_METHODS, or "auto" (see resolve_projection).
PROJECTIONS = ("auto", *MAP_METHODS)
_TITLES = {"umap": "UMAP", "tsne": "t-SNE", "pca": "PCA"}


def resolve_projection(projection: str, name: str = "projection") -> str:
    """One of :data:`MAP_METHODS` for one of :data:`PROJECTIONS`: ``"auto"`` is UMAP when umap-learn is installed,
    else PCA (a map without the optional dependency rather than an error); ``"umap"`` without umap-learn is an
    ImportError, before any work. ``name``: the argument, for the errors.

    Example:
        >>> resolve_projection("pca")
        'pca'
    """
    validate_parameters({name: projection}, {name: Options(*PROJECTIONS)})
    if projection == "umap" and importlib.util.find_spec("umap") is None:
        raise ImportError(
            f"`{name}` umap needs umap-learn, a dependency of hf_textcluster that is not installed: pip install "
            f"umap-learn (or pass `{name}` tsne)."
        )
    if projection != "auto":
        return projection
    return "umap" if importlib.util.find_spec("umap") is not None else "pca"


def embedding_matrix(embeddings, name: str = "embeddings") -> np.ndarray:
    """``embeddings`` as a float32 matrix (texts x dimensions), or an error naming the argument ``name``."""
    x = np.asarray(embeddings, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"`{name}` must be a 2-D matrix (texts x dimensions), got shape {x.shape}.")
    return x


def project_2d(embeddings, method: str = "umap", random_state: int | None = 0, **kwargs) -> np.ndarray:
    """N x 2 coordinates of N embeddings: UMAP (umap-learn, cosine metric), t-SNE or PCA (scikit-learn).

    Args:
        embeddings: N x d embeddings, N >= 4.
        method: ``"umap"``, ``"tsne"`` or ``"pca"``.
        random_state: Seed of the projection.
        **kwargs: Passed to ``umap.UMAP`` / ``sklearn.manifold.TSNE`` / ``sklearn.decomposition.PCA``.

    Returns:
        An N x 2 float32 array.

    Raises:
        ValueError: not a matrix, fewer than 4 rows, NaN or inf values, an unknown ``method``.
        ImportError: ``method="umap"`` without umap-learn.

    Example:
        >>> project_2d(np.eye(5), method="pca").shape
        (5, 2)
    """
    x = embedding_matrix(embeddings)
    if x.shape[0] < 4:
        raise ValueError(f"A 2-D map needs at least 4 embeddings, got {x.shape[0]}.")
    if not np.isfinite(x).all():
        raise ValueError("`embeddings` hold NaN or inf values.")
    n = x.shape[0]
    validate_parameters({"method": method}, {"method": Options(*MAP_METHODS)})
    if method == "umap":
        try:
            import umap
        except ImportError as err:
            raise ImportError(
                "UMAP maps need umap-learn, a dependency of hf_textcluster that is not installed: pip install "
                "umap-learn (or pass method='tsne', which scikit-learn draws)."
            ) from err
        init = "random" if n < 20 else "spectral"  # the spectral initialisation needs more points than a handful
        options = {"n_neighbors": min(15, n - 1), "min_dist": 0.1, "metric": "cosine", "init": init}
        projector = umap.UMAP(n_components=2, **{**options, "random_state": random_state, **kwargs})
    elif method == "tsne":
        from sklearn.manifold import TSNE

        options = {"perplexity": float(min(30.0, max(1.0, (n - 1) / 3))), "init": "pca", "metric": "cosine"}
        projector = TSNE(n_components=2, **{**options, "random_state": random_state, **kwargs})
    else:
        from sklearn.decomposition import PCA

        projector = PCA(n_components=2, random_state=random_state, **kwargs)
    with warnings.catch_warnings(), keeping_torch_threads():  # UMAP's "n_jobs overridden to 1": expected, seeded maps
        warnings.filterwarnings("ignore", message=".*n_jobs.*", category=UserWarning)
        return np.asarray(projector.fit_transform(x), dtype=np.float32)


def method_title(method: str) -> str:
    """How a figure names a projection method: ``"umap"`` -> ``"UMAP"``, ``"tsne"`` -> ``"t-SNE"``, ...

    Example:
        >>> method_title("tsne")
        't-SNE'
    """
    return _TITLES.get(method, method)
