"""Editing a clusterer's clusters by weight arithmetic: merge, split, grow by one, and move with new texts.

Every head that serves clusters holds one row per cluster: a Student's t head its centroids (K x d), a linear head
(a method's classifier, the last layer of AECL's clustering network, a served ``refined_head``) its weights (K x d)
and biases (K); the calibration one centre, one distance distribution and one size per cluster. An edit builds the
new rows from the old ones and swaps them in, so the edited model serves its new partition through the same forward
pass, saves, loads, and ships as remote code like any other.

- **merge** (``merge_rows``): a merged cluster's row is the size-weighted mean of its members' rows (a centroid: the
  mean of the members' centres; a linear row ``w·x + b``: the weighted mean of the rows, which is exact for the
  weights of a discriminant with a shared covariance).
- **split** (``split_rows``): the cluster's members are split by k-means in the head's input space; a centroid head
  gets the parts' means as centroids; a linear row ``w_k·x + b_k`` becomes one row per part,
  ``w_k·x + b_k + s(|x - m|² - |x - m_j|²)`` (``m`` the members' mean, ``m_j`` the part's), which picks the nearest
  part among the cluster's rows and leaves the other clusters' rows as they were.
- **online update** (``OnlineCentres``): per cluster a running mean of its texts in each head's input space, with
  counts (mini-batch k-means' per-centre rule, learning rate ``1 / count``); a centroid moves to the running mean,
  a linear row by the same nearest-mean term as a split, ``s(|x - μ|² - |x - μ'|²)``.

Package-only: an edited model serves, saves and ships (as remote code too) without this module; the edits that call
these functions are :mod:`hf_textcluster.editing.curation`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from ..modeling.calibration import QUANTILE_LEVELS
from .kmeans import fit_kmeans

# The heads that hold one row per cluster, where a model has them (AECL's re-clustered `kmeans_head` too).
CLUSTER_ROW_MODULES = ("cluster_head", "refined_head", "kmeans_head")


def row_holders(model) -> dict[str, nn.Module]:
    """Name -> the module holding one row per cluster (a centroid head or an ``nn.Linear``; the last ``nn.Linear``
    of a sequential head), for every head of ``CLUSTER_ROW_MODULES`` ``model`` has (served or not)."""
    holders = {}
    for name in CLUSTER_ROW_MODULES:
        module = model._modules.get(name)
        if module is None:
            continue
        if isinstance(module, nn.Sequential):
            module = [m for m in module if isinstance(m, nn.Linear)][-1]
        rows = (
            module.centroids if is_centroid_head(module) else module.weight if isinstance(module, nn.Linear) else None
        )
        if rows is None or rows.shape[0] != model.config.num_clusters:
            raise NotImplementedError(
                f"{type(model).__name__}.{name} ({type(module).__name__}) holds no row per cluster: its clusters "
                "cannot be edited."
            )
        holders[name] = module
    return holders


def is_centroid_head(module: nn.Module) -> bool:
    return isinstance(getattr(module, "centroids", None), nn.Parameter)


@torch.no_grad()
def head_inputs(model, embeddings: torch.Tensor) -> tuple[torch.Tensor, dict]:
    """The served soft assignment (N x K) of ``embeddings`` and what each head's row holder received (name -> N x f
    fp32), captured by forward hooks, both on the CPU (where the edits compute); the method's head runs too when a
    refined head is served."""
    captured: dict[str, torch.Tensor] = {}
    handles = [
        module.register_forward_hook(lambda _m, x, _out, name=name: captured.__setitem__(name, x[0].float().cpu()))
        for name, module in row_holders(model).items()
    ]
    was_training = model.training
    model.eval()
    try:
        probs = model.cluster_probabilities(embeddings).float()
        if model.config.refined_head_dim:
            model.head_probabilities(embeddings)
    finally:
        model.train(was_training)
        for handle in handles:
            handle.remove()
    return probs.cpu(), captured


def _rows(module: nn.Module) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The holder's rows as fp32 on the CPU, where the edits compute with the texts' inputs (``head_inputs``);
    ``_set_rows`` puts the new rows back on the holder's device."""
    if is_centroid_head(module):
        return module.centroids.data.float().cpu(), None
    return module.weight.data.float().cpu(), module.bias.data.float().cpu() if module.bias is not None else None


