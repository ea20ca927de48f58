"""The precomputed augmented views of the benchmark corpora (``<augmented_dir>/<family>/<name>.csv``, by default
``<data_dir>/augmented``: files only the benchmark's data folder holds), joined to a corpus as ``text_aug1`` /
``text_aug2``. The package trains on a Dataset that has these columns; :func:`load_with_views` makes one, and
:func:`training_data` hands a benchmark run the corpus with its recipe's views.

The published augmented files were made by other groups from their own copies of the corpora, so they do not
always line up with the primary files (see the ``augmented/`` sections of SOURCES.md). :func:`join_views`
decides, per file, from the data itself:

* **Row-aligned** (same number of rows and at least 95% of the rows have exactly the primary text): the file was
  made from the primary corpus in the same order. The primary ``text`` and ``label`` are kept and the views are
  joined by row index. A few texts may differ (stackoverflow: 47 titles from Rakib's copy, which lost some quote
  characters); the views of those rows were made from that slightly different text. Label ids may be renumbered
  (tweet): they are ignored, after checking that they describe the same partition.
* **Own text** (anything else, e.g. the GoogleNews files, which hold Rakib's variant text in Rakib's order, or
  ``mist_family/tweet.csv``, sorted by label): the views belong to the file's own text, so the file's ``text``
  becomes the ``text`` column and the file's partition becomes the labels, and a warning is logged. Its label
  ids are translated to the primary corpus's ids, so that the ``ClassLabel`` names and ids mean the same class
  with and without augmentation. The translation matches classes by exact-text votes first, then by word
  overlap for classes with no exact match, and is verified to be one-to-one with equal class sizes; if it is not,
  a ``ValueError`` is raised instead of guessing.

Families (``--augmentation`` of the benchmark, ``augmentation`` of the recipes):

* ``"sccl_contextual"``: the main ``sccl_contextual/`` folder: two contextual word-substitution views
  ``text1``/``text2`` (RSTC's roberta/bert pair at aug_p 0.1 where it exists, MIST's 0.1/0.2 views elsewhere).
* ``"mist_contextual"``: one augmentation family for all 8 corpora: ``sccl_contextual/mist_family/`` for agnews,
  stackoverflow, googlenews_t and tweet, the main folder (MIST-made there) for the other four.
* ``"aecl_eda"``: AECL's EDA augmentations, **one** view ``text1``: it becomes ``text_aug1`` and the text itself
  becomes ``text_aug2`` (as AECL trains on ``(text0, text1)``). AECL published no GoogleNews-TS file.
"""

from __future__ import annotations

import logging
import os
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import datasets

from hf_textcluster.data.readers import read_csv_frame, require_columns

logger = logging.getLogger(__name__)

AUGMENTATION_FAMILIES: tuple[str, ...] = ("sccl_contextual", "mist_contextual", "aecl_eda")

# Minimum fraction of rows whose text equals the primary text, row by row, for a file to count as row-aligned.
ALIGNED_MIN_EQUAL = 0.95

_MIST_OWN_FOLDER = {"agnews", "stackoverflow", "googlenews_t", "tweet"}
_UNAVAILABLE = {("aecl_eda", "googlenews_ts"): "AECL published no GoogleNews-TS augmentation"}


def load_with_views(
    name: str,
    family: str,
    data_dir: str | os.PathLike | None = None,
    augmented_dir: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
) -> datasets.Dataset:
    """The benchmark corpus ``name`` (:func:`hf_textcluster.data.load_benchmark`) with the views of ``family``
    joined as ``text_aug1`` / ``text_aug2`` (see the module docstring), whose feature ``id`` names the family (what a
    training run records) and whose description says where they come from."""
    from hf_textcluster.data import default_data_dir, load_benchmark

    if family not in AUGMENTATION_FAMILIES:
        raise ValueError(
            f"Unknown augmentation {family!r}: precomputed views are one of {', '.join(AUGMENTATION_FAMILIES)}; "
            "an augmenter (word_deletion, ...) computes views with hf_textcluster.data.add_augmented_views()."
        )
    data_dir = default_data_dir() if data_dir is None else data_dir
    root = augmented_dir or (Path(data_dir) / "augmented" if data_dir else None)
    if root is None:
        raise ValueError(
            f"augmentation={family!r} needs the precomputed views: pass data_dir= (the views are read from "
            "<data_dir>/augmented) or augmented_dir=, or set HF_TEXTCLUSTER_DATA_DIR."
        )
    path = augmented_file(family, name, root)
    if not path.is_file():
        raise missing_file_error(family, name, path)
    corpus = load_benchmark(name, data_dir=data_dir, cache_dir=cache_dir)
    table = join_views(list(zip(corpus["text"], corpus["label"])), path, family, name)
    view = datasets.Value("string", id=family)
    features = datasets.Features({**corpus.features, "text_aug1": view, "text_aug2": view})
    info = corpus.info.copy()
    info.features = features
    info.description = f"{info.description} Views: {family} ({path}), " + (
        "row-aligned: primary text and labels."
        if table.row_aligned
        else "not row-aligned: `text` is the augmented file's own text, labels its partition in primary ids."
    )
    columns = {"text": table.texts, "label": table.labels, "text_aug1": table.views1, "text_aug2": table.views2}
    return datasets.Dataset.from_dict(columns, features=features, info=info)


