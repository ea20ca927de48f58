"""Model cards for clusterers: one template (``hub/templates/model_card.md``) with the method's fragment in place
(``models/<method>/model_card.md``: its paper, objective, choices and weaknesses), filled with the model's config,
its training run (``training_run.json``), the measured ACC/NMI and the top keywords of each cluster.

>>> card = generate_model_card(model, training_run=run, texts=train_texts, repo_id="org/sccl-stackoverflow")
>>> write_model_card("runs/sccl-so")                 # README.md beside the weights, without pushing

Cluster keywords and names come from :mod:`hf_textcluster.representation`; the run record and the trained model are
read by :mod:`hf_textcluster.runs.train`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import string
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import transformers
from huggingface_hub import ModelCardData
from huggingface_hub.repocard_data import EvalResult
from transformers import PreTrainedConfig

from .._version import __version__
from ..data import CORPORA
from ..encoders import _PIP_SHIPPED_ENCODERS, shipped_encoder_id
from ..markup import escape_markdown, markdown_code, one_line
from ..models import METHODS
from ..representation import LearnedTopicsRepresentation, cluster_keywords
from ..runs.folder import RunFolder, find_training_texts, run_input_file
from ..runs.recipes import load_recipe
from .remote_code import model_file

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
NOT_MEASURED = "not measured"
PLACEHOLDER_REPO_ID = "your-org/your-model"

# Metrics of the model-index, in display order: key in the metrics dict -> (model-index type, display name).
CARD_METRICS = {"acc": ("accuracy", "ACC"), "nmi": ("nmi", "NMI"), "ari": ("ari", "ARI")}
REQUIRED_METRICS = ("acc", "nmi")
# Training arguments worth a row of the hyper-parameter table, in this order.
TRAINING_KEYS = (
    "per_device_train_batch_size",
    "learning_rate",
    "head_learning_rate",
    "lr_scheduler_type",
    "warmup_steps",
    "weight_decay",
    "max_steps",
    "num_train_epochs",
    "pad_to_max_length",
)


class MetricsNotMeasuredWarning(UserWarning):
    """A card was written without some of the clustering metrics (ACC / NMI)."""


# ----- pieces of the card -------------------------------------------------------------------------------------------
def normalize_metrics(metrics: Mapping[str, Any] | None) -> dict[str, float]:
    """``{"eval_acc": .., "eval_kmeans_nmi": ..}`` or ``{"acc": ..}`` -> ``{"acc": .., "kmeans_nmi": ..}`` (floats
    only; ``None`` / NaN values are dropped, i.e. count as not measured)."""
    normalized = {}
    for key, value in (metrics or {}).items():
        key = key[len("eval_") :] if key.startswith("eval_") else key
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            continue
        normalized[key] = float(value)
    return normalized


def encoder_hub_id(name_or_path: str | None) -> str | None:
    """A hub id for ``base_model``: a pip-shipped encoder's folder maps back to its hub id; other local folders
    have none."""
    if not name_or_path:
        return None
    name_or_path = str(name_or_path)
    if name_or_path in _PIP_SHIPPED_ENCODERS:
        return name_or_path
    hub_id = shipped_encoder_id(name_or_path)
    if hub_id is not None:
        return hub_id
    if os.path.exists(name_or_path) or os.path.isabs(name_or_path) or name_or_path.count("/") != 1:
        return None
    return name_or_path


def _method_fields(config) -> dict[str, Any]:
    """The config fields a clusterer adds to ``PreTrainedConfig`` (K, pooling, the method's hyper-parameters)."""
    base = {f.name for f in dataclasses.fields(PreTrainedConfig)}
    skip = base | {"encoder", "centroids_initialized"}
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.name not in skip}


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def training_command(run: Mapping[str, Any] | None, num_clusters: int, output_dir: str = "runs/model") -> str:
    """The ``hf-textcluster train`` command that reproduces ``run`` (a ``training_run.json``)."""
    if not run:
        return "# not recorded: this model was not trained with `hf-textcluster train` (no training_run.json)"
    parts = ["hf-textcluster train", f"--method {run.get('method', '?')}"]
    source = run_input_file(run)
    if run.get("dataset"):
        parts.append(f"--dataset {run['dataset']}")
    elif source:
        parts.append(f"--input {os.path.basename(source['path'])}")
        if source.get("text_column") not in (None, "text"):
            parts.append(f"--text-column {source['text_column']}")
        if source.get("label_column"):
            parts.append(f"--label-column {source['label_column']}")
        parts.append(f"--num-clusters {num_clusters}")
    else:
        parts += ["--input <your texts file>", f"--num-clusters {num_clusters}"]
    parts.append(f"--output-dir {output_dir}")
    parts.append(f"--recipe {run.get('recipe', 'cpu')}")
    if run.get("augmentation") and run["augmentation"] != "custom":  # "custom": views given with the data
        parts.append(f"--augmentation {run['augmentation']}")
    parts.append(f"--seed {run.get('seed', 0)}")
    encoder = encoder_hub_id(run.get("encoder"))
    if encoder and encoder != "sentence-transformers/all-MiniLM-L6-v2":
        parts.append(f"--encoder {encoder}")
    for key, value in (run.get("config_overrides") or {}).items():
        parts.append(f"--config {key}={json.dumps(value) if not isinstance(value, str) else value}")
    for key, value in (run.get("training_overrides") or {}).items():
        parts.append(f"--{key.replace('_', '-')} {_fmt(value)}")  # the CLI spells every option with dashes
    return " \\\n    ".join(one_line(part) for part in parts)


