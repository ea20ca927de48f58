"""Rules for K and the partition without labels, estimated by leaving one tuning corpus out (``without_k.jsonl``).

A rule is (the family whose grid a criterion scores, the criterion, what is served at the K it picks: a family, or
``pick:<criterion>``, the family whose partition at that K the criterion scores higher): families
``layout`` (k-means on the UMAP layout: the BERTopic way at K) and ``merged`` (HDBSCAN's clusters merged to K);
criteria ``sil_layout``, ``sil_emb``, ``ch_layout``; plus ``hdbscan_assigned`` (HDBSCAN's clusters, outliers joined to
the nearest). Within each fold the rule with the best mean of (ACC + NMI) / 2 over the other corpora's tasks is
applied to the held-out corpus' tasks. Printed: per rule its mean over all tasks, then per fold the rule chosen and
what it served against BERTopic's default (outliers as one cluster) and against k-means on the layout at the true K.
Run: ``python training/studies/without_k_loco.py``.
"""

import json
from pathlib import Path

import numpy as np

ROWS = [json.loads(line) for line in Path(__file__).with_name("without_k.jsonl").read_text().splitlines()]
FAMILIES = ("layout", "merged")
CRITERIA = ("sil_layout", "sil_emb", "ch_layout")


SERVED = (*FAMILIES, *(f"pick:{c}" for c in CRITERIA))


def rules():
    yield ("hdbscan_assigned",)
    for family in FAMILIES:
        for criterion in CRITERIA:
            for served in SERVED:
                yield (family, criterion, served)


def apply(rule, task) -> tuple[int, dict]:
    if rule == ("hdbscan_assigned",):
        return task["k_hdbscan"], task["hdbscan_assigned"]
    family, criterion, served = rule
    grid = {int(k): v for k, v in task[family].items() if criterion in v}
    if not grid:  # no K below HDBSCAN's count: its clusters as they are
        return task["k_hdbscan"], task["hdbscan_assigned"]
    k = max(grid, key=lambda k: (grid[k][criterion], -k))
    if served.startswith("pick:"):  # the family whose partition at K scores higher by that criterion
        by = served.split(":")[1]
        at_k = [task[f][str(k)] for f in FAMILIES if str(k) in task[f] and by in task[f][str(k)]]
        return k, max(at_k, key=lambda r: r[by]) if at_k else task["hdbscan_assigned"]
    other = {int(kk): v for kk, v in task[served].items()}
    return k, other.get(k, task["hdbscan_assigned"])


def tasks(names):
    for row in ROWS:
        if row["dataset"] in names:
            for name, task in row["tasks"].items():
                yield row["dataset"], name, task


def value(result) -> float:
    return (result["acc"] + result["nmi"]) / 2


def mean_value(rule, names) -> float:
    return float(np.mean([value(apply(rule, t)[1]) for _, _, t in tasks(names)]))


def true_k(task) -> dict | None:
    return task["layout"].get(str(task["K"]))


if __name__ == "__main__":
    corpora = [row["dataset"] for row in ROWS]
    print("rule: mean (ACC + NMI) / 2 over every task")
    for rule in sorted(rules(), key=lambda r: -mean_value(r, corpora)):
        print(f"  {'/'.join(rule):36s} {mean_value(rule, corpora):.2f}")
    print("\nleave one corpus out: the rule chosen on the others, per held-out task")
    print(
        "corpus | task | N | true K | rule | K found | ACC | NMI | BERTopic default K / outliers / ACC / NMI | "
        "layout k-means at true K ACC / NMI"
    )
    deltas = []
    for held in corpora:
        others = [c for c in corpora if c != held]
        rule = max(rules(), key=lambda r: mean_value(r, others))
        for name, task_name, task in tasks([held]):
            k, result = apply(rule, task)
            h = task["hdbscan"]
            t = true_k(task) or {"acc": float("nan"), "nmi": float("nan")}
            deltas.append((result["acc"] - h["acc"], result["nmi"] - h["nmi"], abs(k - task["K"]) <= 0.25 * task["K"]))
            print(
                f"{name} | {task_name} | {task['N']} | {task['K']} | {'/'.join(rule)} | {k} | {result['acc']:.1f} | "
                f"{result['nmi']:.1f} | {task['k_hdbscan']} / {100 * task['outliers']:.0f}% / {h['acc']:.1f} / "
                f"{h['nmi']:.1f} | {t['acc']:.1f} / {t['nmi']:.1f}"
            )
    d = np.asarray([(a, n) for a, n, _ in deltas])
    print(
        f"\nheld-out tasks: {len(deltas)}; against BERTopic's default: mean ΔACC {d[:, 0].mean():+.1f}, "
        f"mean ΔNMI {d[:, 1].mean():+.1f}, worst ΔACC {d[:, 0].min():+.1f}, worst ΔNMI {d[:, 1].min():+.1f}, "
        f"ΔNMI >= +3 on {(d[:, 1] >= 3).sum()}; K within 25% on {sum(w for _, _, w in deltas)}"
    )
