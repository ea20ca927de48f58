"""k-means as the trainers, the evaluation and the baselines run it: scikit-learn's ``KMeans``, exact up to
``max_samples`` rows; above that, fitted on a seeded sample of ``max_samples`` rows and every row then assigned to
its nearest centre. Lloyd's iterations cost rows x K x dims each, times ``n_init`` restarts: on a million texts the
sample keeps the fit at the cost of 100k rows, and the assignment is one linear pass (scikit-learn chunks it).

``init="umap"``: the centres are the means, in the original space, of the clusters k-means finds on a UMAP reduction
of the rows (BERTopic's: 15 neighbours, 5 dimensions, cosine), and each row goes to its nearest centre, so a
centroid head serves the result exactly. UMAP lays the exact neighbours out ``UMAP_LAYOUTS`` times and the partition
agreeing most with the others is kept: one layout in a few merges two clusters. With many clusters k-means++
restarts end in poor local optima that the neighbourhood graph avoids, though not on every corpus; Lloyd's
iterations from these centres are skipped, because they can fall back to k-means++'s optimum (docs/results.md has
the measurements).

``init="best"`` (the trainers' default): k-means++ restarts and one Lloyd run started from the UMAP clusters' means,
the lower inertia kept (no labels involved); see :func:`fit_kmeans` for where each wins.

Features that are a CUDA tensor are clustered on the GPU by :func:`torch_kmeans` (the same k-means++ restarts, Lloyd's
iterations and selection by inertia, seeded, in torch), so a GPU run never copies the corpus' embeddings to the host
for k-means; everything else (numpy, sparse, CPU tensors) goes to scikit-learn, whose results CPU runs keep."""

from __future__ import annotations

import contextlib
import importlib.util
import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from transformers.utils import logging

from ..modeling.validation import check_scalar
from ..reuse import reuse

logger = logging.get_logger(__name__)

DEFAULT_KMEANS_MAX_SAMPLES = 100_000
DEFAULT_N_INIT = 10
KMEANS_INITS = ("k-means++", "umap", "best")
# up to this many rows the neighbours UMAP starts from are computed exactly (rows x rows x dims multiply-adds, in
# chunks); above it UMAP's approximate search
EXACT_NEIGHBOUR_ROWS = 50_000
UMAP_NEIGHBOURS = 15
# layouts drawn per UMAP k-means, the most agreeing partition kept (training/studies/umap_layouts.py chose it)
UMAP_LAYOUTS = 3
# UMAP's spectral layout needs more rows than its 15 neighbours: with fewer, no UMAP k-means (start, candidate)
UMAP_MIN_ROWS = 17