def _training_arguments(run: Mapping[str, Any] | None) -> dict[str, Any]:
    if not run or not run.get("method"):
        return {}
    try:
        values = dict(load_recipe(run["method"], run.get("recipe", "cpu"), run.get("dataset"))["training"])
    except ValueError:
        values = {}
    values.update(run.get("training_overrides") or {})
    schedule = run.get("schedule") or {}
    if schedule.get("max_steps"):  # the steps the run's schedule gave it (sized to its corpus), not the recipe's cap
        values["max_steps"] = schedule["max_steps"]
    values["seed"] = run.get("seed", 0)
    return values


def hyperparameters_section(config, run: Mapping[str, Any] | None) -> str:
    rows = [
        ("model", key, value) for key, value in _method_fields(config).items() if key not in ("id2label", "label2id")
    ]
    training = _training_arguments(run)
    rows += [("training", key, training[key]) for key in (*TRAINING_KEYS, "seed") if key in training]
    if run and run.get("precision"):
        rows.append(("training", "precision", run["precision"]))
    if run and run.get("augmentation"):
        rows.append(("data", "augmentation", run["augmentation"]))
    lines = ["| | hyper-parameter | value |", "|---|---|---|"]
    lines += [f"| {group} | {markdown_code(key)} | {escape_markdown(_fmt(value))} |" for group, key, value in rows]
    return "\n".join(lines)


def training_data_line(run: Mapping[str, Any], dataset_name: str | None) -> str:
    """What a model was trained on: a benchmark corpus (all of it or a sample), the user's file, or a Dataset."""
    count = f"{run['num_train_texts']:,} texts" if run.get("num_train_texts") else "texts"
    corpus = run.get("dataset") or run.get("corpus")
    source = run_input_file(run)
    if corpus in CORPORA:
        whole = run.get("dataset") and not run.get("num_test_texts")
        description = CORPORA[corpus].description.rstrip(".")
        line = f"{'the ' if whole else ''}{count} of the `{corpus}` benchmark corpus ({description})"
    elif dataset_name:
        line = f"{count} of {markdown_code(dataset_name)}"
    elif source:
        line = f"{count} of the file {markdown_code(os.path.basename(source['path']))}"
    else:
        line = f"{count} given to `train_clusterer` as a `datasets.Dataset`"
    augmentation = run.get("augmentation")
    if augmentation:
        views = "views given with the data" if augmentation == "custom" else f"{markdown_code(augmentation)} views"
        line += f", trained on two augmented views of each text ({views})"
    return line


def served_partition(config) -> str:
    """The partition a model serves (``config.served_partition``; ``"head"``: the method's own cluster head)."""
    return getattr(config, "served_partition", None) or "head"