def training_data(method: str, name: str, augmentation: str | None, recipe: str = "cpu", data_dir=None):
    """``(dataset, augmentation)`` for ``train_clusterer`` on the benchmark corpus ``name``: when the views asked for
    (``"recipe"``: the recipe's) are a precomputed family and ``method`` trains on views, the corpus with them joined
    and ``None`` (the views come with the Dataset); otherwise ``name`` and ``augmentation`` unchanged."""
    from hf_textcluster.models import get_method
    from hf_textcluster.runs.recipes import load_recipe

    family = load_recipe(method, recipe, name).get("augmentation") if augmentation == "recipe" else augmentation
    if family in AUGMENTATION_FAMILIES and get_method(method).uses_augmented_views:
        return load_with_views(name, family, data_dir), None
    return name, augmentation


def prepare_views(name: str, augmentation: str | None, data_dir=None, seed: int = 0) -> datasets.Dataset:
    """:func:`hf_textcluster.runs.train.prepare_dataset` for a benchmark corpus, a precomputed family joined from its
    files: the texts and views a kept run (its ``training_run.json`` ``augmentation``) trained on."""
    from hf_textcluster.runs.train import prepare_dataset

    if augmentation in AUGMENTATION_FAMILIES:
        return load_with_views(name, augmentation, data_dir)
    return prepare_dataset(name, augmentation, data_dir=data_dir, seed=seed)


def augmented_file(family: str, name: str, augmented_dir: str | os.PathLike) -> Path:
    """Path of the augmented file of ``name`` in ``family`` (it may not exist)."""
    root = Path(augmented_dir)
    if family == "mist_contextual":
        folder = "sccl_contextual/mist_family" if name in _MIST_OWN_FOLDER else "sccl_contextual"
        return root / folder / f"{name}.csv"
    return root / family / f"{name}.csv"


def missing_file_error(family: str, name: str, path: Path) -> FileNotFoundError:
    reason = _UNAVAILABLE.get((family, name))
    if reason:
        return FileNotFoundError(
            f"No precomputed {family!r} views for {name!r} ({reason}); looked for {path}. Use "
            "augmentation='sccl_contextual' or 'mist_contextual', or load without augmentation and compute views "
            "with hf_textcluster.data.add_augmented_views()."
        )
    return FileNotFoundError(
        f"Augmented file not found: {path}. Pass augmented_dir= pointing to the folder that holds "
        f"'{family}/' (by default <data_dir>/augmented), or load without augmentation."
    )


@dataclass
class JoinedRows:
    """A corpus' rows, column by column."""

    texts: list
    labels: list  # label ids of the primary corpus
    views1: list
    views2: list
    row_aligned: bool = True


