"""The sections of a model card, rendered from what :class:`~hf_textcluster.hub.card_data.CardData` gathered: the
YAML front matter, the results and clusters tables, the command that reproduces the run, the hyper-parameters and
what the model serves (its run-specific limitations: :mod:`~hf_textcluster.hub.card_limitations`). Each is a
markdown string for one field of the card template.
"""

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import transformers
from huggingface_hub import ModelCardData
from huggingface_hub.repocard_data import EvalResult

from ..data import CORPORA
from ..data.augmentation import AUGMENTERS
from ..markup import escape_markdown, markdown_code, one_line
from ..models import METHODS
from ..representation import LearnedTopicsRepresentation
from ..runs.record import RunRecord
from ..runs.training_texts import run_input_file
from .card_data import CARD_METRICS, CardData, encoder_hub_id, method_fields, served_partition, training_arguments
from .card_limitations import limitations, names_line

NOT_MEASURED = "not measured"
# The package is installed from a checkout of its source (no package index serves it).
INSTALL = 'from a checkout of its source: `pip install -e ".[default]"`'

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


def format_value(value: Any) -> str:
    """A value as the card shows it: a float in its shortest form (``1e-05``, ``0.5``), anything else as ``str``."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def _table(header: str, rows: Iterable[Sequence[Any]]) -> str:
    """A markdown table: ``header`` (``"| a | b |"``), its rule, and a line per row of cells."""
    rule = "|" + "---|" * (header.count("|") - 1)
    return "\n".join([header, rule, *("| " + " | ".join(map(str, row)) + " |" for row in rows)])


def _training_flags(overrides: Mapping[str, Any]) -> list[str]:
    """``training_overrides`` as ``train``'s options: dashes, precision as ``--precision``, the calibration sample
    and the encoding batch as ``--calibration-sample`` and ``--batch-size`` (the names every command gives them)."""
    from ..training.arguments import OPTION_NAMES as names

    bf16, fp16 = overrides.get("bf16"), overrides.get("fp16")
    precision = f"--precision {'bf16' if bf16 else 'fp16' if fp16 else 'fp32'}"
    flags = []
    for key, value in overrides.items():
        if key not in ("bf16", "fp16"):
            flags.append(f"--{names.get(key, key.replace('_', '-'))} {format_value(value)}")
        elif precision not in flags and value is not None:  # one --precision, where the first of them was
            flags.append(precision)
    return flags


def training_command(run: RunRecord, num_clusters: int, output_dir: str = "runs/model") -> str:
    """The ``hf-textcluster train`` command that reproduces ``run`` (its ``training_run.json``)."""
    if not run.method:
        return "# not recorded: this model was not trained with `hf-textcluster train` (no training_run.json)"
    corpus = run.dataset or run.corpus
    if corpus and run.augmentation not in (None, "custom", "recipe", *AUGMENTERS):  # the papers' precomputed views
        return (
            f"# trained on {corpus} with the papers' precomputed views, which only the repository's benchmark joins:\n"
            f"python -m training.bench {run.method} --datasets {corpus} --seeds {run.seed or 0} --data-dir <its data>"
        )
    parts = ["hf-textcluster train", f"--method {run.method}"]
    source = run_input_file(run)
    if run.dataset:
        parts.append(f"--dataset {run.dataset}")
    elif source:
        parts.append(f"--input {os.path.basename(source['path'])}")
        if source.get("text_column") not in (None, "text"):
            parts.append(f"--text-column {source['text_column']}")
        if source.get("label_column"):
            parts.append(f"--label-column {source['label_column']}")
        parts.append(f"--num-clusters {num_clusters}")
    else:
        parts += ["--input <your texts file>", f"--num-clusters {num_clusters}"]
    parts += [f"--output-dir {output_dir}", f"--recipe {run.recipe or 'cpu'}"]
    if run.augmentation and run.augmentation != "custom":  # "custom": views given with the data
        parts.append(f"--augmentation {run.augmentation}")
    parts.append(f"--seed {run.seed or 0}")
    encoder = encoder_hub_id(run.encoder)
    if encoder and encoder != "sentence-transformers/all-MiniLM-L6-v2":
        parts.append(f"--encoder {encoder}")
    for key, value in (run.config_overrides or {}).items():
        parts.append(f"--config {key}={json.dumps(value) if not isinstance(value, str) else value}")
    parts += _training_flags(run.training_overrides or {})
    return " \\\n    ".join(one_line(part) for part in parts)


def hyperparameters_section(config, run: RunRecord) -> str:
    training = training_arguments(run)
    rows = [
        ("model", key, value) for key, value in method_fields(config).items() if key not in ("id2label", "label2id")
    ]
    rows += [("training", key, training[key]) for key in (*TRAINING_KEYS, "seed") if key in training]
    rows += [("training", "precision", run.precision)] if run.precision else []
    rows += [("data", "augmentation", run.augmentation)] if run.augmentation else []
    cells = [(group, markdown_code(key), escape_markdown(format_value(value))) for group, key, value in rows]
    return _table("| | hyper-parameter | value |", cells)


def training_data_line(run: RunRecord, dataset_name: str | None) -> str:
    """What a model was trained on: a benchmark corpus (all of it or a sample), the user's file, or a Dataset."""
    count = f"{run.num_train_texts:,} texts" if run.num_train_texts else "texts"
    corpus = run.dataset or run.corpus
    source = run_input_file(run)
    if corpus in CORPORA:
        whole = run.dataset and not run.num_test_texts
        description = CORPORA[corpus].description.rstrip(".")
        line = f"{'the ' if whole else ''}{count} of the `{corpus}` benchmark corpus ({description})"
    elif dataset_name:
        line = f"{count} of {markdown_code(dataset_name)}"
    elif source:
        line = f"{count} of the file {markdown_code(os.path.basename(source['path']))}"
    else:
        line = f"{count} given to `train_clusterer` as a `datasets.Dataset`"
    augmentation = run.augmentation
    if augmentation:
        views = "views given with the data" if augmentation == "custom" else f"{markdown_code(augmentation)} views"
        line += f", trained on two augmented views of each text ({views})"
    return line


