"""The default's tables in docs/results.md and README (``python -m training.bench auto`` stores the rows): every
candidate against the served one and the oracle, the variants, the confirmation corpora, and how each criterion and
each form of the do-no-harm guard would have chosen."""

from __future__ import annotations

import statistics

from hf_textcluster.markup import escape_markdown

from .auto import RECOMPUTED, REMADE, SECTION, row_criteria, split_of
from .common import ROLE_TITLES, default_baselines, mean_std, run_header, train_time


def remade_mark(rows: list[dict]) -> str:
    """``‡`` where a confirmation corpus serves a choice re-made after its run (a rule that came later, so chosen with
    the run's result in view), else nothing."""
    return "‡" if any(r.get("served_note") == REMADE and split_of(r["dataset"]) != "tuning" for r in rows) else ""


def shallow_best(rows: list[dict], dataset: str) -> tuple[float, str] | None:
    """The strongest shallow baseline of ``dataset`` (mean ACC over seeds): MiniLM + k-means, the BERTopic way at
    the true K, and BERTopic's default."""
    pools = {
        "MiniLM + k-means": [r for r in default_baselines(rows) if r["method"] == "embeddings-kmeans"],
        "BERTopic way": [r for r in rows if r["section"] == "auto-k" and r["method"] == "bertopic-kmeans"],
        "BERTopic default": [r for r in rows if r["section"] == "auto-k" and r["method"] == "bertopic"],
    }
    best = None
    for label, pool in pools.items():
        values = [r["acc"] for r in pool if r["dataset"] == dataset and not r.get("variant")]
        if values and (best is None or statistics.mean(values) > best[0]):
            best = (statistics.mean(values), label)
    return best