def join_views(primary: list[tuple[str, int]], path: str | os.PathLike, family: str, name: str) -> JoinedRows:
    """Join the views of the augmented file ``path`` to the ``primary`` rows ``(text, label id)``.

    See the module docstring for the rule. Returns the final texts, label ids (the primary's) and two views.
    """
    frame = read_csv_frame(path)
    text_column = "text" if "text" in frame.columns else "text0"
    second = None if family == "aecl_eda" else "text2"
    require_columns(frame, ("label", text_column, "text1") + ((second,) if second else ()), path)
    aug_texts = frame[text_column].tolist()
    aug_labels = [label.strip() for label in frame["label"].tolist()]
    primary_texts = [text for text, _ in primary]
    primary_labels = [label for _, label in primary]

    equal = sum(a == b for a, b in zip(aug_texts, primary_texts))
    fraction = equal / max(len(primary), 1)
    row_aligned = len(frame) == len(primary) and fraction >= ALIGNED_MIN_EQUAL
    if row_aligned:
        _check_same_partition(aug_labels, primary_labels, path)
        if equal < len(primary):
            logger.info(
                f"{path}: {len(primary) - equal} of {len(primary)} texts differ from the primary {name} texts; their "
                "views were made from the augmented file's text."
            )
        texts, labels = primary_texts, primary_labels
    else:
        logger.warning(
            f"{path} is not row-aligned with the primary {name} corpus ({len(frame)} vs {len(primary)} rows, "
            f"{100 * fraction:.1f}% equal texts row by row): using the augmented file's own text as `text` (so each "
            "view belongs to the text it was made from) and its partition as labels, translated to the primary label "
            f"ids. Results are comparable with work that used this file, not with runs on the primary {name} text."
        )
        texts, labels = aug_texts, _translate_labels(aug_texts, aug_labels, primary_texts, primary_labels, path)
    views2 = frame[second].tolist() if second else list(texts)
    return JoinedRows(texts, labels, frame["text1"].tolist(), views2, row_aligned)


def _check_same_partition(aug_labels: list[str], primary_labels: list[str], path) -> None:
    pairs = set(zip(aug_labels, primary_labels))
    if not len(pairs) == len(set(aug_labels)) == len(set(primary_labels)):
        raise ValueError(
            f"{path} is row-aligned with the primary texts but its labels describe a different partition "
            f"({len(pairs)} label pairs for {len(set(aug_labels))} augmented and {len(set(primary_labels))} primary "
            "labels). The file does not belong to this corpus."
        )


def _greedy_assign(scores: dict, mapping: dict) -> None:
    """Add to ``mapping`` (aug label -> primary label) the best-scoring pairs whose two labels are both free."""
    used = set(mapping.values())
    for (aug_label, primary_label), score in sorted(scores.items(), key=lambda item: (-item[1], item[0])):
        if score > 0 and aug_label not in mapping and primary_label not in used:
            mapping[aug_label] = primary_label
            used.add(primary_label)


def _translate_labels(
    aug_texts: list[str], aug_labels: list[str], primary_texts: list[str], primary_labels: list[str], path
) -> list[str]:
    """Express the augmented file's partition with the primary label ids (see the module docstring)."""
    labels_of_text = defaultdict(set)
    for text, label in zip(primary_texts, primary_labels):
        labels_of_text[text].add(label)
    votes = Counter()
    for text, label in zip(aug_texts, aug_labels):
        candidates = labels_of_text.get(text)
        if candidates is not None and len(candidates) == 1:
            votes[label, next(iter(candidates))] += 1
    mapping: dict[str, str] = {}
    _greedy_assign(votes, mapping)

    free_aug = set(aug_labels) - set(mapping)
    free_primary = set(primary_labels) - set(mapping.values())
    if free_aug and free_primary:

        def bag(texts_, labels_, label_set):
            bags = defaultdict(Counter)
            for text, label in zip(texts_, labels_):
                if label in label_set:
                    bags[label].update(text.lower().split())
            return bags

        aug_bags = bag(aug_texts, aug_labels, free_aug)
        primary_bags = bag(primary_texts, primary_labels, free_primary)
        overlap = {}
        for a, a_bag in aug_bags.items():
            for p, p_bag in primary_bags.items():
                union = sum((a_bag | p_bag).values())
                overlap[a, p] = sum((a_bag & p_bag).values()) / union if union else 0.0
        _greedy_assign(overlap, mapping)

    aug_sizes, primary_sizes = Counter(aug_labels), Counter(primary_labels)
    unmatched = sorted(set(aug_labels) - set(mapping))
    wrong_size = sorted(a for a, p in mapping.items() if aug_sizes[a] != primary_sizes[p])
    if unmatched or wrong_size or len(set(aug_labels)) != len(set(primary_labels)):
        raise ValueError(
            f"Cannot match the labels of {path} to the primary corpus: {len(set(aug_labels))} augmented vs "
            f"{len(set(primary_labels))} primary classes, unmatched {unmatched[:10]}, classes of different sizes "
            f"{wrong_size[:10]}. The file does not describe the same partition."
        )
    return [mapping[label] for label in aug_labels]