def _set_rows(module: nn.Module, weight: torch.Tensor, bias: torch.Tensor | None) -> None:
    names = ("centroids",) if is_centroid_head(module) else ("weight", "bias")
    for name, rows in zip(names, (weight, bias)):
        old = getattr(module, name)
        if old is not None:
            setattr(module, name, nn.Parameter(rows.to(old.device, old.dtype), requires_grad=old.requires_grad))
    if isinstance(module, nn.Linear):
        module.out_features = weight.shape[0]


def _put(rows: torch.Tensor | None, new: torch.Tensor, slots: list[int]) -> torch.Tensor | None:
    """``rows`` with ``new`` as its rows ``slots`` (those past the end appended, in order); None for no ``rows``."""
    if rows is None:
        return None
    out = torch.cat([rows, rows[:1].expand(max(slots) + 1 - len(rows), *rows.shape[1:])])
    out[slots] = new.to(rows)
    return out


def _combine(matrix: torch.Tensor, plan: list[list[int]], weights: torch.Tensor) -> torch.Tensor:
    """Row i of the result: the ``weights``-weighted mean of ``matrix``'s rows ``plan[i]``."""
    rows = []
    for members in plan:
        w = weights[members].double()
        w = w / w.sum() if float(w.sum()) > 0 else torch.full_like(w, 1.0 / len(members))
        rows.append(torch.tensordot(w, matrix[members].double(), dims=1))
    return torch.stack(rows).to(matrix.dtype)


@torch.no_grad()
def merge_rows(
    model, plan: list[list[int]], inputs: dict[str, torch.Tensor] | None = None, labels: torch.Tensor | None = None
) -> None:
    """Give ``model`` ``len(plan)`` clusters, cluster i made of the old clusters ``plan[i]`` (weighted by size): every
    row holder and the calibration (centres averaged, the members' distance quantiles' maximum, sizes summed).

    ``inputs`` / ``labels``: what each holder received for some texts and their old clusters (see
    :func:`head_inputs`): the weights are then the clusters' shares of these texts, and a merged linear row's bias
    is set so that on the merged clusters' texts it scores, on average, what the best of the old rows did (the mean
    of the rows alone loses ground: ``-|c|²`` of a mean centre is above the mean of ``-|c_i|²``)."""
    # each cluster's share of the texts (a cluster with none: half a text), else its calibration texts (equal when
    # uncalibrated or one is empty)
    weights = model.calibration.cluster_sizes.detach().float().cpu()
    if labels is not None:
        weights = torch.bincount(labels, minlength=model.config.num_clusters).float().clamp_min(0.5)
    elif not model.is_calibrated or bool((weights <= 0).any()):
        weights = torch.ones(model.config.num_clusters)
    for name, module in row_holders(model).items():
        weight, bias = _rows(module)
        new_weight = _combine(weight, plan, weights)
        new_bias = _combine(bias, plan, weights) if bias is not None else None
        x = (inputs or {}).get(name)
        if new_bias is not None and x is not None:
            for new_id, members in enumerate(plan):
                rows = torch.isin(labels, torch.tensor(members))
                if len(members) > 1 and bool(rows.any()):
                    old_best = (x[rows] @ weight[members].T + bias[members]).amax(dim=-1)
                    new_score = x[rows] @ new_weight[new_id] + new_bias[new_id]
                    new_bias[new_id] += (old_best - new_score).mean()
        _set_rows(module, new_weight, new_bias)
    cal = model.calibration
    centres = _combine(cal.centres.float().cpu(), plan, weights).double()
    cal.centres = nn.functional.normalize(centres, dim=-1).to(cal.centres)
    cal.distance_quantiles = torch.stack([cal.distance_quantiles[members].amax(dim=0) for members in plan])
    cal.cluster_sizes = torch.stack([cal.cluster_sizes[members].sum() for members in plan])


