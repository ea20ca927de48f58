"""docs/results.md, the leaderboard and README's "leaderboard in short" table, rendered from the store alone.

Each section renders its own table (``<section>.render``); this module puts them in the page's order and writes
README's table between its markers. ``python -m training.bench render`` re-writes both from docs/results.json.
"""

from __future__ import annotations

from . import (
    augmentation,
    authors_sccl,
    auto_k,
    auto_tables,
    baselines,
    capabilities,
    comparisons,
    compute_curve,
    kmeans_init,
    leaderboard,
    method,
    partitions,
    phases,
    processes,
    scale,
    serving_head,
    speed,
    top_layers,
    update,
    without_k,
)
from . import (
    store as results,
)

# README's table of the default against the BERTopic way sits between these lines; every render rewrites it.
README_MARKERS = ("<!-- bench.py: the default against the BERTopic way -->", "<!-- /bench.py -->")
# and its table without K between these
README_WITHOUT_K_MARKERS = ("<!-- bench.py: without K -->", "<!-- /bench.py: without K -->")
README_CORPUS_NAMES = {
    "agnews": "AgNews",
    "searchsnippets": "SearchSnippets",
    "stackoverflow": "StackOverflow",
    "biomedical": "Biomedical",
    "googlenews_ts": "GoogleNews-TS",
    "googlenews_t": "GoogleNews-T",
    "googlenews_s": "GoogleNews-S",
    "tweet": "Tweet",
    "trec6": "TREC-6",
    "dbpedia": "DBpedia",
    "bbc": "BBC News",
    "banking77": "BANKING77",
    "clinc150": "CLINC150",
    "agnews_titles": "AG News titles",
}


def render(store: dict) -> str:
    """docs/results.md as text: every section that has rows, in a fixed order."""
    rows = store["rows"]
    out = [
        "# Results",
        "",
        "Written by `python -m training.bench` from `docs/results.json`; do not edit by hand. ACC and NMI in %, mean ± "
        "std over",
        "seeds. All runs on CPU with the pip-shipped `sentence-transformers/all-MiniLM-L6-v2` (the default encoder).",
        "Labels are used only for scoring. Paper columns are the numbers the papers report (other encoders, GPUs,",
        "longer training): they are a reference point, not a like-for-like comparison.",
        "",
    ]
    out += baselines.render(store, rows)
    out += method.render(store, rows)
    out += capabilities.render_topics(rows)
    out += capabilities.render_stages(rows)
    out += capabilities.render_serving(rows)
    out += method.render_side_by_side(rows)
    out += leaderboard.render_leaderboard(rows)[0]
    out += without_k.render(store, rows)
    out += auto_tables.render(store, rows)
    out += phases.render(store, [r for r in rows if r["section"] == phases.SECTION])
    out += compute_curve.render(store, rows)
    out += top_layers.render(store, rows)
    out += partitions.render_served_against_baselines(rows)
    out += comparisons.render_head_or_kmeans(rows)
    out += partitions.render(store, rows)
    out += serving_head.render(store, rows)
    out += comparisons.render_encoders(store, rows)
    out += augmentation.render(store, rows)
    out += kmeans_init.render(store, rows)
    out += update.render(store, rows)
    out += authors_sccl.render(store, [r for r in rows if r["section"] == "authors-sccl"])
    out += auto_k.render(store, [r for r in rows if r["section"] == "auto-k"])
    out += scale.render(store, [r for r in rows if r["section"] == "scale"])
    out += processes.render(store, [r for r in rows if r["section"] == "processes"])
    out += speed.render(store, [r for r in rows if r["section"] == "speed"])
    return "\n".join(out) + "\n"


def readme_with_table(text: str, table: list[str], markers: tuple[str, str] = README_MARKERS) -> str:
    """`text` with the lines between ``markers`` replaced by ``table`` (unchanged without markers or rows)."""
    start, end = markers
    if start not in text or end not in text or not table:
        return text
    head, rest = text.split(start, 1)
    return f"{head}{start}\n" + "\n".join(table) + f"\n{end}{rest.split(end, 1)[1]}"


def write_rendered(store: dict) -> None:
    """results.md from the store, and README's table of the default when the store is the repository's own."""
    results.RESULTS_MD.write_text(render(store))
    readme = results.README_MD
    if results.RESULTS_JSON.resolve() == (results.REPO / "docs" / "results.json").resolve() and readme.exists():
        table = auto_tables.readme_table(store, store["rows"], README_CORPUS_NAMES)
        text = readme_with_table(readme.read_text(), table)
        without = without_k.table(store["rows"], README_CORPUS_NAMES)
        readme.write_text(readme_with_table(text, without, README_WITHOUT_K_MARKERS))