def metrics_section(metrics: Mapping[str, float], dataset_name: str | None, served: str = "head") -> str:
    dataset = escape_markdown(dataset_name) if dataset_name else "the training texts"
    rows = []
    what = "the method's cluster head" if served == "head" else "what the model serves"
    for prefix, protocol in (
        ("", f"{markdown_code(served)} ({what})"),
        ("kmeans_", "k-means on the learned embeddings"),
    ):
        if prefix and not any(f"{prefix}{key}" in metrics for key in CARD_METRICS):
            continue
        cells = [
            f"{100 * metrics[f'{prefix}{key}']:.1f}" if f"{prefix}{key}" in metrics else NOT_MEASURED
            for key in CARD_METRICS
        ]
        rows.append(f"| {protocol} | {dataset} | " + " | ".join(cells) + " |")
    header = "| partition | dataset | ACC (%) | NMI (%) | ARI (%) |\n|---|---|---|---|---|"
    note = (
        "\n\nACC matches clusters to the gold classes with the Hungarian algorithm; labels were used for this "
        "evaluation only, never for training."
    )
    missing = [CARD_METRICS[key][1] for key in REQUIRED_METRICS if key not in metrics]
    if missing:
        note += (
            f"\n\n**{' and '.join(missing)} {'was' if len(missing) == 1 else 'were'} not measured** for this model "
            "(no labelled evaluation was recorded): judge it on your own data before use."
        )
    return header + "\n" + "\n".join(rows) + note


def topics_section(model, top_n: int = 4) -> str:
    """The topics a model learned (DEC-CRL's β_k, the paper's Table 4), or "" for a model without a topic model."""
    if not model.config.has_topic_model or not model.config.vocabulary:
        return ""
    topics = LearnedTopicsRepresentation(model).topics(top_n=top_n)
    id2label = model.config.id2label or {}
    num_topics = max(len(t) for t in topics.values())
    lines = [
        "",
        f"Topics the model learned for each cluster (the top {top_n} words of each of its {num_topics} topics, β_k; "
        "`model.cluster_topics()`):",
        "",
        "| cluster | label | " + " | ".join(f"topic {t + 1}" for t in range(num_topics)) + " |",
        "|---|---|" + "---|" * num_topics,
    ]
    for k, cluster_topics in sorted(topics.items()):
        words = " | ".join(", ".join(escape_markdown(word) for word in topic) for topic in cluster_topics)
        lines.append(f"| {k} | {escape_markdown(id2label.get(k, f'cluster_{k}'))} | {words} |")
    return "\n".join(lines)


def clusters_section(
    config,
    keywords: Mapping[int, Sequence[str]] | None,
    sizes: Mapping[int, int] | None,
    why_no_keywords: str | None = None,
) -> str:
    id2label = config.id2label or {}
    if keywords is None:
        why = (
            f"{why_no_keywords} (restore it, or pass `--input FILE` to `hf-textcluster card`, `texts=` to "
            "`write_model_card`)"
            if why_no_keywords
            else "the card was generated without training texts (pass `--input FILE` to `hf-textcluster card`, "
            "`texts=` to `generate_model_card` / `write_model_card`)"
        )
        lines = [
            f"Keywords not computed: {why}.",
            "",
            "| cluster | label |",
            "|---|---|",
        ]
        lines += [f"| {k} | {escape_markdown(id2label.get(k, f'cluster_{k}'))} |" for k in range(config.num_clusters)]
        return "\n".join(lines)
    total = max(sum((sizes or {}).values()), 1)
    lines = [
        "Top words of each cluster (class-based TF-IDF over the training texts assigned to it):",
        "",
        "| cluster | label | share of training texts | top keywords |",
        "|---|---|---|---|",
    ]
    for k in range(config.num_clusters):
        share = f"{100 * (sizes or {}).get(k, 0) / total:.1f}%"
        words = ", ".join(escape_markdown(word) for word in keywords.get(k, [])) or "(no training text assigned)"
        lines.append(f"| {k} | {escape_markdown(id2label.get(k, f'cluster_{k}'))} | {share} | {words} |")
    return "\n".join(lines)