def metrics_section(metrics: Mapping[str, float], missing: Sequence[str], dataset_name: str | None, served: str) -> str:
    dataset = escape_markdown(dataset_name) if dataset_name else "the training texts"
    what = "the method's cluster head" if served == "head" else "what the model serves"
    protocols = {"": f"{markdown_code(served)} ({what})", "kmeans_": "k-means on the learned embeddings"}
    rows = [
        (
            protocol,
            dataset,
            *(f"{100 * metrics[p + k]:.1f}" if p + k in metrics else NOT_MEASURED for k in CARD_METRICS),
        )
        for p, protocol in protocols.items()
        if not p or any(p + k in metrics for k in CARD_METRICS)
    ]
    note = (
        "ACC matches clusters to the gold classes with the Hungarian algorithm; labels were used for this evaluation "
        "only, never for training."
    )
    if missing:
        note += (
            f"\n\n**{' and '.join(missing)} {'was' if len(missing) == 1 else 'were'} not measured** for this model "
            "(no labelled evaluation was recorded): judge it on your own data before use."
        )
    return _table("| partition | dataset | ACC (%) | NMI (%) | ARI (%) |", rows) + "\n\n" + note


def topics_section(model, top_n: int = 4) -> str:
    """The topics a model learned (DEC-CRL's β_k, the paper's Table 4), or "" for a model without a topic model."""
    if not model.config.has_topic_model or not model.config.vocabulary:
        return ""
    topics = LearnedTopicsRepresentation(model).topics(top_n=top_n)
    num_topics = max(len(t) for t in topics.values())
    rows = [
        (k, _label(model.config, k), *(", ".join(escape_markdown(word) for word in topic) for topic in cluster_topics))
        for k, cluster_topics in sorted(topics.items())
    ]
    header = "| cluster | label | " + " | ".join(f"topic {t + 1}" for t in range(num_topics)) + " |"
    return (
        f"\nTopics the model learned for each cluster (the top {top_n} words of each of its {num_topics} topics, β_k; "
        "`cluster_topics(model)`):\n\n" + _table(header, rows)
    )