def nearest_mean_rows(
    weight: torch.Tensor, bias: torch.Tensor, centre: torch.Tensor, parts: torch.Tensor, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Linear rows ``w·x + b + scale·(|x - centre|² - |x - m_j|²)`` for each part mean ``m_j`` (rows of ``parts``;
    ``weight``, ``bias`` and ``centre`` broadcast against them: one row for all parts, or a row per part)."""
    return weight + 2 * scale * (parts - centre), bias - scale * ((parts**2).sum(dim=-1) - (centre**2).sum(dim=-1))


def spread(inputs: torch.Tensor, labels: torch.Tensor) -> float:
    """The mean squared distance per dimension of ``inputs`` to their group's mean: the scale of a linear row's
    nearest-mean term is ``1 / (2 * spread)`` (the weights of a discriminant with that isotropic covariance)."""
    means = group_means(inputs, labels, int(labels.max()) + 1)
    return max(float(((inputs - means[labels]) ** 2).sum(dim=-1).mean()) / inputs.shape[1], 1e-8)


def group_means(x: torch.Tensor, labels: torch.Tensor, num_groups: int) -> torch.Tensor:
    """The mean of the rows of ``x`` in each of ``num_groups`` groups (``labels``); 0 for an empty group."""
    sums = torch.zeros(num_groups, x.shape[1], dtype=x.dtype).index_add_(0, labels, x)
    return sums / torch.bincount(labels, minlength=num_groups).clamp_min(1)[:, None].to(x.dtype)


def _safe_scale(logits: torch.Tensor, cluster: int, bonus: torch.Tensor, members: torch.Tensor, limit: float) -> float:
    """The largest scale ``s <= limit`` at which adding ``s * bonus`` to the ``cluster`` row's logits moves at most 1%
    of the texts across the cluster's boundary (members out, or other clusters' texts in)."""
    others = logits.clone()
    others[:, cluster] = -torch.inf
    margin = logits[:, cluster] - others.amax(dim=-1)  # > 0 for members, < 0 for the rest
    # a member leaves when s * bonus < -margin; another text joins when s * bonus > -margin
    at_risk = torch.where(members, bonus < 0, bonus > 0) & (bonus.abs() > 1e-12)
    bounds = (margin.abs()[at_risk] / bonus.abs()[at_risk]).double()
    allowed = int(0.01 * logits.shape[0])
    if bounds.numel() <= allowed:
        return limit
    return float(min(limit, torch.sort(bounds).values[allowed]))


@torch.no_grad()
def split_rows(
    model, cluster: int, inputs: dict[str, torch.Tensor], members: torch.Tensor, parts: torch.Tensor
) -> None:
    """Split ``cluster`` into ``parts.max() + 1`` clusters: the first part keeps its id, the others are appended.
    ``inputs``: each holder's inputs for some texts (see :func:`head_inputs`); ``members``: which of them are the
    cluster's; ``parts``: each member's part. A linear row's nearest-mean term is scaled so that at most 1% of these
    texts cross the cluster's boundary. A holder that did not run on them (a head not served) gets copies of the
    cluster's row."""
    added = list(range(model.config.num_clusters, model.config.num_clusters + int(parts.max())))
    num_parts = len(added) + 1
    for name, module in row_holders(model).items():
        weight, bias = _rows(module)
        x_all = inputs.get(name)
        if x_all is None:
            new_weight, new_bias = weight[cluster], None if bias is None else bias[cluster]
        else:
            x = x_all[members]
            means = torch.stack([x[parts == j].mean(dim=0) for j in range(num_parts)])
            if is_centroid_head(module):
                new_weight, new_bias = means, None
            else:
                centre = x.mean(dim=0)
                unit_w, unit_b = nearest_mean_rows(weight[cluster], bias[cluster], centre, means, 1.0)
                base = x_all @ weight[cluster] + bias[cluster]
                # the best of the new rows over the old one, per unit of scale; centred on the members
                bonus = (x_all @ unit_w.T + unit_b).amax(dim=-1) - base
                bonus = bonus - bonus[members].mean()
                scale = _safe_scale(x_all @ weight.T + bias, cluster, bonus, members, 1.0 / (2 * spread(x, parts)))
                new_weight, new_bias = nearest_mean_rows(weight[cluster], bias[cluster], centre, means, scale)
                # the cluster as a whole keeps its standing against the others: on its members, the best of its new
                # rows scores what its old row did, on average
                gain = (x @ new_weight.T + new_bias).amax(dim=-1) - (x @ weight[cluster] + bias[cluster])
                new_bias = new_bias - gain.mean()
        _set_rows(module, _put(weight, new_weight, [cluster, *added]), _put(bias, new_bias, [cluster, *added]))
    cal = model.calibration
    cal.centres = _put(cal.centres, cal.centres[cluster], added)
    cal.distance_quantiles = _put(cal.distance_quantiles, cal.distance_quantiles[cluster], added)
    cal.cluster_sizes = _put(cal.cluster_sizes, torch.zeros(()), added)


