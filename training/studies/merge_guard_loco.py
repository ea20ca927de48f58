"""Leave one corpus out over ``merge_guard.py``'s tasks: the rule "serve plain k-means instead of the BERTopic way when
it scores higher in every view of V" for every V of one or two views, chosen on seven corpora (least summed ACC loss
against the better of the two; ties: fewer views, then the order listed) and applied to the eighth's tasks; then the
rule chosen on all tuning tasks applied once to the confirmation corpora's whole runs.
Run: ``python training/studies/merge_guard_loco.py`` (after ``merge_guard.py``, with and without ``SUBSETS=1``)."""

import itertools
import json
from pathlib import Path

HERE = Path(__file__).parent
W, K = "pretrained/umap_kmeans", "pretrained/kmeans"
TUNING = {
    "tweet",
    "agnews",
    "stackoverflow",
    "searchsnippets",
    "biomedical",
    "googlenews_ts",
    "googlenews_t",
    "googlenews_s",
}
KINDS = ("vote_ari", "vote_nmi", "vote_kappa", "silhouette")
VIEWS = [f"{kind}_{space}" for kind in KINDS for space in ("lexical", "pretrained", "shared")]
RULES = [(), *((v,) for v in VIEWS), *itertools.combinations(VIEWS, 2)]


def view(scores: dict, name: str) -> float:
    if name.endswith("_shared"):
        kind = name.removesuffix("_shared")
        return (scores[f"{kind}_lexical"] + scores[f"{kind}_pretrained"]) / 2
    return scores[name]


def served(task: tuple, rule: tuple) -> dict:
    way, kmeans = task[2], task[3]
    return kmeans if rule and all(view(kmeans, v) > view(way, v) for v in rule) else way


def loss(tasks: list, rule: tuple) -> float:
    return sum(max(t[2]["acc"], t[3]["acc"]) - served(t, rule)["acc"] for t in tasks)


def best(tasks: list) -> tuple:
    return min(RULES, key=lambda r: (round(loss(tasks, r), 6), len(r), RULES.index(r)))


def main() -> None:
    tasks = []
    for line in (HERE / "merge_guard.jsonl").read_text().splitlines():
        row = json.loads(line)
        tasks.append((row["dataset"], "whole", row["candidates"][W], row["candidates"][K]))
    for line in (HERE / "merge_guard_subsets.jsonl").read_text().splitlines():
        row = json.loads(line)
        tasks += [(row["dataset"], name, t[W], t[K]) for name, t in row["tasks"].items()]
    tuning = [t for t in tasks if t[0] in TUNING]
    print(f"{len(tuning)} tuning tasks; always the BERTopic way: loss {loss(tuning, ()):.1f}")
    total = 0.0
    for corpus in sorted({t[0] for t in tuning}):
        rule = best([t for t in tuning if t[0] != corpus])
        held = loss([t for t in tuning if t[0] == corpus], rule)
        total += held
        print(
            f"  {corpus:15s} rule chosen on the others: {rule or 'always the BERTopic way'}; held-out loss {held:.1f}"
        )
    print(f"leave-one-corpus-out loss {total:.1f}")
    rule = best(tuning)
    print(f"chosen on every tuning task: {rule} (in-sample loss {loss(tuning, rule):.1f})")
    for t in (t for t in tasks if t[0] not in TUNING):
        s = served(t, rule)
        way, kmeans = t[2]["acc"], t[3]["acc"]
        print(f"  confirmation {t[0]:10s} BERTopic way {way:.1f}, k-means {kmeans:.1f}, rule serves {s['acc']:.1f}")


if __name__ == "__main__":
    main()
