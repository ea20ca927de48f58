"""Leave-one-corpus-out estimate of label-free choice rules over the cached candidates (``cached_choice.jsonl``).

A rule: the candidates it may serve, the criterion that picks among them, and the guard views in which the pick
must beat the BERTopic way (else the BERTopic way is served). Within each fold the rule with the highest mean served
ACC on the other tuning corpora is chosen (labels score rules here, never a corpus' own choice) and applied to the
corpus left out; the held-out ACCs, against the BERTopic way and the best candidate (the oracle, chosen with labels),
are the estimate. Run: ``python training/studies/choice_loco.py``.
"""

import itertools
import json
from pathlib import Path

import numpy as np

BW = "pretrained/umap_kmeans"
GUARDS = ("knn_holdout_lexical", "knn_holdout_shared", "silhouette_shared")
ROWS = [json.loads(line) for line in Path(__file__).with_name("cached_choice.jsonl").read_text().splitlines()]


def rules():
    names = list(ROWS[0]["acc"])
    pools = {
        "all": names,
        "pretrained": [n for n in names if n.startswith("pretrained/")],
        "bw+scan": [BW, "pretrained/scan"],
        "bw+adapter": [BW] + [n for n in names if n.startswith("adapter/")],
    }
    criteria = list(ROWS[0]["criteria"])
    for (pool_name, pool), criterion in itertools.product(pools.items(), criteria):
        for r in range(len(GUARDS) + 1):
            for guards in itertools.combinations(GUARDS, r):
                yield (pool_name, criterion, guards), pool


def served(row, key, pool):
    _, criterion, guards = key
    values = row["criteria"][criterion]
    pick = max(pool, key=lambda n: values[n])
    if pick != BW and not all(row["criteria"][g][pick] > row["criteria"][g][BW] for g in guards):
        pick = BW
    return pick


def main():
    all_rules = list(rules())
    table = {}
    for key, pool in all_rules:
        table[key] = [row["acc"][served(row, key, pool)] for row in ROWS]
    out = []
    for i, row in enumerate(ROWS):
        rest = [j for j in range(len(ROWS)) if j != i]
        best = max(table, key=lambda k: (np.mean([table[k][j] for j in rest]), -len(k[2])))
        acc = table[best][i]
        pick = served(row, best, dict(all_rules)[best])
        out.append(
            {
                "left_out": row["dataset"],
                "rule": best,
                "served": pick,
                "acc": acc,
                "bertopic_way": row["acc"][BW],
                "oracle": max(row["acc"].values()),
            }
        )
    for o in out:
        print(
            f"{o['left_out']:15s} served {o['served']:22s} {o['acc']:5.1f}  BW {o['bertopic_way']:5.1f}  "
            f"oracle {o['oracle']:5.1f}  rule {o['rule']}"
        )
    delta = [o["acc"] - o["bertopic_way"] for o in out]
    loss = [o["oracle"] - o["acc"] for o in out]
    print(
        f"LOCO: mean served {np.mean([o['acc'] for o in out]):.1f}, "
        f"mean BW {np.mean([o['bertopic_way'] for o in out]):.1f},"
        f" Δ BW mean {np.mean(delta):+.1f} (min {min(delta):+.1f}, ≥+3 on {sum(d >= 3 for d in delta)}),"
        f" mean loss to the oracle {np.mean(loss):.1f}"
    )
    full = max(table, key=lambda k: (np.mean(table[k]), -len(k[2])))
    print("rule chosen on all tuning corpora:", full, f"mean {np.mean(table[full]):.1f}")


if __name__ == "__main__":
    main()
