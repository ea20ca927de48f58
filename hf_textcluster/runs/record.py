"""The run record: what ``training_run.json`` holds beside a saved model, as one typed object.

``train`` builds it, the default run (``train`` without ``--method``) and the edits of a saved model update it, and
the model card, ``push`` and ``evaluate --model`` read it. :func:`~hf_textcluster.runs.saving.write_record` is its
only writer, :meth:`~hf_textcluster.runs.folder.RunFolder.read_record` its reader. A key the record or one of its
blocks does not know is refused on reading (one line naming it), so a misspelt or foreign key is never silently
carried along.

Every block of the record is a :class:`Block`: a dataclass read from and written to its JSON object by its fields'
names (:meth:`Block.from_dict`, :meth:`Block.to_dict`), nested blocks included. A block given as its JSON mapping (a
``RunRecord(serving={...})``, ``run.edits = [..., {"op": ...}]``) is read into its type, and a block reads like the
mapping it is written as (``run.serving["served"]``, ``edit.get("id")``), so code and the file say the same keys.
Only what is one entry per thing stays a mapping, typed: metrics and seconds by name, overrides by argument,
candidates' criteria by candidate.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields, replace
from functools import cache
from typing import TYPE_CHECKING, Any, Union, get_args, get_origin, get_type_hints

if TYPE_CHECKING:
    from .schedule import Schedule

__all__ = [
    "AutoRun",
    "Block",
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
NULL = {"null": True}  # a block field's metadata: written as null while None, not left out


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


class Block(Mapping):
    """A block of ``training_run.json``: a dataclass written as the JSON object of its fields (one that defaults to
    None is left out while None, unless its metadata says ``null``) and read back from it, nested blocks typed; it
    reads like that mapping."""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]):
        """The block of its JSON object.

        Raises:
            ValueError: ``data`` is not an object, lacks a key the block needs or has one it does not have.
        """
        what = "a run record" if cls is RunRecord else f"its {cls.__name__} block"
        if not isinstance(data, Mapping):
            raise ValueError(f"holds {type(data).__name__}, not an object of {what}'s fields")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"has keys {what} does not have ({', '.join(map(repr, unknown))})")
        missing = [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING]
        if set(missing) - set(data):
            raise ValueError(f"lacks keys {what} needs ({', '.join(repr(n) for n in missing if n not in data)})")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the block, in its fields' order, nested blocks written as theirs."""
        return {name: _write(value) for name, value in self._items()}

    def __post_init__(self):  # a nested block given as its mapping is read into its type
        for name, hint in _hints(type(self)).items():
            object.__setattr__(self, name, _read(hint, getattr(self, name)))

    def __setattr__(self, name: str, value) -> None:  # a block that is not frozen (the record): the same
        object.__setattr__(self, name, _read(_hints(type(self)).get(name), value))

    def _items(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None or f.default is not None or f.metadata.get("null"):
                yield f.name, value

    def __getitem__(self, key: str):
        for name, value in self._items():
            if name == key:
                return value
        raise KeyError(key)

    def __iter__(self):
        return (name for name, _ in self._items())

    def __len__(self) -> int:
        return sum(1 for _ in self._items())


@cache
def _hints(cls) -> dict[str, Any]:
    from .schedule import Schedule  # a Block itself, which that module imports from here

    hints = get_type_hints(cls, localns={"Schedule": Schedule})
    return {f.name: hints[f.name] for f in fields(cls)}


def _read(hint, value):
    """``value`` (a JSON value) as ``hint`` types it: the blocks in it read into theirs."""
    if value is None or hint is None:
        return value
    if get_origin(hint) in (Union, type(Setting)):  # X | None
        hint = next(arg for arg in get_args(hint) if arg is not type(None))
    origin, args = get_origin(hint), get_args(hint)
    if isinstance(hint, type) and issubclass(hint, Block):
        return value if isinstance(value, hint) else hint.from_dict(value)
    if origin is tuple:
        return tuple(_read(args[0], item) for item in value)
    if origin is dict and isinstance(args[1], type) and issubclass(args[1], Block):
        return {key: _read(args[1], item) for key, item in value.items()}
    return value


def _write(value):
    if isinstance(value, Block):
        return value.to_dict()
    if isinstance(value, tuple):
        return [_write(item) for item in value]
    if isinstance(value, dict):
        return {key: _write(item) for key, item in value.items()}
    return value


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
    alternatives: list[int]
    k_range: list[int]
    sample_size: int
    num_texts: int
    seconds: float
    random_state: int | None
    scores: dict[str, float]
    notes: list[str] | None = None
    requested_k_range: list | None = None  # written by earlier versions


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
    the candidate was asked for) and, by refined candidate, what refinement did."""

    served: str
    criterion: str | None
    scores: dict[str, float]
    refinement: dict[str, Refinement] | None = None


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
    n: int | None = None  # a split's parts, as earlier versions wrote it (now: len(new_ids))
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
    config: dict[str, Setting]
    description: str
    folder: str | None
    steps: int
    batch_size: int
    train_seconds: float


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
    pick: str
    guard: str
    serving_signal: str
    head_agreement: float
    rule: str


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

    def amend_last_edit(self, **changes) -> None:
        """Add to the last edit what is known once it has run (``reduced_to``, its ``id``)."""
        *earlier, last = self.edits
        self.edits = (*earlier, replace(last, **changes))