def clusters_section(data: CardData) -> str:
    config, keywords, why_no_keywords = data.config, data.keywords, data.why_no_keywords
    if keywords is None:
        why = (
            f"{why_no_keywords} (restore it, or pass `--input FILE` to `hf-textcluster card`, `texts=` to "
            "`write_model_card`)"
            if why_no_keywords
            else "the card was generated without training texts (pass `--input FILE` to `hf-textcluster card`, "
            "`texts=` to `generate_model_card` / `write_model_card`)"
        )
        rows = [(k, _label(config, k)) for k in range(config.num_clusters)]
        return f"Keywords not computed: {why}.\n\n" + _table("| cluster | label |", rows)
    sizes = data.sizes or {}
    total = max(sum(sizes.values()), 1)
    rows = []
    for k in range(config.num_clusters):
        words = ", ".join(escape_markdown(word) for word in keywords.get(k, [])) or "(no training text assigned)"
        rows.append((k, _label(config, k), f"{100 * sizes.get(k, 0) / total:.1f}%", words))
    intro = "Top words of each cluster (class-based TF-IDF over the training texts assigned to it):\n\n"
    return intro + _table("| cluster | label | share of training texts | top keywords |", rows)


def _label(config, k: int) -> str:
    """Cluster ``k``'s name as a table cell."""
    return escape_markdown((config.id2label or {}).get(k, f"cluster_{k}"))


def remote_code_section(repo_id: str, code_file: str | None) -> str:
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


def front_matter(data: CardData, tags: Sequence[str] | None = None, **card_data) -> str:
    """The YAML front matter: tags (method, loss terms, dataset size, custom code) and the model-index results;
    ``card_data``: more fields of ``ModelCardData`` (``license``, ``language``)."""
    run, texts, measured, dataset_name = data.run, data.texts, data.measured, data.dataset_name
    method = METHODS.get(data.config.model_type)
    card_tags = ["hf_textcluster", "text-clustering", "clustering", "unsupervised", data.config.model_type]
    if run.method:  # a run `train` recorded
        card_tags.append("generated_from_trainer")
    if run.num_train_texts or texts is not None:  # the training set's size, else the texts given here
        card_tags.append(f"dataset_size:{run.num_train_texts or len(texts)}")
    card_tags += [f"loss:{term}" for term in (method.loss_terms if method else ())]
    if data.code_name:
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
        for prefix, label in (("", served_partition(data.config)), ("kmeans_", "k-means on embeddings"))
        for key, (metric_type, metric_name) in CARD_METRICS.items()
        if f"{prefix}{key}" in measured
    ]
    return ModelCardData(
        library_name="hf_textcluster",
        tags=card_tags,
        datasets=[dataset_name] if dataset_name else None,
        model_name=data.model_name if eval_results else None,
        eval_results=eval_results or None,
        metrics=[CARD_METRICS[k][0] for k in CARD_METRICS] if eval_results else None,
        base_model=data.base_model,
        **card_data,
    ).to_yaml()