@torch.no_grad()
def append_row(
    model, inputs: dict[str, torch.Tensor], group: torch.Tensor, scales: dict[str, float], unit_embeddings: torch.Tensor
) -> None:
    """One more cluster, made of the texts ``group`` (a mask) among those whose holder inputs are ``inputs`` (the
    group's L2-normalised embeddings: ``unit_embeddings``): a centroid head gets the group's mean; a linear row the
    nearest-mean row ``2s·m·x + b`` (``s`` from ``scales``, else the group's spread), its bias ``b`` set between what
    the group's texts and the other texts need for it to win (90% of the group, 99% of the others kept out when both
    can be); the calibration the group's centre and distances."""
    for name, module in row_holders(model).items():
        weight, bias = _rows(module)
        x_all = inputs.get(name)
        if x_all is None:  # a head that is not served: a row that never wins
            new_weight = weight.mean(dim=0, keepdim=True)
            new_bias = torch.tensor(-1e4)
        elif is_centroid_head(module):
            new_weight, new_bias = x_all[group].mean(dim=0, keepdim=True), None
        else:
            x = x_all[group]
            scale = scales.get(name) or 1.0 / (2 * spread(x, torch.zeros(x.shape[0], dtype=torch.long)))
            new_weight = 2 * scale * x.mean(dim=0)
            best = (x_all @ weight.T + (bias if bias is not None else 0)).amax(dim=-1)
            needed = best - x_all @ new_weight  # the bias at which the new row ties each text's best
            need_group = torch.quantile(needed[group].double(), 0.9)
            rest = needed[~group]
            if rest.numel() and float(torch.quantile(rest.double(), 0.01)) > float(need_group):
                need_group = (need_group + torch.quantile(rest.double(), 0.01)) / 2
            new_bias = need_group.float() + 1e-4
        _set_rows(module, _put(weight, new_weight, [len(weight)]), _put(bias, new_bias, [len(weight)]))
    cal = model.calibration
    centre = nn.functional.normalize(unit_embeddings.double().mean(dim=0), dim=-1)
    distances = 1 - unit_embeddings.double() @ centre
    levels = torch.linspace(0, 1, QUANTILE_LEVELS, dtype=torch.float64)
    new = len(cal.centres)
    cal.centres = _put(cal.centres, centre[None], [new])
    cal.distance_quantiles = _put(cal.distance_quantiles, torch.quantile(distances, levels)[None], [new])
    cal.cluster_sizes = _put(cal.cluster_sizes, torch.tensor([float(unit_embeddings.shape[0])]), [new])