def fit_kmeans(
    features,
    num_clusters: int,
    n_init: int = DEFAULT_N_INIT,
    random_state: int | None = 0,
    max_samples: int | None = DEFAULT_KMEANS_MAX_SAMPLES,
    init: str = "k-means++",
):
    """A fitted ``sklearn.cluster.KMeans`` whose ``labels_`` cover every row of ``features`` (dense or sparse).

    ``max_samples``: rows the centres are fitted on (a seeded sample when there are more; ``None``: all rows).
    Below it the result is exactly ``KMeans(...).fit(features)``. ``init``:

    - ``"k-means++"``: scikit-learn's, ``n_init`` restarts.
    - ``"umap"``: the nearest of the means of the clusters k-means finds on a UMAP reduction (needs umap-learn; no
      Lloyd's iterations, so a centroid head serves exactly those clusters).
    - ``"best"``: the lower inertia of two runs on the same rows, label-free: k-means++ with ``n_init`` restarts, and
      one Lloyd run in the original space started from the means of the UMAP clusters (``KMeans(init=<means>,
      n_init=1)``); the same optimum from both (inertias within a relative 1e-6) keeps k-means++. With many
      clusters the UMAP-started run tends to end at the lower inertia, with few k-means++ (docs/results.md has the
      measurements); the UMAP layouts add their fits to the time. Without umap-learn (a warning), with 16 rows or fewer,
      or on sparse features it is k-means++ alone (logged).

    The returned object's ``start_`` says which start it came from: ``"k-means++"`` or ``"umap"``.

    ``features`` on a CUDA device (a torch tensor) with ``init="k-means++"`` or ``"best"``: :func:`torch_kmeans` on
    that device instead (a :class:`TorchKMeans`, with the same attributes; ``"best"`` is k-means++ there, the
    corpus is not copied to the host for UMAP); a CPU tensor is clustered by scikit-learn.

    Args:
        features: rows x dims (numpy array, scipy sparse matrix or torch tensor).
        num_clusters: K.
        n_init: k-means++ restarts (and the restarts of k-means in the UMAP space).
        random_state: seed of the sample, the restarts and UMAP.
        max_samples: see above.
        init: ``"k-means++"``, ``"umap"`` or ``"best"``.

    Returns:
        A fitted ``KMeans`` (or :class:`NearestCentres` for ``"umap"``, :class:`TorchKMeans` on a GPU) with
        ``labels_`` for every row and ``start_``.

    Raises:
        ValueError: ``init`` or ``max_samples`` is not one of the accepted values.

    Example:
        >>> x = np.concatenate([np.random.default_rng(0).normal(c, 0.1, (30, 4)) for c in range(3)])
        >>> fit_kmeans(x, 3, init="best").labels_.shape  # doctest: +SKIP
        (90,)
    """
    if init not in KMEANS_INITS:
        raise ValueError(f"`init` (kmeans_init) must be one of {KMEANS_INITS}, got {init!r}.")
    on_gpu = isinstance(features, torch.Tensor) and features.is_cuda and init in ("k-means++", "best")
    if isinstance(features, torch.Tensor) and not on_gpu:
        features = features.detach().float().cpu().numpy()
    hint = "at least num_clusters; None: all rows"
    check_scalar(max_samples, "max_samples", int, min_val=num_clusters, allow_none=True, hint=hint)
    n = features.shape[0]
    sampled = max_samples is not None and n > max_samples
    rows = np.sort(np.random.default_rng(random_state).choice(n, size=max_samples, replace=False)) if sampled else None
    fitted_on = features if rows is None else features[rows]
    kmeans: Any
    if on_gpu:
        kmeans = torch_kmeans(fitted_on, num_clusters, n_init=n_init, random_state=random_state)
    elif init == "umap":
        kmeans = NearestCentres.of_groups(fitted_on, _umap_kmeans_groups(fitted_on, num_clusters, n_init, random_state))
        kmeans.start_ = "umap"
    elif init == "best":
        kmeans = _best_start_kmeans(fitted_on, num_clusters, n_init, random_state)
    else:
        kmeans = _kmeans_pp(fitted_on, num_clusters, n_init, random_state)
    if sampled:
        logger.info(
            f"k-means fitted on a seeded sample of {max_samples} of {n} rows; every row assigned to its nearest centre."
        )
        kmeans.labels_ = kmeans.predict(features)
    return kmeans


def _umap_start_unavailable(features) -> str | None:
    """Why the UMAP-started run of ``init="best"`` cannot run on ``features`` (None: it can)."""
    if hasattr(features, "toarray"):
        return "the features are sparse"
    if features.shape[0] < UMAP_MIN_ROWS:
        return f"{features.shape[0]} rows are too few for UMAP (it needs more than {UMAP_MIN_ROWS - 1} texts)"
    if importlib.util.find_spec("umap") is None:
        return "umap-learn is not installed (`pip install umap-learn`)"
    return None


def _best_start_kmeans(features, num_clusters: int, n_init: int, random_state: int | None):
    """``init="best"``: k-means++ (``n_init`` restarts) and one Lloyd run from the means of the UMAP clusters, both
    on ``features``; the one with the lower inertia (ties, up to a relative 1e-6: k-means++), its ``start_`` saying
    which."""
    from sklearn.cluster import KMeans

    kmeans = _kmeans_pp(features, num_clusters, n_init, random_state)
    why_not = _umap_start_unavailable(features)
    if why_not is not None:
        # a missing umap-learn (a core dependency) is said out loud; the other reasons are the data's
        log = logger.warning if "umap-learn" in why_not else logger.info
        log(f"kmeans_init='best' ran k-means++ alone: {why_not}.")
        return kmeans
    groups = _umap_kmeans_groups(features, num_clusters, n_init, random_state)
    dense = np.asarray(features)
    means = np.stack([dense[groups == k].mean(axis=0) for k in range(num_clusters)]).astype(dense.dtype)
    from_umap = KMeans(n_clusters=num_clusters, init=means, n_init=1, random_state=random_state).fit(dense)
    from_umap.start_ = "umap"
    # the same optimum reached from both starts differs only by rounding: then k-means++ (the papers' start) is kept
    winner = from_umap if from_umap.inertia_ < kmeans.inertia_ * (1 - 1e-6) else kmeans
    logger.info(
        f"kmeans_init='best': the {winner.start_} start won (inertia {winner.inertia_:.6g}; k-means++ "
        f"{kmeans.inertia_:.6g}, UMAP-started {from_umap.inertia_:.6g})."
    )
    return winner