_PARTITIONS = {
    "head": "the method's own cluster head (the paper's output)",
    "kmeans": "k-means on the trained embeddings (centres served by the nearest-centre rule)",
    "umap_kmeans": "UMAP -> k-means on the trained embeddings (the BERTopic way)",
    # a default (auto) run's candidates made without training
    "pretrained/kmeans": "k-means on the pretrained encoder's embeddings (this encoder was not fine-tuned)",
    "pretrained/umap_kmeans": "UMAP -> k-means on the pretrained encoder's embeddings (the BERTopic way; this "
    "encoder was not fine-tuned)",
    "consensus": "the consensus of a default run's candidate partitions",
    # a default run's candidates trained on the pretrained encoder's cached embeddings (the encoder not fine-tuned)
    "pretrained/scan": "SCAN's linear head on the pretrained encoder's embeddings (this encoder was not fine-tuned)",
    "adapter/head": "the cluster head of an adapter trained on the pretrained encoder's embeddings, served by a linear "
    "head fitted to its clusters on them (this encoder was not fine-tuned)",
    "adapter/kmeans": "k-means in the space of an adapter trained on the pretrained encoder's embeddings, served by a "
    "linear head fitted to its clusters on them (this encoder was not fine-tuned)",
    "adapter/umap_kmeans": "UMAP -> k-means in the space of an adapter trained on the pretrained encoder's embeddings "
    "(this encoder was not fine-tuned)",
}


def serving_line(config, run: RunRecord) -> str:
    """What the model serves (``config.served_partition``) and, from ``training_run.json``'s ``serving``, how it was
    refined and chosen without labels."""
    served = served_partition(config)
    base, refined = served.split("+")[0], served.endswith("+refined")
    if base not in _PARTITIONS:  # a default run's `<signal>/<read-out>`: that signal's read-out
        base = base.rpartition("/")[2]
    line = f"{markdown_code(served)}: {_PARTITIONS.get(base) or escape_markdown(base)}"
    record = run.serving or {}
    if refined:
        how = record.get("refinement", {}).get(served, {})
        rounds = f" ({how['rounds']} rounds, {100 * how['changed']:.1f}% of the texts moved)" if how else ""
        line += f", refined by iterative classification{rounds} and served by a linear head on its embeddings"
    elif base.endswith("umap_kmeans"):  # `train`/`refine` fit a linear head to it; `recluster` serves the centres
        line += (
            ", served by a linear head fitted to its clusters"
            if getattr(config, "refined_head_dim", 0)
            else ", served by the nearest of its clusters' centres"
        )
    if record.get("criterion") and record.get("served") == served:
        scores = ", ".join(f"{escape_markdown(name)} {value:.3f}" for name, value in record["scores"].items())
        line += f"; chosen without labels by {escape_markdown(record['criterion'])} (higher is better) among: {scores}"
    return line + "."


def base_model_link(base: str | None) -> str:
    """The base encoder: a link to its Hub page when it is a plain hub id, else its name, shown literally."""
    if not base:
        return "a local encoder (not on the Hub)"
    if re.fullmatch(r"[\w.-]+/[\w.-]+", base):
        return f"[`{base}`](https://huggingface.co/{base})"
    return markdown_code(base)


def section_fields(data: CardData) -> dict[str, Any]:
    """The template's fields that come from the model and its run (the front matter and the method's own aside)."""
    config, run, texts = data.config, data.run, data.texts
    repo_id = one_line(data.repo_id or "your-org/your-model").replace('"', "")  # a placeholder: for no repository yet
    keywords_from = f"; {len(texts):,} of its texts give the keywords below" if texts is not None else ""
    return {
        "model_name": escape_markdown(data.model_name),
        "method_name": data.method_name,
        "model_type": data.config.model_type,
        "repo_id": repo_id,
        "num_clusters": config.num_clusters,
        "pooling": config.pooling,
        "max_length": config.max_length,
        "base_model_text": base_model_link(data.base_model),
        "training_data": training_data_line(run, data.dataset_name) + keywords_from,
        "serving": serving_line(config, run),
        "metrics_section": metrics_section(data.measured, data.missing, data.dataset_name, served_partition(config)),
        "clusters_section": clusters_section(data) + topics_section(data.model),
        "remote_code_section": remote_code_section(repo_id, data.code_name),
        "training_command": training_command(
            run, config.num_clusters, f"runs/{(data.repo_id or 'model').split('/')[-1]}"
        ),
        "hyperparameters_section": hyperparameters_section(config, run),
        "extra_limitations": limitations(data),
        "names_limitation": names_line(config, data.keywords, run.names),
        "install": INSTALL,
        "model_class": type(data.model).__name__,
    }
