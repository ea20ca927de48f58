"""Clustering objectives trained on cached (frozen) pretrained embeddings: seconds on a CPU, no encoder pass per step.

Each takes the ``(N, d)`` embeddings the first save computed (and, for the adapter, those of one word-deletion view of
the texts) and returns a :class:`CachedPartitions`: its candidate partitions and the space they were made in.

- :func:`fit_scan`: SCAN's neighbour-consistency objective (Van Gansbeke et al. 2020, Eq. 2) on linear heads over the
  L2-normalised embeddings; its candidate ``scan`` is served by its own head.
- :func:`fit_adapter`: SCCL's objective (Zhang et al. 2021: instance contrast of a text against its view and DEC's KL
  to the sharpened target) on a residual MLP adapter ``x + MLP(x)``; its candidates ``head``, ``kmeans`` and
  ``umap_kmeans`` are in the adapter's space.

Both are seeded and deterministic (the global torch RNG is left as it was).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from ..editing.kmeans import UMAP_MIN_ROWS, exact_neighbours, fit_kmeans
from ..modeling.layers import student_t_assignment
from ..modeling.validation import check_scalar
from ..models.sccl.losses_sccl import instance_contrastive_loss
from ..training.losses import dec_kl_loss, dec_target_distribution
from .linear_heads import RefinementResult, check_embeddings, l2_normalize, served_by_head

__all__ = [
    "ADAPTER_STEPS",
    "CachedPartitions",
    "adapter_loss",
    "fit_adapter",
    "fit_scan",
    "scan_loss",
    "scan_steps",
]

# SCAN (Van Gansbeke et al. 2020): the neighbours of each text, the weight of the entropy term, the heads trained at
# once (the lowest total loss kept) and the passes over the texts; Adam's settings and the batch, as the paper's
SCAN_NEIGHBOURS, SCAN_ENTROPY_WEIGHT, SCAN_HEADS, SCAN_EPOCHS = 20, 5.0, 5, 60
# the adapter: SCCL's temperature and eta (Zhang et al. 2021), its steps
ADAPTER_TEMPERATURE, ADAPTER_ETA, ADAPTER_STEPS = 0.5, 1.0, 1500
LEARNING_RATE, BATCH_SIZE = 1e-3, 256


@dataclass
class CachedPartitions:
    """What a cached objective made.

    Attributes:
        candidates: read-out name (``scan``; ``head``, ``kmeans``, ``umap_kmeans``) -> its partition of the texts.
        features: ``(N, d)`` float32, the space they were made in (the embeddings themselves for SCAN, the adapter's
            output for the adapter).
        serving: read-out -> the linear head on the L2-normalised input embeddings that serves it exactly, where the
            objective trained one (SCAN's head); the others are distilled by whoever serves them.
        loss: the kept model's final loss over every text (SCAN) or of its last batch (the adapter).
    """

    candidates: dict[str, np.ndarray]
    features: np.ndarray
    serving: dict[str, RefinementResult] = field(default_factory=dict)
    loss: float = float("nan")


def scan_loss(anchor: torch.Tensor, neighbour: torch.Tensor, entropy_weight: float = SCAN_ENTROPY_WEIGHT):
    """SCAN's loss (Van Gansbeke et al. 2020, Eq. 2): ``-mean log <p_i, p_j> + λ Σ_k p̄_k log p̄_k``.

    ``anchor`` (..., K) are the texts' cluster probabilities, ``neighbour`` (broadcastable to it) those of one of
    their nearest neighbours each; p̄ is the mean of the anchors' rows, so the second term (the negative entropy of
    the mean prediction) keeps every cluster in use. Probabilities are clamped at 1e-8 inside the logs.
    """
    consistency = -torch.log((anchor * neighbour).sum(-1).clamp_min(1e-8)).mean()
    mean = anchor.reshape(-1, anchor.shape[-1]).mean(0)
    return consistency + entropy_weight * (mean * torch.log(mean.clamp_min(1e-8))).sum()


def adapter_loss(view_a, view_b, projected_a, projected_b, centres, temperature=ADAPTER_TEMPERATURE, eta=ADAPTER_ETA):
    """SCCL's objective (Zhang et al. 2021, Eq. 7 with its Eq. 1-2 and 3-6): the instance contrast of the projected
    views ``projected_a`` / ``projected_b`` (row i of each a positive pair, NT-Xent at ``temperature``) plus ``eta``
    times DEC's KL(P‖Q) of the first view ``view_a``'s Student's t assignment Q to ``centres`` from its sharpened,
    detached target P."""
    q = student_t_assignment(view_a, centres)
    return instance_contrastive_loss(projected_a, projected_b, temperature) + eta * dec_kl_loss(
        dec_target_distribution(q), q
    )


def scan_steps(num_texts: int) -> int:
    """SCAN's steps on ``num_texts`` texts: 60 passes in batches of 256, at least 200."""
    return max(200, SCAN_EPOCHS * num_texts // BATCH_SIZE)


def fit_scan(
    embeddings,
    num_clusters: int,
    *,
    neighbours: int = SCAN_NEIGHBOURS,
    heads: int = SCAN_HEADS,
    steps: int | None = None,
    random_state: int = 0,
) -> CachedPartitions:
    """SCAN's clustering step on cached embeddings: ``heads`` linear heads on the L2-normalised ``embeddings``
    trained at once with :func:`scan_loss` (each text against one of its ``neighbours`` nearest texts; Adam, lr
    1e-3, weight decay 1e-4, batches of 256, ``steps``: by default ``max(200, 60 * N // 256)``), the head with the
    lowest loss over every text and all its neighbours kept (label-free, SCAN's rule).

    Returns:
        A :class:`CachedPartitions` with the candidate ``scan`` (the kept head's argmax), served by that head.

    Raises:
        ValueError: malformed ``embeddings``, or a ``num_clusters``, ``neighbours``, ``heads`` or ``steps`` out of
            range.
    """
    e = _check(embeddings, num_clusters)
    n = len(e)
    check_scalar(neighbours, "neighbours", numbers.Integral, min_val=1, max_val=n - 1, hint="e.g. 20")
    check_scalar(heads, "heads", numbers.Integral, min_val=1, hint="e.g. 5")
    steps = scan_steps(n) if steps is None else steps
    check_scalar(steps, "steps", numbers.Integral, min_val=1, hint="None: max(200, 60 * N // 256)")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(random_state)
        rng = torch.Generator().manual_seed(random_state)
        x = F.normalize(torch.from_numpy(e), dim=1)
        near = torch.from_numpy(exact_neighbours(e, neighbours, exclude_self=True)[0])
        linear = torch.nn.ModuleList([torch.nn.Linear(e.shape[1], num_clusters) for _ in range(heads)])
        optimizer = torch.optim.Adam(linear.parameters(), lr=LEARNING_RATE, weight_decay=1e-4)
        for _ in range(steps):
            i = torch.randint(0, n, (BATCH_SIZE,), generator=rng)
            j = near[i, torch.randint(0, neighbours, (BATCH_SIZE,), generator=rng)]
            loss = torch.stack([scan_loss(h(x[i]).softmax(-1), h(x[j]).softmax(-1)) for h in linear]).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            totals = []
            for h in linear:
                p = h(x).softmax(-1)
                totals.append(float(scan_loss(p[:, None, :], p[near])))
            best = linear[int(np.argmin(totals))]
            labels = best(x).argmax(-1).numpy().astype(np.int64)
            coef, intercept = best.weight.numpy().copy(), best.bias.numpy().copy()
    head = served_by_head(l2_normalize(e), labels, labels, coef, intercept, rounds=0, reason="SCAN's linear head")
    return CachedPartitions({"scan": labels}, e, {"scan": head}, loss=min(totals))


def fit_adapter(
    embeddings,
    view_embeddings,
    num_clusters: int,
    *,
    steps: int | None = None,
    random_state: int = 0,
) -> CachedPartitions:
    """SCCL's objective on cached embeddings: a residual MLP adapter ``x + MLP(x)`` (its last layer zero-initialised:
    it starts as the identity) and a projection head trained with :func:`adapter_loss` on the ``embeddings`` of the
    texts and ``view_embeddings`` of one augmented view of each (row i of both: the same text), the cluster centres
    started by k-means on ``embeddings`` and trained with them (Adam, lr 1e-3, batches of 256, ``steps`` steps; None:
    :data:`ADAPTER_STEPS`).

    Returns:
        A :class:`CachedPartitions` in the adapter's space: ``head`` (the nearest centre by Student's t), ``kmeans``
        and ``umap_kmeans`` (UMAP's k-means clusters; left out with too few texts for UMAP) of the adapted texts.

    Raises:
        ValueError: malformed embeddings (the two of different shapes), or a ``num_clusters`` or ``steps`` out of
            range.
    """
    e0, e1 = _check(embeddings, num_clusters), check_embeddings(view_embeddings).astype(np.float32)
    if e1.shape != e0.shape:
        raise ValueError(
            f"`view_embeddings` must have the shape of `embeddings` {e0.shape} (one view per text); got {e1.shape}."
        )
    steps = ADAPTER_STEPS if steps is None else steps
    check_scalar(steps, "steps", numbers.Integral, min_val=1, hint="None: 1500")
    n, d = e0.shape
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(random_state)
        rng = torch.Generator().manual_seed(random_state)
        x0, x1 = torch.from_numpy(e0), torch.from_numpy(e1)
        adapter = torch.nn.Sequential(torch.nn.Linear(d, d), torch.nn.ReLU(), torch.nn.Linear(d, d))
        torch.nn.init.zeros_(adapter[2].weight)
        torch.nn.init.zeros_(adapter[2].bias)
        projection = torch.nn.Sequential(torch.nn.Linear(d, d), torch.nn.ReLU(), torch.nn.Linear(d, 128))
        start = fit_kmeans(e0, num_clusters, random_state=random_state).cluster_centers_
        centres = torch.nn.Parameter(torch.from_numpy(np.asarray(start, dtype=np.float32)))
        parameters = [*adapter.parameters(), *projection.parameters(), centres]
        optimizer = torch.optim.Adam(parameters, lr=LEARNING_RATE)
        for _ in range(steps):
            i = torch.randint(0, n, (BATCH_SIZE,), generator=rng)
            a, b = x0[i] + adapter(x0[i]), x1[i] + adapter(x1[i])
            loss = adapter_loss(a, b, projection(a), projection(b), centres)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            z = x0 + adapter(x0)
            head = student_t_assignment(z, centres).argmax(1).numpy().astype(np.int64)
    features = z.numpy()
    candidates = {
        "head": head,
        "kmeans": np.asarray(fit_kmeans(features, num_clusters, random_state=random_state).labels_),
    }
    if n >= UMAP_MIN_ROWS:
        umap = fit_kmeans(features, num_clusters, random_state=random_state, init="umap")
        candidates["umap_kmeans"] = np.asarray(umap.groups_)
    return CachedPartitions(candidates, features, loss=float(loss.detach()))


def _check(embeddings, num_clusters: int) -> np.ndarray:
    e = check_embeddings(embeddings).astype(np.float32)
    hint = "at least 2 and fewer than the texts"
    check_scalar(num_clusters, "num_clusters", numbers.Integral, min_val=2, max_val=len(e) - 1, hint=hint)
    return e
