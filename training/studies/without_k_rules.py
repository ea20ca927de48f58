"""Label-free rules for K beyond "the best silhouette in the layout", estimated by leaving one tuning corpus out.

Offline: reads only ``without_k.jsonl`` (``without_k.py``'s per-task, per-K rows). Every rule reads the criteria of
k-means on the UMAP layout over the study's grid of K and serves k-means on the layout at the K it picks (the
``layout`` family); labels only score, by (ACC + NMI) / 2. The families and their parameter grids were fixed before
any of their results were seen:

- ``argmax``: the criterion's best K, with the grid from ``floor`` (2: the current ``umap_silhouette`` rule with
  ``sil_layout``; 3: "two clusters is rarely the answer a user asks for").
- ``smallest_within`` / ``largest_within``: the smallest (largest) K from ``floor`` whose criterion is within ``t``
  of the best, ``t`` a share of the curve's range over the grid (scale-free, so one grid serves every criterion): a
  1-SE-like rule towards the coarse (fine) end of the plateau.
- ``rank_sum`` / ``product``: the K with the best sum of per-task ranks, or product of per-task min-max-normalised
  values, of ``sil_layout`` and ``sil_emb``: a K both spaces agree on.
- ``peak``: the local maximum of the criterion's curve (in grid order) with the largest prominence, so a high K = 2
  at the curve's end does not win by being the end; the global best when the curve has no interior peak.
- ``log_prior``: the best of criterion + ``lam`` * ln K: the silhouette favours the coarsest split of nested groups
  (topics within themes), and a prior per doubling of K offsets that by a fixed amount, ``lam`` chosen in-fold.

Criteria: ``sil_layout``, ``sil_emb``, ``ch_layout`` (``log_prior``: the silhouettes only; ``rank_sum`` /
``product``: the two silhouettes). Ties go to the smaller K. A fold picks, on the other corpora's tasks, the
parameter (and criterion) of one family with the best mean, and applies it to the held-out corpus' tasks; ``all``
lets the fold pick the family too, with the current rule listed first so that ties keep it. Printed per family: the
in-sample best option and its mean over the 20 tasks, the LOCO mean over the 20 held-out tasks, the worst fold
against the current rule (held-out corpus mean, rule minus current), and on how many held-out tasks K is within
25% of the true K. The three GoogleNews corpora are one corpus's titles, snippets and both, so a second pass leaves
them out together (6 folds), the stricter estimate. Then, in sample, the K each family's best option picks per task,
and per held-out task the fold's choice for the two families that did not lose out of sample (this last printout was
added after the summary was seen; it selects nothing).
Run: ``python training/studies/without_k_rules.py`` (writes nothing; its printout is ``without_k_rules.txt``).
"""

from itertools import product

import numpy as np
from scipy.signal import find_peaks, peak_prominences
from without_k_loco import ROWS, value  # the script's folder is on sys.path

CRITERIA = ("sil_layout", "sil_emb", "ch_layout")
SILHOUETTES = ("sil_layout", "sil_emb")
FLOORS = (2, 3)
TOLERANCES = (0.02, 0.05, 0.1, 0.2)
LAMBDAS = (0.005, 0.01, 0.02, 0.04)
CURRENT = ("argmax", "sil_layout", 2, None)


def options():
    """(family, criterion, floor, parameter) for every rule, the current one first."""
    yield CURRENT
    for c, f in product(CRITERIA, FLOORS):
        if (c, f) != CURRENT[1:3]:
            yield ("argmax", c, f, None)
    for fam, c, f, t in product(("smallest_within", "largest_within"), CRITERIA, FLOORS, TOLERANCES):
        yield (fam, c, f, t)
    for fam, f in product(("rank_sum", "product"), FLOORS):
        yield (fam, "sil_layout+sil_emb", f, None)
    for c in CRITERIA:
        yield ("peak", c, 2, None)
    for c, lam in product(SILHOUETTES, LAMBDAS):
        yield ("log_prior", c, 2, lam)


def curve(task, criterion, floor) -> tuple[np.ndarray, np.ndarray]:
    ks = sorted(int(k) for k, v in task["layout"].items() if int(k) >= floor and criterion in v)
    return np.asarray(ks), np.asarray([task["layout"][str(k)][criterion] for k in ks], float)


def best(ks, score) -> int:
    """The K of the highest score, the smaller K on ties."""
    return int(ks[np.flatnonzero(score == score.max())[0]])


def pick_k(option, task) -> int:
    family, criterion, floor, param = option
    if family in ("rank_sum", "product"):
        ks, a = curve(task, "sil_layout", floor)
        _, b = curve(task, "sil_emb", floor)
        if family == "rank_sum":
            return best(ks, a.argsort().argsort() + b.argsort().argsort())
        norm = [(v - v.min()) / (v.max() - v.min() + 1e-12) for v in (a, b)]
        return best(ks, norm[0] * norm[1])
    ks, v = curve(task, criterion, floor)
    if family == "argmax":
        return best(ks, v)
    if family in ("smallest_within", "largest_within"):
        near = ks[v >= v.max() - param * (v.max() - v.min())]
        return int(near.min() if family == "smallest_within" else near.max())
    if family == "peak":
        peaks, _ = find_peaks(v)
        if not len(peaks):
            return best(ks, v)
        return best(ks[peaks], peak_prominences(v, peaks)[0])
    if family == "log_prior":
        return best(ks, v + param * np.log(ks))
    raise ValueError(family)