@dataclass
class UpdateResult:
    """What ``update(model, texts)`` did, per text (arrays of length N) and per cluster.

    Attributes:
        clusters: each text's cluster after the update (the new cluster's id for an accepted group's texts).
        distance: cosine distance of each text to its cluster's calibrated centre.
        far: texts farther from their nearest cluster's centre than that cluster's ``far_quantile`` of its texts.
        proposed: indices (into the texts) of a cohesive group among the far texts, proposed as a new cluster;
            None when there is none.
        accepted: whether ``proposed`` was added as a cluster (``accept_new=True``); its id is then ``new_cluster``.
        new_cluster: the id of the added cluster, or None.
        moved: per cluster (before any new one), how far its centre moved (largest over the model's heads).
    """

    clusters: np.ndarray
    distance: np.ndarray
    far: np.ndarray
    proposed: np.ndarray | None
    accepted: bool = False
    new_cluster: int | None = None
    moved: np.ndarray | None = None

    def to_dict(self) -> dict:
        """A summary for records (no per-text arrays)."""
        return {
            "texts": int(self.clusters.shape[0]),
            "far": int(self.far.sum()),
            "proposed": None if self.proposed is None else int(self.proposed.size),
            "accepted": self.accepted,
            "new_cluster": self.new_cluster,
        }


@dataclass
class OnlineCentres:
    """What an online update keeps between batches, per row holder: each cluster's running mean of its texts' inputs
    (``means``, K x f), how many texts made it (``counts``, K) and a linear head's nearest-mean ``scale``."""

    means: dict[str, torch.Tensor] = field(default_factory=dict)
    counts: torch.Tensor | None = None
    scales: dict[str, float] = field(default_factory=dict)

    def to_tensors(self) -> dict[str, torch.Tensor]:
        """A flat dict of tensors (``safetensors`` can save it)."""
        tensors = {f"means.{name}": value.contiguous() for name, value in self.means.items()}
        tensors.update({f"scale.{name}": torch.tensor([value]) for name, value in self.scales.items()})
        tensors["counts"] = self.counts
        return tensors

    @classmethod
    def from_tensors(cls, tensors: dict[str, torch.Tensor]) -> OnlineCentres:
        return cls(
            means={k.split(".", 1)[1]: v.float() for k, v in tensors.items() if k.startswith("means.")},
            counts=tensors["counts"].double(),
            scales={k.split(".", 1)[1]: float(v[0]) for k, v in tensors.items() if k.startswith("scale.")},
        )

    @classmethod
    def start(cls, model, inputs: dict[str, torch.Tensor], labels: torch.Tensor) -> OnlineCentres:
        """The state of ``model`` on texts it assigns ``labels`` (whose holder inputs are ``inputs``): a centroid
        head's means are its centroids, a linear head's the means of the texts' inputs per cluster."""
        num_clusters = model.config.num_clusters
        state = cls(counts=torch.bincount(labels, minlength=num_clusters).double())
        for name, module in row_holders(model).items():
            x = inputs.get(name)
            if x is not None and is_centroid_head(module):
                state.means[name] = module.centroids.detach().float().cpu().clone()
            elif x is not None:
                state.means[name] = group_means(x, labels, num_clusters)
                state.scales[name] = 1.0 / (2 * spread(x, labels))
        return state

    def grow(self, inputs: dict[str, torch.Tensor]) -> None:
        """One more cluster whose texts' inputs are ``inputs`` (after ``append_row``)."""
        n = next(iter(inputs.values())).shape[0] if inputs else 0
        for name, means in self.means.items():
            x = inputs.get(name)
            row = x.mean(dim=0, keepdim=True) if x is not None else means.mean(dim=0, keepdim=True)
            self.means[name] = torch.cat([means, row])
        self.counts = torch.cat([self.counts, torch.tensor([float(n)], dtype=self.counts.dtype)])

    @torch.no_grad()
    def update(self, model, inputs: dict[str, torch.Tensor], labels: torch.Tensor) -> torch.Tensor:
        """Move each cluster's mean by its new texts (``mean += m / (count + m) * (batch mean - mean)``, counts grow),
        and the model's rows with it. Returns how far each cluster's mean moved (K, the largest over holders)."""
        num_clusters = model.config.num_clusters
        batch_counts = torch.bincount(labels, minlength=num_clusters).double()
        moved = torch.zeros(num_clusters)
        for name, module in row_holders(model).items():
            x, old = inputs.get(name), self.means.get(name)
            if x is None or old is None:
                continue
            batch_means = group_means(x, labels, num_clusters)
            rate = (batch_counts / (self.counts + batch_counts).clamp_min(1)).float()[:, None]
            new = old + rate * (batch_means - old)
            if not is_centroid_head(module):
                # a linear row's first texts only start its mean (it had none: there is nothing to move from)
                old = torch.where((self.counts == 0)[:, None], new, old)
            moved = torch.maximum(moved, (new - old).norm(dim=-1))
            self.means[name] = new
            if is_centroid_head(module):
                module.centroids.copy_(new.to(module.centroids))
            else:
                delta_w, delta_b = nearest_mean_rows(0, 0, old, new, self.scales[name])
                module.weight.add_(delta_w.to(module.weight))
                if module.bias is not None:
                    module.bias.add_(delta_b.to(module.bias))
        self.counts = self.counts + batch_counts
        return moved


