"""Joining the precomputed augmented views (``<augmented_dir>/<family>/<name>.csv``) to a benchmark corpus.

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

Families (``augmentation=``):

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

from .readers import read_csv_frame, require_columns

logger = logging.getLogger(__name__)

AUGMENTATION_FAMILIES: tuple[str, ...] = ("sccl_contextual", "mist_contextual", "aecl_eda")

# Minimum fraction of rows whose text equals the primary text, row by row, for a file to count as row-aligned.
ALIGNED_MIN_EQUAL = 0.95

_MIST_OWN_FOLDER = {"agnews", "stackoverflow", "googlenews_t", "tweet"}
_UNAVAILABLE = {("aecl_eda", "googlenews_ts"): "AECL published no GoogleNews-TS augmentation"}


def resolve_augmentation(augmentation: object) -> str | None:
    """Validate the ``augmentation`` argument (``None`` or one of :data:`AUGMENTATION_FAMILIES`)."""
    if augmentation is not None and augmentation not in AUGMENTATION_FAMILIES:
        raise ValueError(
            f"Unknown augmentation {augmentation!r}. Valid values: None, "
            + ", ".join(repr(f) for f in AUGMENTATION_FAMILIES)
            + ". To compute views yourself, load without augmentation and call add_augmented_views()."
        )
    return augmentation


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
    """A split's rows, column by column (one object, not lists: datasets treats list arguments as shards)."""

    texts: list
    labels: list  # raw label ids of the primary corpus
    views1: list | None = None
    views2: list | None = None
    row_aligned: bool = True


def join_views(primary: list[tuple[str, str]], path: str | os.PathLike, family: str, name: str) -> JoinedRows:
    """Join the views of the augmented file ``path`` to the ``primary`` rows ``(text, raw_label)``.

    See the module docstring for the rule. Returns the final texts, raw labels (primary ids) and two views.
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
