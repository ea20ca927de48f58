"""The run record: what ``training_run.json`` holds beside a saved model, as one typed object.

``train`` builds it, the default run (``train`` without ``--method``) and the edits of a saved model update it, and
the model card, ``push`` and ``evaluate --model`` read it. :func:`~hf_textcluster.runs.saving.write_record` is its
only writer, :meth:`~hf_textcluster.runs.folder.RunFolder.read_record` its reader. A key the record or one of its
blocks does not know is refused on reading (one line naming it), so a misspelt or foreign key is never silently
carried along.

Every block of the record is a :class:`~hf_textcluster.runs.block.Block`, frozen: a dataclass read from and written
to its JSON object by its fields' names (``from_dict``, ``to_dict``), nested blocks included; it is changed with
``dataclasses.replace``. A block given as its JSON mapping (``RunRecord(serving={...})``, ``run.edits = [...,
{"op": ...}]``) is read into its type, and a block reads like the mapping it is written as (``run.serving["served"]``,
``edit.get("id")``), so code and the file say the same keys. What is one entry per thing stays a mapping, typed:
metrics and seconds by name, overrides by argument, candidates' criteria by candidate.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .block import NULL, Block
from .schedule import Schedule

__all__ = [
    "AutoRun",
    "Edit",
    "EditAlreadyApplied",
    "InputFile",
    "KSelection",
    "RunRecord",
    "Serving",
    "next_edit_id",
    "texts_sha1",
]

Setting = str | int | float | bool | list | None  # a value given over a recipe or a config (JSON)


def texts_sha1(texts) -> str:
    """The digest that ties a run (its identity, its kept candidates, its edits) to its texts, order included."""
    digest = hashlib.sha1()
    for text in texts:
        digest.update(text.encode("utf-8", "replace") + b"\0")
    return digest.hexdigest()


class EditAlreadyApplied(Exception):  # noqa: N818 - what happened, not an error
    """The edit asked for is the folder's last recorded edit, on the state it was made from (the same edit id): it
    is not applied twice."""


def next_edit_id(edits: Sequence[Edit] | None, op: str, kwargs: dict, in_place: str | None) -> str:
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


@dataclass(frozen=True)
class InputFile(Block):
    """The user's file a run trained on (``"input"``): its absolute path and columns."""

    path: str
    text_column: str | None = field(default=None, metadata=NULL)
    label_column: str | None = field(default=None, metadata=NULL)


@dataclass(frozen=True)
class KSelection(Block):
    """How K was chosen with ``num_clusters="auto"`` (``"k_selection"``, what
    :meth:`~hf_textcluster.choosing.auto_k.AutoKResult.to_dict` writes): every K's score, by K."""

    num_clusters: int
    criterion: str
    split_from: int | None = None  # umap_silhouette: the best K before its clusters were split (None: none split)
    alternatives: list[int] | None = None  # (a run saved before it was recorded has none)
    k_range: list[int] | None = None
    sample_size: int | None = None
    num_texts: int | None = None
    seconds: float | None = None
    random_state: int | None = field(default=None, metadata=NULL)
    scores: dict[str, float] | None = None
    notes: list[str] | None = None
    requested_k_range: list | None = None  # the range asked for (an end None: the default)


@dataclass(frozen=True)
class Refinement(Block):
    """What refinement did for a refined candidate: rounds, share of texts moved, whether it declined and why."""

    rounds: int
    changed: float
    declined: bool
    reason: str | None


@dataclass(frozen=True)
class Serving(Block):
    """What the model serves and how it was chosen (``"serving"``): each candidate's value of ``criterion`` (None:
    the candidate was asked for), by refined candidate what refinement did, and the choice's seconds."""

    served: str
    criterion: str | None
    scores: dict[str, float]
    refinement: dict[str, Refinement] | None = None
    seconds: float | None = None


@dataclass(frozen=True)
class Names(Block):
    """Who named the clusters (``"names"``): the generator, how many names it generated, the file of names."""

    generator: str
    generated: int
    file: str