def _kmeans_pp(features, num_clusters: int, n_init: int, random_state: int | None):
    """scikit-learn's k-means++ with ``n_init`` restarts, ``start_`` set; seeded, it is computed once per
    :func:`~hf_textcluster.reuse.reusing_results` block (``train --method auto`` fits it on the same
    pretrained embeddings for each signal's start and for the pretrained candidates)."""

    def fit():
        from sklearn.cluster import KMeans

        kmeans = KMeans(n_clusters=num_clusters, n_init=n_init, random_state=random_state).fit(features)
        kmeans.start_ = "k-means++"
        return kmeans

    if random_state is None or hasattr(features, "toarray"):  # unseeded: another result each time; sparse: as is
        return fit()
    return reuse(lambda: ("k-means++", features, num_clusters, n_init, random_state), fit)


@dataclass
class TorchKMeans:
    """The result of :func:`torch_kmeans`, with the fitted attributes of ``sklearn.cluster.KMeans`` that callers use
    (``cluster_centers_``, ``labels_``, ``inertia_`` as numpy / Python values; ``predict``; ``start_``, how the run
    started, as on every fitted k-means :func:`fit_kmeans` returns). ``centers`` keeps the centres as a tensor on the
    device they were fitted on."""

    centers: torch.Tensor
    labels_: np.ndarray
    inertia_: float
    start_: str = "k-means++"

    @property
    def cluster_centers_(self) -> np.ndarray:
        return self.centers.float().cpu().numpy()

    def predict(self, features) -> np.ndarray:
        """The nearest centre of each row of ``features`` (a tensor on any device, or an array)."""
        return _nearest(torch.as_tensor(features).to(self.centers.device).float(), self.centers)[0].cpu().numpy()


def _squared_distances(x: torch.Tensor, centers: torch.Tensor) -> torch.Tensor:
    """Squared Euclidean distances (rows x centres), from norms and one matrix product (as scikit-learn computes
    them)."""
    distances = (x * x).sum(1, keepdim=True) - 2 * x @ centers.T + (centers * centers).sum(1)
    return distances.clamp_min_(0)


def _nearest(x: torch.Tensor, centers: torch.Tensor, chunk: int = 65_536) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's nearest centre and its squared distance (in chunks of rows: memory stays rows x K per chunk)."""
    best = [_squared_distances(part, centers).min(dim=1) for part in x.split(chunk)]
    return torch.cat([b.indices for b in best]), torch.cat([b.values for b in best])


def _kmeans_plus_plus(x: torch.Tensor, num_clusters: int, generator: torch.Generator) -> torch.Tensor:
    """Greedy k-means++ seeding (scikit-learn's: 2 + log K candidate centres per step, the one that lowers the
    potential most is kept)."""
    n = x.shape[0]
    trials = 2 + int(math.log(num_clusters))
    first = int(torch.randint(n, (1,), generator=generator, device=x.device))
    centers = [x[first]]
    closest = _squared_distances(x, x[first : first + 1]).squeeze(1)
    potential = closest.sum()
    for _ in range(1, num_clusters):
        draws = torch.rand(trials, generator=generator, device=x.device, dtype=x.dtype) * potential
        candidates = torch.searchsorted(torch.cumsum(closest, 0), draws).clamp_(max=n - 1)
        candidate_closest = torch.minimum(closest.unsqueeze(0), _squared_distances(x[candidates], x))
        potentials = candidate_closest.sum(1)
        best = int(potentials.argmin())
        closest, potential = candidate_closest[best], potentials[best]
        centers.append(x[candidates[best]])
    return torch.stack(centers)


