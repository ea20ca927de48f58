"""The run record: what ``training_run.json`` holds beside a saved model, as one typed object.

``train`` builds it, the default run (``train`` without ``--method``) and the edits of a saved model update it, and
the model card, ``push`` and ``evaluate --model`` read it. :func:`~hf_textcluster.runs.saving.write_record` is its
only writer, :meth:`~hf_textcluster.runs.folder.RunFolder.read_record` its reader. A field that is None is not
written; a key the record does not know is refused on reading (one line naming the file), so a misspelt or foreign key
is never silently carried along.
The blocks whose shape is the choosing code's own (``k_selection``, ``serving``, ``auto``, ``schedule``) or one entry
per thing (``edits``, ``seconds``, ``metrics``) stay mappings.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["EditAlreadyApplied", "RunRecord", "next_edit_id", "texts_sha1"]


def texts_sha1(texts) -> str:
    """The digest that ties a run (its identity, its kept candidates, its edits) to its texts, order included."""
    digest = hashlib.sha1()
    for text in texts:
        digest.update(text.encode("utf-8", "replace") + b"\0")
    return digest.hexdigest()


class EditAlreadyApplied(Exception):  # noqa: N818 - what happened, not an error
    """The edit asked for is the folder's last recorded edit, on the state it was made from (the same edit id): it
    is not applied twice."""


def next_edit_id(edits: Sequence[dict] | None, op: str, kwargs: dict, in_place: str | None) -> str:
    """The id of the edit ``op(**kwargs)`` made after ``edits`` (a run record's): a digest of the id of the edit it
    follows, ``op`` and its arguments (texts by their digest; the batch size left out). The same edit of the same
    state has the same id, so an edit run again after its save was interrupted (and completed later) is found.

    Raises:
        EditAlreadyApplied: ``in_place`` (the folder edited in place) already ends with this very edit.
    """
    edits = list(edits or [])
    follows = [None, *(edit.get("id") for edit in edits)]  # the id of the edit each one follows
    if in_place and edits and edits[-1].get("id") == _edit_id(follows[-2], op, kwargs):
        raise EditAlreadyApplied(
            f"{in_place}: this {op} is already applied: it is the folder's last edit, on the same model (saved "
            f"{edits[-1].get('time')}; a command interrupted after its save leaves it so). Nothing changed."
        )
    return _edit_id(follows[-1], op, kwargs)


def _edit_id(follows: str | None, op: str, kwargs: dict) -> str:
    arguments = [
        (key, texts_sha1(value) if key in ("texts", "reference_texts") and value is not None else value)
        for key, value in sorted(kwargs.items())
        if key != "batch_size"
    ]
    return hashlib.sha1(json.dumps([follows, op, arguments], default=repr).encode()).hexdigest()[:16]


@dataclass
class RunRecord:
    """One run's ``training_run.json``.

    Attributes:
        method: the method that trained the served model (a default run: the serving signal's).
        dataset: the benchmark trained on; None for the user's own texts.
        input: the user's file trained on (``path``, ``text_column``, ``label_column``), when read from one.
        recipe, seed: the recipe and the seed of the run.
        training_overrides: the training arguments given over the recipe's.
        corpus: the benchmark a given Dataset was sampled from (the demo's), when known.
        augmentation: the views the method trained on (None for a method without views).
        encoder: the pretrained encoder (a Hub id or a local path).
        num_train_texts, num_test_texts, test_size, split_seed: the training texts and the held-out split.
        precision: the precision and why it was chosen.
        k_selection: with ``num_clusters="auto"``, how K was chosen (every K's score).
        serving: what the model serves and how it was chosen (``served``, ``criterion``, ``scores``, ``refinement``).
        schedule: the training steps and the rule that sized them.
        config_overrides: the config values given over the method's defaults.
        metrics: the scores measured (against labels never trained on) and the training seconds.
        metrics_before_edits: ``metrics`` of the model before an edit moved texts between its clusters.
        seconds: the run's seconds, by phase.
        auto: a default run's signals, its candidates' criteria, the choice and what it served when.
        names: who named the clusters (``hf-textcluster name``): ``generator``, ``generated``, ``file``.
        edits: the edits made after training, oldest first, each a mapping with its ``op``.
        num_clusters: the clusters after the last edit.

    Example:
        >>> RunRecord.from_dict({"method": "sccl", "seed": 0}).to_dict()
        {'method': 'sccl', 'seed': 0}
    """

    method: str | None = None
    dataset: str | None = None
    input: dict[str, Any] | None = None
    recipe: str | None = None
    seed: int | None = None
    training_overrides: dict[str, Any] | None = None
    corpus: str | None = None
    augmentation: str | None = None
    encoder: str | None = None
    num_train_texts: int | None = None
    num_test_texts: int | None = None
    test_size: int | float | None = None
    split_seed: int | None = None
    precision: str | None = None
    k_selection: dict[str, Any] | None = None
    serving: dict[str, Any] | None = None
    schedule: dict[str, Any] | None = None
    config_overrides: dict[str, Any] | None = None
    metrics: dict[str, float] | None = None
    metrics_before_edits: dict[str, float] | None = None
    seconds: dict[str, float] | None = None
    auto: dict[str, Any] | None = None
    names: dict[str, Any] | None = None
    edits: list[dict[str, Any]] | None = None
    num_clusters: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunRecord:
        """The record of a ``training_run.json``'s object.

        Raises:
            ValueError: ``data`` is not an object, or has keys a run record does not have.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"holds {type(data).__name__}, not an object of a run's fields")
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"has keys a run record does not have ({', '.join(map(repr, unknown))})")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of ``training_run.json``: every field that is not None, in the fields' order."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}