def remote_code_section(repo_id: str, code_file: str | None) -> str:
    repo_id = one_line(repo_id).replace('"', "")
    if not code_file:
        return f"This repository ships no remote code: install `hf_textcluster` ({INSTALL}) to use it."
    return (
        "Without the package, with the inference code shipped in this repository "
        f"(`{code_file}` and the files it imports: config, model and pipeline, importing only torch, numpy and "
        "transformers; the same code the package runs — written for "
        f"transformers {transformers.__version__}; read it before trusting it):\n\n"
        "```python\n"
        "from transformers import AutoModel, pipeline\n\n"
        f'clusterer = pipeline("text-clustering", model="{repo_id}", trust_remote_code=True)\n'
        f'model = AutoModel.from_pretrained("{repo_id}", trust_remote_code=True)\n'
        "```"
    )


CARD_TEMPLATE = TEMPLATE_DIR / "model_card.md"
# The package is installed from a checkout of its source (no package index serves it).
INSTALL = 'from a checkout of its source: `pip install -e ".[default-encoder]"`'
GENERIC_USAGE = 'model.predict(["How do I join two tables in Oracle?"])         # cluster ids'
CHOICES_HEADING = "Choices followed"


def read_card_fragment(path: str | os.PathLike) -> dict[str, str]:
    """A method's card fragment (``models/<method>/model_card.md``): the body of each ``## <heading>`` by its
    lower-cased heading (``summary``, ``objective``, ``details``, ``usage``, ``usage note``, ``known weaknesses``,
    ``citation``); the section whose heading starts with "Choices followed" is ``choices``, its heading
    ``choices_title``. Text before the first heading (a comment) is ignored."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            heading = line[3:].strip()
            current = "choices" if heading.startswith(CHOICES_HEADING) else heading.lower()
            if current == "choices":
                sections["choices_title"] = [heading]
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    return {name: "\n".join(lines).strip("\n") for name, lines in sections.items()}


def _template_for(model_type: str, method_name: str) -> str:
    """The one card template with the method's fragment in place (its ``${...}`` config fields still to fill); a
    model of no registered method gets the generic parts."""
    method = METHODS.get(model_type)
    path = method.card_fragment if method is not None else None
    fragment = read_card_fragment(path) if path is not None and path.is_file() else {}
    choices, citation = fragment.get("choices"), fragment.get("citation")
    details, note, weaknesses = fragment.get("details"), fragment.get("usage note"), fragment.get("known weaknesses")
    pieces = {
        "article": "An" if method_name[:1].upper() in "AEFHILMNORSX" else "A",  # as the letter is spoken
        "summary": fragment.get("summary", ""),
        "objective": fragment.get("objective", f"{method_name} (model type `{model_type}`)").replace("\n", "\n  "),
        "details": f"{details}\n" if details else "",
        "usage": fragment.get("usage", GENERIC_USAGE),
        "usage_note": f"\n{note}\n" if note else "",
        "choices_section": f"\n### {fragment['choices_title']}\n\n{choices}\n" if choices else "",
        "weaknesses": f"{weaknesses}\n" if weaknesses else "",
        "citation_section": f"\n## Citation\n\n```bibtex\n{citation}\n```\n" if citation else "",
        "card_note": "" if fragment else "; the method has no\ncard template of its own yet",
    }
    return string.Template(CARD_TEMPLATE.read_text(encoding="utf-8")).safe_substitute(pieces)


# ----- the card -----------------------------------------------------------------------------------------------------
def _measured_metrics(run: Mapping[str, Any], metrics: Mapping[str, Any] | None) -> tuple[dict[str, float], list[str]]:
    """The metrics to report (``metrics`` over the run's) and the display names of the required ones missing."""
    measured = normalize_metrics(run.get("metrics"))
    measured.update(normalize_metrics(metrics))
    missing = [CARD_METRICS[key][1] for key in REQUIRED_METRICS if key not in measured]
    if missing:
        warnings.warn(
            f"The model card has no {' / '.join(missing)}: they were not measured (no `metrics=` and no evaluation in "
            "training_run.json). The card says 'not measured'; evaluate with `hf_textcluster.evaluate_clusterer` "
            "and pass `metrics=` to report them.",
            MetricsNotMeasuredWarning,
            stacklevel=3,
        )
    return measured, missing


def _keywords_and_sizes(model, texts, clusters, top_n: int):
    """Each cluster's top keywords and size over ``texts`` (predicted with the model unless ``clusters`` given)."""
    if texts is None:
        return None, None
    if clusters is None:
        if model.tokenizer is None:
            raise ValueError("Computing cluster keywords needs the model's tokenizer; set `model.tokenizer`.")
        clusters = model.predict(texts)
    clusters = np.asarray(clusters, dtype=int)
    num_clusters = model.config.num_clusters
    keywords = cluster_keywords(texts, clusters, num_clusters, top_n=top_n)
    return keywords, {k: int((clusters == k).sum()) for k in range(num_clusters)}


def _front_matter(
    *, config, model_type, run, texts, code_name, tags, dataset_name, model_name, measured, **card_data
) -> str:
    """The YAML front matter: tags (method, loss terms, dataset size, custom code) and the model-index results."""
    method = METHODS.get(model_type)
    card_tags = ["hf_textcluster", "text-clustering", "clustering", "unsupervised", model_type]
    if run:
        card_tags.append("generated_from_trainer")
    if run.get("num_train_texts") or texts is not None:  # the training set's size, else the texts given here
        card_tags.append(f"dataset_size:{run.get('num_train_texts') or len(texts)}")
    card_tags += [f"loss:{term}" for term in (method.loss_terms if method else ())]
    if code_name:
        card_tags.append("custom_code")
    card_tags += [t for t in (tags or []) if t not in card_tags]

    eval_results = [
        EvalResult(
            task_type="text-clustering",
            task_name="Text Clustering",
            dataset_type=dataset_name or "custom",
            dataset_name=dataset_name or "custom texts",
            dataset_split="train",
            metric_type=f"{prefix}{metric_type}",
            metric_name=f"{metric_name} ({label})",
            metric_value=round(measured[f"{prefix}{key}"], 4),
        )
        for prefix, label in (("", served_partition(config)), ("kmeans_", "k-means on embeddings"))
        for key, (metric_type, metric_name) in CARD_METRICS.items()
        if f"{prefix}{key}" in measured
    ]
    return ModelCardData(
        library_name="hf_textcluster",
        tags=card_tags,
        datasets=[dataset_name] if dataset_name else None,
        model_name=model_name if eval_results else None,
        eval_results=eval_results or None,
        metrics=[CARD_METRICS[k][0] for k in CARD_METRICS] if eval_results else None,
        **card_data,
    ).to_yaml()


_PARTITIONS = {
    "head": "the method's own cluster head (the paper's output)",
    "kmeans": "k-means on the trained embeddings (centres served by the nearest-centre rule)",
    "umap_kmeans": "UMAP -> k-means on the trained embeddings (the BERTopic way)",
}


def serving_line(config, run: Mapping[str, Any] | None) -> str:
    """What the model serves (``config.served_partition``) and, from ``training_run.json``'s ``serving``, how it was
    refined and chosen without labels."""
    served = served_partition(config)
    base, refined = served.split("+")[0], served.endswith("+refined")
    line = f"{markdown_code(served)}: {_PARTITIONS.get(base) or escape_markdown(base)}"
    record = (run or {}).get("serving") or {}
    if refined:
        how = record.get("refinement", {}).get(served, {})
        rounds = f" ({how['rounds']} rounds, {100 * how['changed']:.1f}% of the texts moved)" if how else ""
        line += f", refined by iterative classification{rounds} and served by a linear head on its embeddings"
    elif base == "umap_kmeans":  # `train`/`refine` fit a linear head to its clusters; `recluster` serves the centres
        line += (
            ", served by a linear head fitted to its clusters"
            if getattr(config, "refined_head_dim", 0)
            else ", served by the nearest of its clusters' centres"
        )
    if record.get("criterion") and record.get("served") == served:
        scores = ", ".join(f"{escape_markdown(name)} {value:.3f}" for name, value in record["scores"].items())
        line += f"; chosen without labels by {escape_markdown(record['criterion'])} (higher is better) among: {scores}"
    return line + "."


def calibration_lines(config) -> list[str]:
    """What the card says about the model's calibration (see :mod:`hf_textcluster.modeling.calibration`)."""
    n = getattr(config, "num_calibration_texts", 0)
    if not n:
        return [
            "- Not calibrated: the pipeline's `confidence` is None and `flag_outliers` is unavailable; "
            "`hf-textcluster calibrate --model DIR --input TRAINING_TEXTS` adds both."
        ]
    if getattr(config, "confidence_measure", "assignment_margin") == "assignment_margin":
        meaning = (
            "assigned less or as clearly (top-1 minus top-2 probability, as calibrated by older versions): 0.9 = "
            "clearer than 90% of the training texts."
        )
    else:
        meaning = (
            "whose margin is smaller or equal (how much nearer their cluster's centre than the nearest other centre): "
            "0.9 = more clearly in its cluster than 90% of the training texts, so a threshold keeps a known share."
        )
    return [
        f"- Calibrated on {n:,} training texts. The pipeline's `confidence` (beside `score`) is the share of them "
        + meaning,
        "- Outliers (off by default): with `flag_outliers=True`, a text farther from its cluster's centre than "
        '`outlier_quantile` (default 0.99) of that cluster\'s calibration texts gets cluster -1 (`"outlier"`) and '
        "its `nearest_cluster`, instead of being forced into it.",
    ]


def edit_lines(run: Mapping[str, Any]) -> list[str]:
    """What the card says about the edits made after training (``training_run.json``'s ``edits``), oldest first."""
    said = []
    for edit in run.get("edits") or []:
        op, clusters = edit.get("op"), edit.get("clusters") or []
        if op == "merge":
            said.append("merged clusters " + ", ".join(" + ".join(map(str, group)) for group in clusters))
        elif op == "split":
            said.append(f"split cluster {clusters[0]} into {edit.get('n')}" if clusters else "split a cluster")
        elif op == "update":
            new = f", new cluster {edit['new_cluster']} accepted" if edit.get("new_cluster") is not None else ""
            said.append(f"updated with {edit.get('texts', 0):,} new texts{new}")
    if not said:
        return []
    scores = (
        " (the scores measured on the trained model are kept as `metrics_before_edits`)"
        if run.get("metrics_before_edits")
        else ""
    )
    return [
        f"- Edited after training{scores}: " + "; ".join(said) + f" ({run.get('num_clusters', '?')} clusters now; "
        "each edit's record is in `training_run.json`'s `edits`, and the folder it was made from was kept)."
    ]


def score_line(config) -> str:
    """What the pipeline's ``score`` is for the served partition."""
    if served_partition(config) == "head":
        return (
            "- `score` is the method's own soft assignment (its cluster head's probability), not a calibrated "
            "confidence; rank texts by `confidence`."
        )
    return (
        f"- `score` is the probability of what serves {markdown_code(served_partition(config))} (see *Served "
        f"partition*), not the "
        "method's own soft assignment nor a calibrated confidence; rank texts by `confidence`."
    )


def names_line(config, keywords, names_record: Mapping[str, Any] | None = None) -> str:
    """The first limitation: what, if anything, describes the clusters in this card (``names_record``: the
    ``"names"`` of ``training_run.json`` that ``hf-textcluster name`` writes when a language model named them)."""
    id2label = config.id2label or {}
    named = any(str(v) != f"cluster_{k}" for k, v in id2label.items())
    if named and names_record and names_record.get("generator"):
        what = (
            f"their names (`id2label`; {names_record.get('generated', '?')} of {config.num_clusters} written by the "
            f"language model `{names_record['generator']}` from each cluster's keywords and typical texts, the "
            "others its keywords)"
        )
    elif named:
        what = "their names (`id2label`, computed from the training texts' keywords)"
    elif keywords is not None:
        what = "the keywords above"
    else:
        return (
            "- Clusters are unnamed: their ids are arbitrary and this card lists no keywords (`hf-textcluster card "
            "DIR --input TRAINING_TEXTS` adds them); check a sample of texts before relying on a cluster's meaning."
        )
    return f"- Cluster ids are arbitrary and only {what} describe them; check a sample of texts before relying on them."


def _limitations(
    config, run: Mapping[str, Any], missing: list[str], texts, base: str | None, why_no_keywords: str | None = None
) -> str:
    """The card's run-specific limitation lines (the template holds the method's general ones)."""
    lines = [score_line(config), *calibration_lines(config)]
    if run.get("recipe") == "cpu":
        steps = _training_arguments(run).get("max_steps")
        lines.append(
            f"- Trained with the short CPU recipe ({steps} steps), far shorter than the paper's schedule; the "
            "paper's numbers need the `paper` recipe."
        )
    if missing:
        lines.append("- Clustering quality (" + " / ".join(missing) + ") was not measured for this model.")
    if texts is None:
        lines.append(
            "- Cluster keywords were not computed for this card" + (f": {why_no_keywords}." if why_no_keywords else ".")
        )
    lines += config.card_fields()[1]
    lines += edit_lines(run)
    if base is None:
        lines.append("- The base encoder is a local folder, not a Hub model: `base_model` is not set.")
    return "\n".join(lines)


def generate_model_card(
    model,
    *,
    training_run: Mapping[str, Any] | None = None,
    metrics: Mapping[str, Any] | None = None,
    texts: Sequence[str] | None = None,
    clusters: Sequence[int] | None = None,
    repo_id: str | None = None,
    dataset_name: str | None = None,
    base_model: str | None = None,
    license: str = "apache-2.0",
    language: str | list[str] | None = "en",
    tags: Sequence[str] | None = None,
    remote_code: bool = True,
    top_keywords: int = 8,
    why_no_keywords: str | None = None,
) -> str:
    """The README.md (YAML front matter + markdown body) of a trained clusterer, from its method's template.

    Args:
        model: a clusterer (``SCCLModel``, ...).
        training_run: the ``training_run.json`` of the run (method, dataset, recipe, overrides, precision, metrics).
        metrics: ACC / NMI / ARI (``{"acc": ..}`` or ``{"eval_acc": ..}``, fractions); override those of
            ``training_run``. Missing ACC or NMI emits a :class:`MetricsNotMeasuredWarning` and the card says
            "not measured".
        texts: training texts: each cluster's top keywords are computed from them (``clusters`` = their predicted
            clusters, computed with the model when not given).
        repo_id: the hub id the card is for (used in the usage snippets).
        dataset_name, base_model, license, language, tags: front matter; ``dataset_name`` and ``base_model``
            default to the training run's dataset and encoder.
        remote_code: whether the repository ships the inference code (``trust_remote_code`` snippet and tag).
        why_no_keywords: without ``texts``, why the training texts were not found (e.g. "the run's input file ... is
            no longer there"), said in the card.
    """

    model._check_finite_weights()  # no card for a diverged model
    config = model.config
    model_type = config.model_type
    method = METHODS.get(model_type)
    method_name = method.display_name if method else model_type.upper()
    run = dict(training_run or {})
    dataset_name = dataset_name or run.get("dataset")
    measured, missing = _measured_metrics(run, metrics)
    code_name = model_file(model_type) if remote_code and method else None
    texts = list(texts) if texts is not None else None
    keywords, sizes = _keywords_and_sizes(model, texts, clusters, top_keywords)
    base = base_model or encoder_hub_id(run.get("encoder")) or encoder_hub_id(getattr(config, "name_or_path", None))
    model_name = (
        repo_id.split("/")[-1]
        if repo_id
        else f"{method_name} clusterer" + (f" on {dataset_name}" if dataset_name else "")
    )
    repo = repo_id or PLACEHOLDER_REPO_ID
    training_data = training_data_line(run, dataset_name) + (
        f"; {len(texts):,} of its texts give the keywords below" if texts is not None else ""
    )
    fields = {
        "front_matter": _front_matter(
            config=config,
            model_type=model_type,
            run=run,
            texts=texts,
            code_name=code_name,
            tags=tags,
            dataset_name=dataset_name,
            model_name=model_name,
            measured=measured,
            language=language,
            license=license,
            base_model=base,
        ),
        "model_name": escape_markdown(model_name),
        "method_name": method_name,
        "model_type": model_type,
        "repo_id": one_line(repo).replace('"', ""),
        "num_clusters": config.num_clusters,
        "pooling": config.pooling,
        "max_length": config.max_length,
        "base_model_text": _base_model_link(base),
        "training_data": training_data,
        "serving": serving_line(config, run),
        "metrics_section": metrics_section(measured, dataset_name, served_partition(config)),
        "clusters_section": clusters_section(config, keywords, sizes, why_no_keywords) + topics_section(model),
        "remote_code_section": remote_code_section(repo, code_name),
        "training_command": training_command(
            run, config.num_clusters, output_dir=f"runs/{repo_id.split('/')[-1]}" if repo_id else "runs/model"
        ),
        "hyperparameters_section": hyperparameters_section(config, run),
        "extra_limitations": _limitations(config, run, missing, texts, base, why_no_keywords),
        "names_limitation": names_line(config, keywords, run.get("names")),
        "install": INSTALL,
        "card_module": __name__,
        "library_version": __version__,
        "model_class": type(model).__name__,
    }
    fields.update(config.card_fields()[0])
    fields.update({k: escape_markdown(_fmt(v)) for k, v in _method_fields(config).items() if k not in fields})
    return string.Template(_template_for(model_type, method_name)).safe_substitute(fields)


def _base_model_link(base: str | None) -> str:
    """The base encoder: a link to its Hub page when it is a plain hub id, else its name, shown literally."""
    if not base:
        return "a local encoder (not on the Hub)"
    if re.fullmatch(r"[\w.-]+/[\w.-]+", base):
        return f"[`{base}`](https://huggingface.co/{base})"
    return markdown_code(base)


def sample_texts(texts: list[str], max_texts: int | None, seed: int = 0) -> list[str]:
    if max_texts is None or len(texts) <= max_texts:
        return texts
    rng = np.random.default_rng(seed)
    return [texts[i] for i in sorted(rng.choice(len(texts), size=max_texts, replace=False))]


def card_texts(
    run: dict | None,
    texts: Sequence[str] | None,
    data_dir: str | os.PathLike | None,
    max_texts: int | None,
    card_kwargs: dict,
) -> tuple[list[str] | None, str | None]:
    """The texts a card's keywords come from: ``texts``, else the run's training texts (see
    :meth:`~hf_textcluster.runs.folder.RunFolder.training_texts`), sampled down to ``max_texts``.

    Args:
        run: the run record (``training_run.json``) or ``None``.
        texts: texts the caller passed, or ``None``.
        data_dir: the benchmark files' folder.
        max_texts: the sample size (``None``: all).
        card_kwargs: the card's arguments; ``why_no_keywords`` is set there when the run's texts cannot be found.

    Returns:
        ``(texts or None, why they are missing or None)``; a warning says why when they are missing.

    Example:
        >>> card_texts(None, ["a", "b", "c"], None, 2, {})[0]  # doctest: +SKIP
        ['a', 'c']
    """
    why = None
    if texts is None:
        texts, why = find_training_texts(run, data_dir)
        if why:
            warnings.warn(f"Cluster keywords are not computed: {why}.", stacklevel=3)
            card_kwargs.setdefault("why_no_keywords", why)
    if texts is not None:
        texts = sample_texts(list(texts), max_texts)
    return texts, why


def write_model_card(
    model_dir: str | os.PathLike,
    output: str | os.PathLike | None = None,
    *,
    texts: Sequence[str] | None = None,
    data_dir: str | os.PathLike | None = None,
    max_texts: int | None = 5000,
    model=None,
    **card_kwargs,
) -> str:
    """Generate the card of a trained model directory (weights + ``training_run.json``) without pushing anything.

    The training texts for the cluster keywords are ``texts``, else the run's own input file (recorded in
    ``training_run.json`` by ``hf-textcluster train --input``), else the run's benchmark when its files are available
    locally (``data_dir`` / ``$HF_TEXTCLUSTER_DATA_DIR``), sampled down to ``max_texts``. The card is written to
    ``output`` (``<model_dir>/README.md`` when ``output`` is None; pass ``output="-"`` to only return it).
    """
    model_dir = Path(model_dir)
    model, run = RunFolder(model_dir).open(model=model)
    texts, _ = card_texts(run, texts, data_dir, max_texts, card_kwargs)
    if texts is not None and model.tokenizer is None:
        warnings.warn(f"{model_dir} has no tokenizer: cluster keywords are not computed.", stacklevel=2)
        texts = None
    card = generate_model_card(model, training_run=run, texts=texts, **card_kwargs)
    if output is None:
        output = model_dir / "README.md"
    if os.fspath(output) != "-":
        Path(output).write_text(card, encoding="utf-8")
    return card