def torch_kmeans(
    features: torch.Tensor,
    num_clusters: int,
    n_init: int = 10,
    random_state: int | None = 0,
    max_iter: int = 300,
    tol: float = 1e-4,
) -> TorchKMeans:
    """k-means in torch on the tensor's own device (CUDA or CPU): ``n_init`` greedy k-means++ restarts, Lloyd's
    iterations until the centres move less than ``tol`` x the features' mean variance (scikit-learn's rule), the
    restart with the lowest inertia kept. Seeded by ``random_state`` (a generator on the device; the same seed on
    another device or torch version may start elsewhere). An emptied cluster takes the row farthest from its centre.

    Args:
        features: rows x dims tensor (any float dtype; computed in fp32).
        num_clusters: K, at most the number of rows.
        n_init: restarts.
        random_state: seed (None: 0).
        max_iter: Lloyd's iterations per restart at most.
        tol: convergence tolerance, relative to the mean variance of the features.

    Returns:
        A :class:`TorchKMeans` (``cluster_centers_``, ``labels_``, ``inertia_``, ``predict`` like scikit-learn's).

    Example:
        >>> x = torch.cat([torch.randn(50, 2) - 5, torch.randn(50, 2) + 5])
        >>> torch_kmeans(x, 2, random_state=0).labels_.shape
        (100,)
    """
    if not isinstance(features, torch.Tensor) or features.ndim != 2:
        shape = f" of shape {tuple(features.shape)}" if hasattr(features, "shape") else ""
        raise ValueError(f"`features` must be a 2-D torch tensor (rows x dims), got {type(features).__name__}{shape}.")
    check_scalar(num_clusters, "num_clusters", int, min_val=1, max_val=len(features), hint="the number of rows")
    check_scalar(n_init, "n_init", int, min_val=1)
    x = features.detach().float()
    generator = torch.Generator(device=x.device)
    generator.manual_seed(0 if random_state is None else int(random_state))
    threshold = tol * float(x.var(dim=0, unbiased=False).mean())
    best = None
    with torch.no_grad():
        for _ in range(n_init):
            centers = _kmeans_plus_plus(x, num_clusters, generator)
            for _ in range(max_iter):
                labels, distances = _nearest(x, centers)
                sums = torch.zeros_like(centers).index_add_(0, labels, x)
                counts = torch.bincount(labels, minlength=num_clusters)
                empty = torch.nonzero(counts == 0).flatten()
                if len(empty):  # re-seed each emptied cluster with one of the rows farthest from their centres
                    far = distances.topk(len(empty)).indices
                    sums[empty], counts[empty] = x[far], 1
                new_centers = sums / counts.unsqueeze(1).to(sums.dtype)
                shift = float(((new_centers - centers) ** 2).sum())  # one sync per iteration, not per row
                centers = new_centers
                if shift <= threshold:
                    break
            labels, distances = _nearest(x, centers)
            inertia = float(distances.sum())
            if best is None or inertia < best.inertia_:
                best = TorchKMeans(centers, labels.cpu().numpy(), inertia)
    assert best is not None  # n_init >= 1 restarts ran
    return best


class NearestCentres:
    """Fixed centres and the nearest-centre rule, with the attributes of a fitted ``KMeans`` callers use."""

    start_: str
    groups_: np.ndarray

    def __init__(self, centres: np.ndarray):
        self.cluster_centers_ = centres
        self.labels_: np.ndarray | None = None

    @classmethod
    def of_groups(cls, features, groups: np.ndarray) -> NearestCentres:
        """The means of ``groups`` of ``features`` as centres; ``labels_`` = each row's nearest centre, ``groups_`` =
        the groups themselves."""
        features = np.asarray(features, dtype=np.float32)
        fitted = cls(np.stack([features[groups == k].mean(axis=0) for k in range(int(groups.max()) + 1)]))
        fitted.groups_ = groups
        fitted.labels_ = fitted.predict(features)
        return fitted

    def predict(self, features) -> np.ndarray:
        from sklearn.metrics import pairwise_distances_argmin

        return pairwise_distances_argmin(np.asarray(features, dtype=self.cluster_centers_.dtype), self.cluster_centers_)


@contextlib.contextmanager
def keeping_torch_threads():
    """Restore torch's thread count after the block. A UMAP fit starts numba's OpenMP threads, which resets the count
    torch shares with them (1 became 2 here): the training that follows would then compute with another number of
    threads than a resumed run that never fitted UMAP, and the two would no longer agree bit for bit.

    Example:
        >>> with keeping_torch_threads():
        ...     reduced = UMAP(random_state=0).fit_transform(features)   # doctest: +SKIP
    """
    threads = torch.get_num_threads()
    try:
        yield
    finally:
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)


