"""The block ``hf-textcluster train`` ends with: what the model serves, its clusters (size and name) and the next
commands."""

from __future__ import annotations

import shlex

# Clusters listed by name; the rest are counted (a model with K = 200 would otherwise fill the screen).
MAX_LISTED_CLUSTERS = 20


def cluster_lines(names, max_listed: int = MAX_LISTED_CLUSTERS) -> list[str]:
    """One line per cluster, largest first: id, size, share and name (``ClusterNames`` of the training texts)."""
    total = max(1, names.num_texts)
    order = sorted(names.sizes, key=lambda k: (-names.sizes[k], k))
    width = len(str(max(names.sizes.values(), default=0)))
    lines = [
        f"  {k:>3}  {names.sizes[k]:>{width}} ({100 * names.sizes[k] / total:4.1f}%)  {names.names[k]}"
        for k in order[:max_listed]
    ]
    if len(order) > max_listed:
        rest = sum(names.sizes[k] for k in order[max_listed:])
        lines.append(f"  ... {len(order) - max_listed} more clusters with {rest:,} texts (see the report)")
    return lines


def summary(result, input_path: str | None, text_column: str = "text") -> str:
    """The end-of-training block: the served partition, the clusters by size with their names, the next commands."""
    model, out = result.model, result.output_dir
    served = getattr(model.config, "served_partition", "head")
    choice = getattr(result.trainer, "serving_choice", None) or {}
    why = f", chosen without labels by {choice['criterion']}" if choice.get("criterion") else ""
    lines = [f"Serves its {served} partition{why}; K = {model.config.num_clusters}."]
    names = result.cluster_names
    if names is not None and names.num_texts:
        sample = "" if names.num_texts >= len(result.trainer.train_dataset) else " (a seeded sample)"
        lines.append(
            f"Clusters on {names.num_texts:,} training texts{sample}, named after their {names.source} keywords "
            "(saved as the model's id2label):"
        )
        lines += cluster_lines(names)
    texts = shlex.quote(input_path) if input_path else "TEXTS.csv"
    column = f" --text-column {shlex.quote(text_column)}" if input_path and text_column != "text" else ""
    folder = shlex.quote(out)
    lines += [
        "Next:",
        f"  hf-textcluster info --model {folder}",
        f"  hf-textcluster predict --model {folder} --input {texts}{column} --output predictions.jsonl",
        f"  hf-textcluster report --model {folder} --input {texts}{column} --output report.html",
        f"  hf-textcluster card --model {folder} --output {shlex.quote(out.rstrip('/') + '/README.md')}",
    ]
    return "\n".join(lines)