def held_tasks(corpora):
    return [(row["dataset"], name, t) for row in ROWS if row["dataset"] in corpora for name, t in row["tasks"].items()]


def served(option, task) -> tuple[int, float]:
    k = pick_k(option, task)
    return k, value(task["layout"][str(k)])


def mean(option, corpora) -> float:
    return float(np.mean([served(option, t)[1] for _, _, t in held_tasks(corpora)]))


def name(option) -> str:
    family, criterion, floor, param = option
    return f"{family}/{criterion}/from {floor}" + ("" if param is None else f"/{param:g}")


def loco(family_options, folds) -> dict:
    """Per fold the option best on the other folds' tasks, applied to the fold's tasks."""
    corpora = [c for fold in folds for c in fold]
    values, current, within, chosen, fold_deltas = [], [], 0, [], []
    for fold in folds:
        others = [c for c in corpora if c not in fold]
        option = max(family_options, key=lambda o: mean(o, others))  # first (current) on ties
        chosen.append(option)
        rule_v, cur_v = [], []
        for _, _, t in held_tasks(fold):
            k, v = served(option, t)
            rule_v.append(v)
            cur_v.append(served(CURRENT, t)[1])
            within += abs(k - t["K"]) <= 0.25 * t["K"]
        values += rule_v
        current += cur_v
        fold_deltas.append((np.mean(rule_v) - np.mean(cur_v), "+".join(fold)))
    return {
        "mean": float(np.mean(values)),
        "vs_current": float(np.mean(values) - np.mean(current)),
        "worst": min(fold_deltas),
        "within": within,
        "chosen": chosen,
    }


def report(folds, title):
    all_options = list(options())
    corpora = [c for fold in folds for c in fold]
    n_tasks = len(held_tasks(corpora))
    families = {"current": [CURRENT]}
    for o in all_options:
        families.setdefault(o[0], []).append(o)
    families["all"] = all_options
    print(f"\n{title}: {len(folds)} folds, {n_tasks} held-out tasks")
    print(
        "family | in-sample best option | in-sample mean | LOCO mean | LOCO vs current | worst fold vs current | "
        f"K within 25% (of {n_tasks}) | options chosen by the folds"
    )
    for fam, opts in families.items():
        top = max(opts, key=lambda o: mean(o, corpora))
        r = loco(opts, folds)
        picked = sorted({name(o) for o in r["chosen"]})
        print(
            f"{fam} | {name(top)} | {mean(top, corpora):.2f} | {r['mean']:.2f} | {r['vs_current']:+.2f} | "
            f"{r['worst'][0]:+.2f} ({r['worst'][1]}) | {r['within']} | {'; '.join(picked)}"
        )
    return families


def loco_detail(family_options, folds, title):
    """Per held-out task: the option its fold chose, the K it picked and what it served, against the current rule."""
    corpora = [c for fold in folds for c in fold]
    print(f"\n{title}: per held-out task, option chosen on the others | K | (ACC + NMI) / 2 | current K | current")
    for fold in folds:
        others = [c for c in corpora if c not in fold]
        option = max(family_options, key=lambda o: mean(o, others))
        for corpus, task_name, t in held_tasks(fold):
            (k, v), (k0, v0) = served(option, t), served(CURRENT, t)
            print(f"{corpus} | {task_name} | true {t['K']} | {name(option)} | {k} | {v:.1f} | {k0} | {v0:.1f}")


def per_task(options_shown):
    print("\nK picked per task (true K first), in sample, by the in-sample best option of each family")
    print("corpus | task | true K | " + " | ".join(name(o) for o in options_shown))
    for corpus, task_name, t in held_tasks([row["dataset"] for row in ROWS]):
        cells = []
        for o in options_shown:
            k, v = served(o, t)
            cells.append(f"{k} ({v:.1f})")
        print(f"{corpus} | {task_name} | {t['K']} | " + " | ".join(cells))


if __name__ == "__main__":
    corpora = [row["dataset"] for row in ROWS]
    print("every option: mean (ACC + NMI) / 2 over the 20 tasks in sample, and K within 25% of the true K")
    for o in sorted(options(), key=lambda o: -mean(o, corpora)):
        within = sum(abs(pick_k(o, t) - t["K"]) <= 0.25 * t["K"] for _, _, t in held_tasks(corpora))
        print(f"  {name(o):44s} {mean(o, corpora):.2f}  {within}")
    families = report([[c] for c in corpora], "leave one corpus out")
    google = [c for c in corpora if c.startswith("googlenews")]
    report([[c] for c in corpora if c not in google] + [google], "leave one corpus out, the GoogleNews three together")
    tops = [max(opts, key=lambda o: mean(o, corpora)) for fam, opts in families.items() if fam not in ("all",)]
    per_task(tops)
    for fam in ("argmax", "largest_within"):  # the families at or above the current rule out of sample
        loco_detail(families[fam], [[c] for c in corpora], f"leave one corpus out, {fam}")
