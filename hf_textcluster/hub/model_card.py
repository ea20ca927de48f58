"""Model cards for clusterers: one template (``hub/templates/model_card.md``) with the method's fragment in place
(``models/<method>/model_card.md``: its paper, objective, choices and weaknesses), filled with the model's config,
its training run (``training_run.json``), the measured ACC/NMI and the top keywords of each cluster.

>>> card = generate_model_card(model, training_run=run, texts=train_texts, repo_id="org/sccl-stackoverflow")
>>> write_model_card("runs/sccl-so")                 # README.md beside the weights, without pushing

What a card says is gathered by :mod:`hf_textcluster.hub.card_data` and its sections are rendered by
:mod:`hf_textcluster.hub.card_sections`. Cluster keywords and names come from :mod:`hf_textcluster.representation`;
the run record and the trained model are read by :mod:`hf_textcluster.runs.folder`.
"""

import os
import string
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._version import __version__
from ..cache import write_whole
from ..markup import escape_markdown
from ..modeling.loading_checks import check_finite_weights
from ..models import METHODS, card_fields
from ..models.remote_code import model_file
from ..runs.folder import RunFolder
from ..runs.record import RunRecord
from ..runs.saving import CARD_FILE, save_model_folder
from .card_data import (
    CardData,
    MetricsNotMeasuredWarning,
    card_texts,
    encoder_hub_id,
    keywords_and_sizes,
    measured_metrics,
    method_fields,
)
from .card_sections import format_value, front_matter, section_fields

CARD_TEMPLATE = Path(__file__).resolve().parent / "templates" / "model_card.md"
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


def generate_model_card(
    model,
    *,
    training_run: RunRecord | None = None,
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
        training_run: the run's record (its ``training_run.json``: method, dataset, recipe, overrides, precision,
            metrics), as :meth:`~hf_textcluster.runs.folder.RunFolder.read_record` reads it.
        metrics: ACC / NMI / ARI (``{"acc": ..}`` or ``{"eval_acc": ..}``, fractions); override those of
            ``training_run``. Missing ACC or NMI emits a
            :class:`~hf_textcluster.hub.card_data.MetricsNotMeasuredWarning` and the card says "not measured".
        texts: training texts: each cluster's top keywords are computed from them (``clusters`` = their predicted
            clusters, computed with the model when not given).
        repo_id: the hub id the card is for (used in the usage snippets).
        dataset_name, base_model, license, language, tags: front matter; ``dataset_name`` and ``base_model``
            default to the training run's dataset and encoder.
        remote_code: whether the repository ships the inference code (``trust_remote_code`` snippet and tag).
        why_no_keywords: without ``texts``, why the training texts were not found (e.g. "the run's input file ... is
            no longer there"), said in the card.
    """
    check_finite_weights(model)  # no card for a diverged model
    config = model.config
    method = METHODS.get(config.model_type)
    method_name = method.display_name if method else config.model_type.upper()
    run = training_run or RunRecord()
    dataset_name = dataset_name or run.dataset
    measured, missing = measured_metrics(run, metrics, stacklevel=3)  # a missing ACC / NMI names our caller
    texts = list(texts) if texts is not None else None
    keywords, sizes = keywords_and_sizes(model, texts, clusters, top_keywords)
    data = CardData(
        model=model,
        run=run,
        method_name=method_name,
        dataset_name=dataset_name,
        measured=measured,
        missing=missing,
        code_name=model_file(config.model_type) if remote_code and method else None,
        texts=texts,
        keywords=keywords,
        sizes=sizes,
        base_model=base_model or encoder_hub_id(run.encoder) or encoder_hub_id(getattr(config, "name_or_path", None)),
        model_name=repo_id.split("/")[-1]
        if repo_id
        else f"{method_name} clusterer" + (f" on {dataset_name}" if dataset_name else ""),
        repo_id=repo_id,
        why_no_keywords=why_no_keywords,
    )
    fields = {
        "front_matter": front_matter(data, tags=tags, language=language, license=license),
        **section_fields(data),
        "card_module": __name__,
        "library_version": __version__,
    }
    fields.update(card_fields(config)[0])
    fields.update({k: escape_markdown(format_value(v)) for k, v in method_fields(config).items() if k not in fields})
    return string.Template(_template_for(data.config.model_type, data.method_name)).safe_substitute(fields)


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
    ``output`` (``<model_dir>/README.md`` when ``output`` is None, in one save of the folder:
    :func:`~hf_textcluster.runs.saving.save_model_folder`; pass ``output="-"`` to only return it), whole or not at
    all: a symbolic link there is replaced, never written through.
    """
    model_dir = Path(model_dir)
    model, run = RunFolder(model_dir).open(model=model)
    texts, _ = card_texts(run, texts, data_dir, max_texts, card_kwargs)
    if texts is not None and model.tokenizer is None:
        warnings.warn(f"{model_dir} has no tokenizer: cluster keywords are not computed.", stacklevel=2)
        texts = None
    card = generate_model_card(model, training_run=run, texts=texts, **card_kwargs)
    if output is None:
        save_model_folder(model_dir, files={CARD_FILE: card})
    elif os.fspath(output) != "-":
        write_whole(output, card)
    return card


def edited_model_card(model, run: RunRecord | None, texts: Sequence[str] | None = None) -> str:
    """The card a save of an edited model writes again in its folder: keywords from ``texts``, else the run's
    training texts; scores measured before the edits are said to be so (without a warning)."""
    card_kwargs: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MetricsNotMeasuredWarning)
        texts, _ = card_texts(run, texts, None, 5000, card_kwargs)
        texts = texts if model.tokenizer is not None else None
        return generate_model_card(model, training_run=run, texts=texts, **card_kwargs)