@dataclass(frozen=True)
class Edit(Block):
    """One edit made after training (an entry of ``"edits"``): its ``op`` and what it was given and did (the keys
    of its op only), the clusters after it, the folder it was made from, when, and its id (see
    :func:`next_edit_id`)."""

    op: str
    clusters: list | None = None  # merge: groups of ids; split, update, rename: ids
    mapping: list[int] | None = None
    new_ids: list[int] | None = None
    reduced_to: int | None = None
    moved: int | None = None
    texts: int | None = None
    generator: str | None = None
    generated: int | None = None
    served: str | None = None
    kmeans_init: str | None = None
    num_clusters: int | None = None
    source: str | None = None
    time: str | None = None
    id: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Edit:
        """The edit of its JSON object (an ``update``'s: an :class:`UpdateEdit`)."""
        op = data.get("op") if isinstance(data, Mapping) else None
        return Block.from_dict.__func__(UpdateEdit if cls is Edit and op == "update" else cls, data)


@dataclass(frozen=True)
class UpdateEdit(Edit):
    """An online ``update``: its texts far from every cluster, the new cluster proposed among them (its size, or
    null), whether it was added and its id (or null)."""

    far: int | None = None
    proposed: int | None = field(default=None, metadata=NULL)
    accepted: bool | None = None
    new_cluster: int | None = field(default=None, metadata=NULL)


@dataclass(frozen=True)
class SignalRun(Block):
    """A fine-tuning signal of a default run: its method and config, its run folder (None once removed), its
    steps, batch size and training seconds."""

    method: str
    config: dict[str, Setting] | None = None
    description: str | None = None
    folder: str | None = field(default=None, metadata=NULL)
    steps: int | None = None
    batch_size: int | None = None
    train_seconds: float | None = None


@dataclass(frozen=True)
class CachedRun(Block):
    """An objective a default run trained on the pretrained encoder's cached embeddings."""

    description: str
    seconds: float


@dataclass(frozen=True)
class AutoChoice(Block):
    """A default run's choice: the candidate served (``pick``: the criterion's, before the guard), by what
    (``criterion`` None: asked for), the signal serving it and how faithfully its head does."""

    served: str
    criterion: str | None
    pick: str | None = None
    guard: str | None = None
    serving_signal: str | None = None
    head_agreement: float | None = None
    rule: str | None = None


@dataclass(frozen=True)
class Served(Block):
    """What a default run served, ``seconds`` after its start, and why."""

    served: str
    seconds: float
    by: str


@dataclass(frozen=True)
class Stopped(Block):
    """What stopped a default run's training (``"interrupt"`` or ``"time budget"``)."""

    by: str


@dataclass(frozen=True)
class AutoRun(Block):
    """A default run (``"auto"``): its training texts' count and digest, what it served when; once it has chosen,
    its signals, every candidate's criteria (candidate -> criterion -> value), the choice and its seconds."""

    num_train_texts: int | None = None
    texts_sha1: str | None = None
    first_save_seconds: float | None = None
    served_history: tuple[Served, ...] | None = None
    signals: dict[str, SignalRun] | None = None
    criteria: list[str] | None = None
    candidates: dict[str, dict[str, float]] | None = None
    choice: AutoChoice | None = None
    choose_seconds: float | None = None
    estimate_seconds: float | None = None
    cached: dict[str, CachedRun] | None = None
    stopped: Stopped | None = None


@dataclass
class RunRecord(Block):
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
        edits: the edits made after training, oldest first, each with its ``op``.
        num_clusters: the clusters after the last edit.

    Example:
        >>> RunRecord.from_dict({"method": "sccl", "seed": 0}).to_dict()
        {'method': 'sccl', 'seed': 0}
    """

    method: str | None = None
    dataset: str | None = None
    input: InputFile | None = None
    recipe: str | None = None
    seed: int | None = None
    training_overrides: dict[str, Setting] | None = None
    corpus: str | None = None
    augmentation: str | None = None
    encoder: str | None = None
    num_train_texts: int | None = None
    num_test_texts: int | None = None
    test_size: int | float | None = None
    split_seed: int | None = None
    precision: str | None = None
    k_selection: KSelection | None = None
    serving: Serving | None = None
    schedule: Schedule | None = None
    config_overrides: dict[str, Setting] | None = None
    metrics: dict[str, float] | None = None
    metrics_before_edits: dict[str, float] | None = None
    seconds: dict[str, float] | None = None
    auto: AutoRun | None = None
    names: Names | None = None
    edits: tuple[Edit, ...] | None = None
    num_clusters: int | None = None
    _what = "a run record"

    def amend_last_edit(self, **changes) -> None:
        """Add to the last edit what is known once it has run (``reduced_to``, its ``id``)."""
        *earlier, last = self.edits
        self.edits = (*earlier, replace(last, **changes))