def render(store: dict, rows: list[dict]) -> list[str]:
    """Per corpus: what the default serves, the oracle and the strongest shallow baseline; then every candidate's
    ACC."""
    from hf_textcluster.data import BENCHMARKS

    runs = [r for r in rows if r["section"] == SECTION]
    auto_rows = [r for r in runs if not r.get("variant")]
    if not auto_rows:
        return []
    out = [
        "## The default: `train --method auto`",
        "",
        "`train --method auto` saves the BERTopic way first (UMAP -> k-means on the pretrained encoder), trains its",
        "signals (today's default: SCAN's objective on the pretrained encoder's cached embeddings; `--signals` adds",
        "an SCCL adapter or fine-tunes the encoder; the earlier runs here fine-tuned it with SCCL and DEC",
        "self-training), gathers every read-out of each, k-means and UMAP k-means on the pretrained encoder's",
        "embeddings and their consensus, and serves another candidate than the BERTopic way only when a label-free",
        "criterion chooses it and it also wins in every held-out view (`hf_textcluster.runs.auto`). *served* = what",
        "the saved model serves (ACC of its clusters);",
        "*oracle* = the candidate with the highest ACC, **chosen with labels** (out of a user's reach). *strongest",
        "shallow baseline* = the best of MiniLM + k-means, the BERTopic way at the true K and BERTopic's default.",
        "ACC in %, mean ± std over seeds; wall time (training, candidates, choice) per CPU kind, as `train` runs:",
        "the other criteria the benchmark records for the criteria table below are timed apart (runs made before",
        "they were, on 2026-11-26, include them); a run that shared the CPU with another job (its note says so) is",
        "left out unless all of its kind did (†: no measurement).",
        "Criteria added after a run was made are computed on its kept models (`python -m training.bench auto",
        "--rescore`), and its choice re-made by today's criterion. A change after training (how candidates are",
        "read out, chosen or served) is measured by gathering a kept run's candidates again from its trained",
        "signal models (`--recompute-candidates`): the served clusters are then today's, the training and the",
        "wall time the run's own.",
        "",
        "| dataset | served ACC | served (candidate) | oracle ACC (labels) | oracle | strongest shallow baseline "
        "| Δ served − baseline | wall s | seeds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    from hf_textcluster.choosing.candidate_choice import DEFAULT_AUTO_CRITERION

    tuning_names = [n for n in BENCHMARKS if split_of(n) == "tuning"]
    for name in tuning_names:
        d = [r for r in auto_rows if r["dataset"] == name]
        if not d:
            continue
        served = statistics.mean(r["served_acc"] for r in d)
        best = shallow_best(rows, name)
        delta = f"{100 * (served - best[0]) + 0.0:+.1f}" if best else "–"
        wall = train_time(store, d, key="wall_seconds")
        out.append(
            f"| {name} | {mean_std([r['served_acc'] for r in d])} | {_counts(d, 'served_by_default')} "
            f"| {mean_std([r['oracle_acc'] for r in d])} | {_counts(d, 'oracle')} "
            f"| {f'{100 * best[0]:.1f} ({best[1]})' if best else '–'} | {delta} | {wall} | {len(d)} |"
        )
    recomputed = [r for r in auto_rows if RECOMPUTED in r.get("note", "")]
    if recomputed:
        out += ["", f"Candidates recomputed from the kept signal models: {len(recomputed)} of {len(auto_rows)} runs."]
    earlier = [r for r in auto_rows if r.get("selection_criterion") not in (None, DEFAULT_AUTO_CRITERION)]
    if earlier:
        which = ", ".join(f"{r['dataset']} seed {r['seed']} ({r['selection_criterion']})" for r in earlier)
        out += ["", f"Chosen by an earlier default criterion (runs not kept to re-score): {which}."]
    names = sorted({n for r in auto_rows for n in r["partitions"]}, key=_candidate_order)
    datasets = [n for n in tuning_names if any(r["dataset"] == n for r in auto_rows)]
    out += [
        "",
        "Every candidate's ACC (mean over seeds; the best per corpus in bold):",
        "",
        "| candidate | " + " | ".join(datasets) + " |",
        "|---|" + "---|" * len(datasets),
    ]
    best_per = {
        ds: max(
            statistics.mean(r["partitions"][n]["acc"] for r in auto_rows if r["dataset"] == ds and n in r["partitions"])
            for n in names
            if any(r["dataset"] == ds and n in r["partitions"] for r in auto_rows)
        )
        for ds in datasets
    }
    for n in names:
        cells = []
        for ds in datasets:
            values = [r["partitions"][n]["acc"] for r in auto_rows if r["dataset"] == ds and n in r["partitions"]]
            text = mean_std(values) if values else "–"
            cells.append(f"**{text}**" if values and abs(statistics.mean(values) - best_per[ds]) < 1e-12 else text)
        out.append(f"| {n} | " + " | ".join(cells) + " |")
    tuning = [r for r in auto_rows if split_of(r["dataset"]) == "tuning"]
    out += render_criteria(tuning, ROLE_TITLES["tuning"])
    out += render_guards([r for r in runs if split_of(r["dataset"]) == "tuning"], ROLE_TITLES["tuning"])
    confirmation = [r for r in auto_rows if split_of(r["dataset"]) != "tuning"]
    out += render_confirmation(store, confirmation)
    for split in SPLITS[1:]:
        out += render_criteria([r for r in confirmation if split_of(r["dataset"]) == split], ROLE_TITLES[split])
        out += render_guards([r for r in runs if split_of(r["dataset"]) == split], ROLE_TITLES[split])
    out += render_variants(store, [r for r in runs if r.get("variant")])
    out += ["", *run_header(store, runs), ""]
    return out


def render_variants(store: dict, variants: list[dict]) -> list[str]:
    """The runs of other configurations (``--variant``: e.g. another CPU kind), beside the default's: served and
    oracle ACC, the served candidate and the wall time per CPU kind; none enters the tables above."""
    if not variants:
        return []
    out = [
        "",
        "Other configurations of the same runs (each its `--variant`; not in the tables above):",
        "",
        "| dataset | variant | served ACC | served (candidate) | oracle ACC (labels) | wall s | seeds |",
        "|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in variants:
        groups.setdefault((r["dataset"], r["variant"]), []).append(r)
    for (dataset, variant), d in groups.items():
        out.append(
            f"| {dataset} | {variant} | {mean_std([r['served_acc'] for r in d])} | {_counts(d, 'served_by_default')} "
            f"| {mean_std([r['oracle_acc'] for r in d])} | {train_time(store, d, key='wall_seconds')} | {len(d)} |"
        )
    # what sets a run apart beyond its variant's name (e.g. made before a fix, never recomputed)
    notes = [
        f"- {dataset}, {variant}, seed {r['seed']}: {escape_markdown(r['note'])}"
        for (dataset, variant), d in groups.items()
        for r in d
        if r.get("note")
    ]
    if notes:
        out += ["", *notes]
    return out


def criterion_picks(row: dict, criterion: str) -> str:
    """The candidate ``criterion`` picks in ``row`` (the highest value; ties: the first listed)."""
    from hf_textcluster.choosing.candidate_choice import highest

    return highest(row_criteria(row)[criterion])


SPLITS = tuple(ROLE_TITLES)  # the sets in table order: tuning, confirmation, confirmation_only


def readme_table(store: dict, rows: list[dict], names: dict[str, str]) -> list[str]:
    """README's short table: per corpus (the tuning set, then the confirmation set), the shallow baselines (MiniLM +
    k-means, BERTopic's default, the run's own BERTopic-way partition ``pretrained/umap_kmeans``) against what
    ``train`` serves; *Δ strongest* = served minus the strongest of them (:func:`shallow_best`, TF-IDF + k-means too);
    *× time* = the default's wall time over BERTopic's own (UMAP -> k-means, encoding included) in the same row, "–"
    where a run did not time BERTopic; ``names``: display names of the corpora. A line under the tables explains each
    mark ("‡", "–") that they hold, and only those."""
    from hf_textcluster.data import BENCHMARKS

    auto_rows = [r for r in rows if r["section"] == SECTION and not r.get("variant")]
    if not auto_rows:
        return []
    order = [*BENCHMARKS, *sorted({r["dataset"] for r in auto_rows} - set(BENCHMARKS))]
    header = [
        "| corpus | set | texts | MiniLM + k-means | BERTopic default | the BERTopic way | `train` serves "
        "| Δ strongest | × time | seeds |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    tables: dict[bool, list[str]] = {False: list(header), True: list(header)}  # keyed by "confirmation-only"
    for name in sorted(order, key=lambda n: (SPLITS.index(split_of(n)), order.index(n))):
        d = [r for r in auto_rows if r["dataset"] == name]
        if not d:
            continue
        bertopic = statistics.mean(r["partitions"]["pretrained/umap_kmeans"]["acc"] for r in d)
        served = statistics.mean(r["served_acc"] for r in d)
        kmeans, default = (_baseline(rows, name, method) for method in ("embeddings-kmeans", "bertopic"))
        strongest = max([bertopic, *(v for v in (kmeans, default, _baseline(rows, name, "tfidf-kmeans")) if v)])
        ratios = [r["wall_seconds"] / r["bertopic_seconds"] for r in d if r.get("bertopic_seconds")]
        tables[split_of(name) == "confirmation_only"].append(
            f"| {names.get(name, name)} | {split_of(name).replace('_', '-')} | {d[0]['num_texts']:,} "
            f"| {_cell(kmeans)} | {_cell(default)} | {100 * bertopic:.1f} | {100 * served:.1f}{remade_mark(d)} "
            f"| {100 * (served - strongest) + 0.0:+.1f} "
            f"| {f'{statistics.median(ratios):.1f}x' if ratios else '–'} | {len(d)} |"
        )
    lead = "Confirmation-only: public corpora of the kinds users bring, never tuned on, reported as they fell."
    out = tables[False] if len(tables[True]) == len(header) else [*tables[False], "", lead, "", *tables[True]]
    return out + _marks_legend(out)


# What each mark of README's table means, said under it only when the table holds the mark.
MARKS = {
    "‡": "‡: a choice re-made from the run's stored criteria by a rule that came after the run.",
    "x | –": '× time "–": a run made before BERTopic was timed beside it.',
    "| – |": 'A baseline "–": not run on that corpus.',
}


def _marks_legend(table: list[str]) -> list[str]:
    """The lines explaining the marks ``table`` holds (none when it holds none)."""
    rows = [line for line in table if line.startswith("| ") and not line.startswith("| corpus")]
    # the × time cell is the third from the end: "| 1.9x | 1 |", or "| – | 1 |" where BERTopic was not timed
    untimed = any(line.rsplit("|", 3)[1].strip() == "–" for line in rows)
    baseline = any("–" in "|".join(line.split("|")[4:6]) for line in rows)
    said = [MARKS["‡"]] if any("‡" in line for line in rows) else []
    said += [MARKS["x | –"]] if untimed else []
    said += [MARKS["| – |"]] if baseline else []
    return ["", " ".join(said)] if said else []


def _baseline(rows: list[dict], dataset: str, method: str) -> float | None:
    """The mean ACC of a shallow baseline on ``dataset`` (None where it was not run): MiniLM or TF-IDF + k-means from
    the baselines section, BERTopic's default from the auto-K one."""
    pool = default_baselines(rows) if method != "bertopic" else [r for r in rows if r["section"] == "auto-k"]
    values = [r["acc"] for r in pool if r["method"] == method and r["dataset"] == dataset and not r.get("variant")]
    return statistics.mean(values) if values else None


def _cell(acc: float | None) -> str:
    return f"{100 * acc:.1f}" if acc is not None else "–"


def render_confirmation(store: dict, rows: list[dict]) -> list[str]:
    """Per confirmation corpus: what the default serves against the BERTopic way's partition of the same run, the
    criterion's pick and the oracle (labels)."""
    if not rows:
        return []
    out = [
        "",
        "The confirmation corpora (no rule was chosen on them; their numbers are reported as they fell, never",
        "tuned on; ‡: the served ACC is a choice re-made from the run's stored criteria by a rule that came",
        "after the run, so its result was in view): *BERTopic way* = the run's own `pretrained/umap_kmeans`",
        "candidate (UMAP -> k-means on the pretrained MiniLM, the true K); *pick* = the criterion's pick before the",
        "do-no-harm guard; *loss* =",
        "oracle ACC − served ACC (the oracle is **chosen with labels**).",
        "",
        "| dataset | set | texts | served ACC | served (candidate) | pick | BERTopic way | Δ served − BERTopic way "
        "| oracle ACC (labels) | oracle | loss | wall s | seeds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in sorted({r["dataset"] for r in rows}, key=lambda n: (SPLITS.index(split_of(n)), n)):
        d = [r for r in rows if r["dataset"] == name]
        bertopic = [r["partitions"]["pretrained/umap_kmeans"]["acc"] for r in d]
        delta = statistics.mean(r["served_acc"] for r in d) - statistics.mean(bertopic)
        loss = statistics.mean(r["oracle_acc"] - r["served_acc"] for r in d)
        out.append(
            f"| {name} | {split_of(name).replace('_', '-')} | {d[0]['num_texts']} "
            f"| {mean_std([r['served_acc'] for r in d])}{remade_mark(d)} "
            f"| {_counts(d, 'served_by_default')} | {_counts(d, 'criterion_pick')} | {mean_std(bertopic)} "
            f"| {100 * delta + 0.0:+.1f} | {mean_std([r['oracle_acc'] for r in d])} | {_counts(d, 'oracle')} "
            f"| {100 * loss:.1f} | {train_time(store, d, key='wall_seconds')} | {len(d)} |"
        )
    return out


def render_criteria(auto_rows: list[dict], split: str) -> list[str]:
    """Each label-free criterion's pick on every run that recorded them all: how often it is the oracle's, and its
    mean and largest ACC loss against the oracle (chosen with labels); beside it, always serving one candidate."""
    criteria = sorted({c for r in auto_rows for p in r["partitions"].values() for c in p.get("criteria", {})})
    runs = [r for r in auto_rows if all(set(criteria) <= set(p.get("criteria", {})) for p in r["partitions"].values())]
    if not runs or not criteria:
        return []
    default = runs[-1]["selection_criterion"]
    from hf_textcluster.choosing.candidate_choice import GUARD_CRITERIA, guarded_choice

    out = [
        "",
        f"Every criterion's pick on the {len(runs)} runs of the {split} that recorded every criterion, against the "
        "*oracle*",
        "(the best candidate by ACC, **chosen with labels**): *picks the oracle* = runs where it picked the oracle's",
        "candidate; loss = oracle ACC − its pick's ACC, in points. *always X* serves X whatever the texts. What",
        "`train --method auto` serves is in bold: its criterion's pick, unless the do-no-harm guard keeps",
        "`pretrained/umap_kmeans` (the BERTopic way) because the pick does not beat it in every one of "
        + ", ".join(f"`{g}`" for g in GUARD_CRITERIA)
        + ". *worst against the BERTopic way* = the lowest ACC of its pick minus the BERTopic way's, in points.",
        "",
        "| criterion | picks the oracle | mean loss | largest loss | worst against the BERTopic way "
        "| most often picks |",
        "|---|---|---|---|---|---|",
    ]

    rules = {c: (lambda r, c=c: criterion_picks(r, c)) for c in criteria}
    rules[f"{default} + do-no-harm guard"] = lambda r: guarded_choice(row_criteria(r), default)[0]
    for fixed in ("consensus", "pretrained/umap_kmeans"):
        if all(fixed in r["partitions"] for r in runs):
            rules[f"always {fixed}"] = lambda r, fixed=fixed: fixed
    for name, rule in rules.items():
        picks = [rule(r) for r in runs]
        losses, against = _losses(runs, picks)
        worst = f"{min(against) + 0.0:+.1f}" if against else "–"
        common = max(sorted(set(picks)), key=picks.count)
        label = f"**{name}**" if name == f"{default} + do-no-harm guard" else name
        out.append(
            f"| {label} | {sum(p == r['oracle'] for p, r in zip(picks, runs))} of {len(runs)} | "
            f"{statistics.mean(losses):.1f} | {max(losses):.1f} | {worst} | "
            f"{common} ({picks.count(common)}) |"
        )
    return out


def _losses(runs: list[dict], served: list[str]) -> tuple[list[float], list[float]]:
    """Per run, in points: the oracle's ACC (labels) minus the served candidate's, and the served candidate's ACC
    minus the BERTopic way's (for the runs that have that candidate)."""
    from hf_textcluster.choosing.candidate_choice import BERTOPIC_WAY

    losses = [100 * (r["oracle_acc"] - r["partitions"][s]["acc"]) for r, s in zip(runs, served)]
    against = [
        100 * (r["partitions"][s]["acc"] - r["partitions"][BERTOPIC_WAY]["acc"])
        for r, s in zip(runs, served)
        if BERTOPIC_WAY in r["partitions"]
    ]
    return losses, against


# The other forms of the do-no-harm guard compared with the default's (GUARD_CRITERIA): each the views a trained pick
# must win against the BERTopic way.
OTHER_GUARD_FORMS = {
    "no guard": (),
    "the lexical vote alone": ("knn_holdout_lexical",),
    "the lexical vote and the shared silhouette": ("knn_holdout_lexical", "silhouette_shared"),
}


def render_guards(auto_rows: list[dict], split: str) -> list[str]:
    """Each form of the do-no-harm guard (:data:`OTHER_GUARD_FORMS` and the default's) on the default criterion's
    pick, on the runs whose candidates recorded every view (every configuration: the guard must hold whatever trained
    the candidates): the served ACC against the oracle (labels) and against the BERTopic way."""
    from hf_textcluster.choosing.candidate_choice import BERTOPIC_WAY, GUARD_CRITERIA, guarded_choice

    forms = {**OTHER_GUARD_FORMS, "every view (the default)": GUARD_CRITERIA}
    views = set(GUARD_CRITERIA)
    runs = [
        r
        for r in auto_rows
        if BERTOPIC_WAY in r["partitions"]
        and all(views <= set(p.get("criteria", {})) for p in r["partitions"].values())
    ]
    if not runs:
        return []
    out = [
        "",
        f"The do-no-harm guard's forms on the {len(runs)} runs of the {split}, every configuration (`--variant`s",
        "included): the default criterion's pick is served only when it beats the BERTopic way in every view listed;",
        "*below by > 1* = runs served more than 1 ACC below the BERTopic way; loss = oracle ACC (**chosen with",
        "labels**) − served ACC.",
        "",
        "| guard | mean loss | largest loss | worst against the BERTopic way | below by > 1 "
        "| serves the BERTopic way |",
        "|---|---|---|---|---|---|",
    ]
    for name, guards in forms.items():
        served = [guarded_choice(row_criteria(r), r["selection_criterion"], guards)[0] for r in runs]
        losses, against = _losses(runs, served)
        out.append(
            f"| {name} | {statistics.mean(losses):.1f} | {max(losses):.1f} | {min(against) + 0.0:+.1f} "
            f"| {sum(d < -1 for d in against)} of {len(runs)} | {served.count(BERTOPIC_WAY)} |"
        )
    return out


def _candidate_order(name: str) -> tuple[int, str]:
    return (0 if name == "consensus" else 2 if name.startswith("pretrained/") else 1, name)


def _counts(rows: list[dict], key: str) -> str:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r[key]] = counts.get(r[key], 0) + 1
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{n} ×{c}" for n, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
