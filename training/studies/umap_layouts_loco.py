"""Choosing how the BERTopic way lays out its neighbours, by leaving one corpus out (``umap_layouts.jsonl``).

Rules: one layout (seed 0, what BERTopic does), and of the first 3 or 5 layouts the partition agreeing most with the
others (mean NMI) or the one with the least within-cluster sum of squares in the pretrained space. Within each fold the
rule with the best mean ACC over the other corpora's tasks (the cheaper one on a tie within 0.05) is applied to the
held-out corpus' tasks. Prints per rule its mean ACC over all tasks and how many tasks it left 3 or more points below
the best of the five layouts (a merge), then the fold table.
Run: ``python training/studies/umap_layouts_loco.py``.
"""

import json
from pathlib import Path

import numpy as np

ROWS = [json.loads(line) for line in Path(__file__).with_name("umap_layouts.jsonl").read_text().splitlines()]


def most_agreeing(task: dict, n: int) -> int:
    nmi = np.asarray(task["nmi"])[:n, :n]
    return int(np.argmax((nmi.sum(1) - np.diag(nmi)) / (n - 1)))


def least_within_ss(task: dict, n: int) -> int:
    return int(np.argmin(task["within_ss"][:n]))


RULES = {  # name -> (layouts it costs, the layout it keeps)
    "1 layout": (1, lambda t: 0),
    "agreement of 3": (3, lambda t: most_agreeing(t, 3)),
    "agreement of 5": (5, lambda t: most_agreeing(t, 5)),
    "within-SS of 3": (3, lambda t: least_within_ss(t, 3)),
    "within-SS of 5": (5, lambda t: least_within_ss(t, 5)),
}


def accs(rule: str, rows: list[dict]) -> list[float]:
    keep = RULES[rule][1]
    return [t["acc"][keep(t)] for row in rows for t in row["tasks"].values()]


def merges(rule: str, rows: list[dict]) -> int:
    keep = RULES[rule][1]
    return sum(max(t["acc"]) - t["acc"][keep(t)] >= 3 for row in rows for t in row["tasks"].values())


if __name__ == "__main__":
    tasks = sum(len(r["tasks"]) for r in ROWS)
    print(f"{len(ROWS)} corpora, {tasks} tasks")
    for rule in RULES:
        acc, merged = np.mean(accs(rule, ROWS)), merges(rule, ROWS)
        print(f"{rule:>16}: mean ACC {acc:.2f}, tasks >= 3 below the best layout: {merged}")
    print("\n| held-out corpus | tasks | rule chosen on the others | its ACC | 1 layout | gain | merges |")
    print("|---|---|---|---|---|---|---|")
    gains = []
    for i, held in enumerate(ROWS):
        others = ROWS[:i] + ROWS[i + 1 :]
        scores = {rule: np.mean(accs(rule, others)) for rule in RULES}
        best = max(scores.values())
        chosen = min((r for r in RULES if scores[r] >= best - 0.05), key=lambda r: RULES[r][0])
        held_acc, base = np.mean(accs(chosen, [held])), np.mean(accs("1 layout", [held]))
        gains.append(held_acc - base)
        print(
            f"| {held['dataset']} | {len(held['tasks'])} | {chosen} | {held_acc:.2f} | {base:.2f} "
            f"| {held_acc - base:+.2f} | {merges(chosen, [held])} / {merges('1 layout', [held])} |"
        )
    print(f"\nleave-one-corpus-out estimate of the gain over one layout: {np.mean(gains):+.2f} (mean over corpora)")