def exact_neighbours(features, k: int, chunk: int = 2048, exclude_self: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Each row's ``k`` nearest rows by cosine distance and those distances, in ascending order: exact, ``chunk`` rows
    at a time (UMAP's ``precomputed_knn``, SCAN's neighbours, the eigengap's kNN graph). Each row is among its own
    neighbours unless ``exclude_self`` (then the row itself is left out, never a duplicate of it). In float64 for
    float64 rows, float32 otherwise."""
    x = np.asarray(features)
    x = x if x.dtype == np.float64 else x.astype(np.float32)
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    indices = np.empty((len(x), k), dtype=np.int64)
    distances = np.empty((len(x), k), dtype=x.dtype)
    for start in range(0, len(x), chunk):
        sim = x[start : start + chunk] @ x.T
        if exclude_self:
            rows = np.arange(len(sim))
            sim[rows, start + rows] = -np.inf
        nearest = np.argpartition(-sim, k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(sim, nearest, axis=1), axis=1, kind="stable")
        block = slice(start, start + len(sim))
        indices[block] = np.take_along_axis(nearest, order, axis=1)
        distances[block] = np.maximum(1.0 - np.take_along_axis(sim, indices[block], axis=1), 0.0)
    return indices, distances


def _most_agreeing(partitions: list[np.ndarray]) -> np.ndarray:
    """The partition with the highest mean NMI with the others: a layout that merged two clusters the others keep
    apart agrees least with them."""
    from sklearn.metrics import normalized_mutual_info_score

    agreement = [
        np.mean([normalized_mutual_info_score(p, q) for j, q in enumerate(partitions) if j != i])
        for i, p in enumerate(partitions)
    ]
    # the first of those tied up to rounding: equal partitions under other cluster numbers score 1 - 1e-16 or 1
    return partitions[int(np.flatnonzero(np.asarray(agreement) >= max(agreement) - 1e-9)[0])]


def umap_layouts(features, random_state: int | None = 0, layouts: int = UMAP_LAYOUTS) -> list[np.ndarray]:
    """``layouts`` UMAP reductions of ``features`` (BERTopic's: 15 neighbours, 5 dimensions, cosine), seeds
    ``random_state``, ``random_state + 1``, ... The neighbours are exact (up to ``EXACT_NEIGHBOUR_ROWS`` rows) and
    computed once. Seeded, they are computed once per ``reusing_results`` block: the BERTopic way's k-means and the
    choice of K (``umap_silhouette``) read the same layouts."""
    why_not = _umap_start_unavailable(features)
    if why_not is not None:
        raise (ImportError if "umap-learn" in why_not else ValueError)(f"UMAP cannot run: {why_not}.")
    from umap import UMAP

    def draw() -> list[np.ndarray]:
        with warnings.catch_warnings(), keeping_torch_threads():  # a seeded UMAP runs single-threaded and says so
            warnings.filterwarnings("ignore", message="n_jobs value .* overridden|precomputed_knn.2. .knn_search_index")
            data, knn = np.asarray(features, dtype=np.float32), (None, None, None)
            if features.shape[0] <= EXACT_NEIGHBOUR_ROWS:
                # exact neighbours cost less than UMAP's search (approximate, or one Python call per pair below 4,096
                # rows), and an approximate graph can merge two clusters in every layout drawn from it
                knn = (*exact_neighbours(data, UMAP_NEIGHBOURS), None)
            return [
                UMAP(
                    n_neighbors=UMAP_NEIGHBOURS,
                    n_components=5,
                    min_dist=0.0,
                    metric="cosine",
                    random_state=None if random_state is None else random_state + layout,
                    precomputed_knn=knn,
                ).fit_transform(data)
                for layout in range(layouts)
            ]

    if random_state is None:  # unseeded: another result each time
        return draw()
    return reuse(lambda: ("umap layouts", np.asarray(features), random_state, layouts), draw)


def _umap_kmeans_groups(
    features, num_clusters: int, n_init: int = DEFAULT_N_INIT, random_state: int | None = 0, layouts: int = UMAP_LAYOUTS
) -> np.ndarray:
    """The clusters k-means finds on :func:`umap_layouts` of ``features``; with ``layouts`` > 1 the partition agreeing
    most with the others is kept (one layout in a few can merge two clusters)."""
    from sklearn.cluster import KMeans

    def groups() -> np.ndarray:
        partitions = [
            KMeans(
                n_clusters=num_clusters, n_init=n_init, random_state=None if random_state is None else random_state + i
            ).fit_predict(reduced)
            for i, reduced in enumerate(umap_layouts(features, random_state, layouts))
        ]
        kept = partitions[0] if layouts == 1 else _most_agreeing(partitions)
        return first_appearance(kept)

    if random_state is None:  # unseeded: another result each time
        return groups()
    # seeded, computed once per reusing_results block (see _kmeans_pp)
    return reuse(lambda: umap_kmeans_key(features, num_clusters, n_init, random_state, layouts), groups)


def umap_kmeans_key(features, num_clusters: int, n_init: int, random_state: int, layouts: int) -> tuple:
    """What the BERTopic way's partition of ``features`` is kept under within a ``reusing_results`` block."""
    return ("umap k-means", np.asarray(features), num_clusters, n_init, random_state, layouts)


def first_appearance(labels: np.ndarray) -> np.ndarray:
    """``labels`` renumbered in order of first appearance: partitions that are the same are numbered alike."""
    found, first_rows = np.unique(labels, return_index=True)
    number = np.empty(int(found.max()) + 1, dtype=labels.dtype)
    number[found[np.argsort(first_rows)]] = np.arange(len(found))
    return number[labels]