def cohesive_group(
    unit: np.ndarray, min_size: int, max_distance: float, random_state: int | None = 0
) -> np.ndarray | None:
    """The largest group of at least ``min_size`` rows of ``unit`` (L2-normalised embeddings) whose median cosine
    distance to their own centre is at most ``max_distance``, among k-means partitions of them into 1 to 3 groups;
    the rows' indices, or None."""
    best = None
    for k in range(1, min(3, unit.shape[0] // min_size) + 1):
        labels = fit_kmeans(unit, k, random_state=random_state).labels_ if k > 1 else np.zeros(len(unit), dtype=int)
        for group in range(k):
            rows = np.flatnonzero(labels == group)
            if rows.size < min_size:
                continue
            centre = _unit_centre(unit, rows)
            if np.median(1 - unit[rows] @ centre) <= max_distance and (best is None or rows.size > best.size):
                best = rows
    return best


def grown_group(unit: np.ndarray, rows: np.ndarray, centres: np.ndarray, steps: int = 3) -> np.ndarray:
    """``rows`` of ``unit`` (L2-normalised embeddings) grown by a few k-means steps against fixed ``centres`` (the
    existing clusters', L2-normalised): every row nearer to the group's centre than to each of ``centres`` joins it;
    the rows of the last step (a seed found among the far texts reaches the group's texts that were not far)."""
    nearest_old = (1 - unit @ centres.T).min(axis=1)
    for _ in range(steps):
        grown = np.flatnonzero(1 - unit @ _unit_centre(unit, rows) < nearest_old)
        if grown.size == 0 or np.array_equal(grown, rows):
            break
        rows = grown
    return rows


def is_distinct(unit: np.ndarray, rows: np.ndarray, centres: np.ndarray) -> bool:
    """Whether the centre of ``rows`` is at least as far (cosine) from every one of ``centres`` as the two closest
    of ``centres`` are from each other: a new cluster must stand apart as much as the existing ones do (a fringe of an
    existing cluster does not)."""
    if centres.shape[0] < 2:
        return True
    between = 1 - centres @ centres.T
    np.fill_diagonal(between, np.inf)
    return float((1 - centres @ _unit_centre(unit, rows)).min()) >= float(between.min())


def _unit_centre(unit: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The L2-normalised mean of ``unit[rows]``."""
    centre = unit[rows].mean(axis=0)
    return centre / max(np.linalg.norm(centre), 1e-12)
