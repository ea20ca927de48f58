"""The model card's limitation lines that depend on the run: what ``score`` and ``confidence`` are, the calibration,
the edits after training and what names the clusters (the card template holds the method's general ones)."""

from collections.abc import Mapping
from typing import Any

from ..markup import escape_markdown, markdown_code
from ..models import card_fields
from ..runs.record import RunRecord
from .card_data import CardData, served_partition, training_arguments


def calibration_lines(config) -> list[str]:
    """What the card says about the model's calibration (see :mod:`hf_textcluster.modeling.calibration`)."""
    n = getattr(config, "num_calibration_texts", 0)
    if not n:
        return [
            "- Not calibrated: the pipeline's `confidence` is None and `flag_outliers` is unavailable; "
            "`hf-textcluster calibrate --model DIR --input TRAINING_TEXTS` adds both."
        ]
    meaning = (
        "whose margin is smaller or equal (how much nearer their cluster's centre than the nearest other centre): "
        "0.9 = more clearly in its cluster than 90% of the training texts, so a threshold keeps a known share."
    )
    outliers = (
        "text farther from its cluster's centre than `outlier_quantile` (default 0.99) of that cluster's calibration "
        'texts gets cluster -1 (`"outlier"`) and its `nearest_cluster`, instead of being forced into it'
    )
    return [
        f"- Calibrated on {n:,} training texts. The pipeline's `confidence` (beside `score`) is the share of them "
        + meaning,
        f"- Outliers (on: trained with `--outliers`): a {outliers}; `flag_outliers=False` turns it off for a call, "
        "`hf-textcluster reduce-outliers` for good."
        if getattr(config, "flag_outliers", False)
        else f"- Outliers (off by default): with `flag_outliers=True`, a {outliers}.",
    ]


def edit_lines(run: RunRecord) -> list[str]:
    """What the card says about the edits made after training (``training_run.json``'s ``edits``), oldest first."""
    said = []
    for edit in run.edits or []:
        op, clusters = edit.get("op"), edit.get("clusters") or []
        if op == "merge":
            said.append("merged clusters " + ", ".join(" + ".join(map(str, group)) for group in clusters))
        elif op == "split":
            parts = len(edit.get("new_ids") or [])
            said.append(f"split cluster {clusters[0]} into {parts}" if clusters else "split a cluster")
        elif op == "update":
            new = f", new cluster {edit['new_cluster']} accepted" if edit.get("new_cluster") is not None else ""
            said.append(f"updated with {edit.get('texts', 0):,} new texts{new}")
        elif op == "reduce_outliers":
            said.append(f"{edit.get('moved', 0):,} outliers assigned to their nearest cluster")
    if not said:
        return []
    kept = " (the scores measured on the trained model are kept as `metrics_before_edits`)"
    scores = kept if run.metrics_before_edits else ""
    return [
        f"- Edited after training{scores}: " + "; ".join(said) + f" ({run.num_clusters or '?'} clusters now; "
        "each edit's record is in `training_run.json`'s `edits`)."
    ]


def score_line(served: str) -> str:
    """What the pipeline's ``score`` is for the served partition."""
    if served == "head":
        return (
            "- `score` is the method's own soft assignment (its cluster head's probability), not a calibrated "
            "confidence; rank texts by `confidence`."
        )
    return (
        f"- `score` is the probability of what serves {markdown_code(served)} (see *Served partition*), not the "
        "method's own soft assignment nor a calibrated confidence; rank texts by `confidence`."
    )


def names_line(config, keywords, names_record: Mapping[str, Any] | None = None) -> str:
    """The first limitation: what, if anything, describes the clusters in this card (``names_record``: the
    ``"names"`` of ``training_run.json`` that ``hf-textcluster name`` writes when a language model named them)."""
    id2label = config.id2label or {}
    named = any(str(v) != f"cluster_{k}" for k, v in id2label.items())
    if named and names_record and names_record.get("generator"):
        what = (
            f"their names (`id2label`; {escape_markdown(names_record.get('generated', '?'))} of {config.num_clusters} "
            f"written by the language model {markdown_code(names_record['generator'])} from each cluster's keywords "
            "and typical texts, the others its keywords)"
        )
    elif named:
        what = "their names (`id2label`, computed from the training texts' keywords)"
    elif keywords is not None:
        what = "the keywords above"
    else:
        return (
            "- Clusters are unnamed: their ids are arbitrary and this card lists no keywords (`hf-textcluster card "
            "--model DIR --input TRAINING_TEXTS` adds them); check a sample of texts before relying on a cluster's "
            "meaning."
        )
    return f"- Cluster ids are arbitrary and only {what} describe them; check a sample of texts before relying on them."


def limitations(data: CardData) -> str:
    """The card's run-specific limitation lines (the template holds the method's general ones)."""
    config, run = data.config, data.run
    lines = [score_line(served_partition(config)), *calibration_lines(config)]
    if run.recipe == "cpu":
        steps = training_arguments(run).get("max_steps")
        lines.append(
            f"- Trained with the short CPU recipe ({steps} steps), far shorter than the paper's schedule; the "
            "paper's numbers need the `paper` recipe."
        )
    if data.missing:
        lines.append("- Clustering quality (" + " / ".join(data.missing) + ") was not measured for this model.")
    if data.texts is None:
        why = data.why_no_keywords
        lines.append("- Cluster keywords were not computed for this card" + (f": {why}." if why else "."))
    lines += card_fields(config)[1]
    lines += edit_lines(run)
    if data.base_model is None:
        lines.append("- The base encoder is a local folder, not a Hub model: `base_model` is not set.")
    return "\n".join(lines)
