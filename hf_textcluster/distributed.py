"""Whole-corpus passes shared by every process of an ``accelerate launch`` (or ``torchrun``) run.

An encoding pass over the corpus (k-means initialisation, DEC target refreshes, AECL's pseudo-labels, calibration,
re-clustering, ``predict``) is split between the processes: the texts are sorted by length as the model's own pass
sorts them, cut into its batches, and the batches are dealt out to the processes in snake order (long and short ones
to every process); the outputs are then gathered to every process and put back in input order. Each batch is the one a
single process would have encoded,
with the same texts and the same padding, so the result equals the single-process one exactly (on the same hardware)
and N processes encode the corpus about N times faster.

    with sharded_passes(model):          # every process enters; model.embed / predict / calibrate are split
        embeddings = model.embed(texts)  # the whole corpus' embeddings, in input order, on every process
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .modeling.validation import check_scalar


def running_processes():
    """accelerate's ``PartialState`` when this process is one of several (launched by ``accelerate launch`` or
    ``torchrun``), else None. Nothing is initialised for a plain single process."""
    import torch.distributed as dist

    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 and not (dist.is_available() and dist.is_initialized()):
        return None
    import torch
    from accelerate import PartialState

    # Without a GPU, accelerate counts the launched processes only when told they run on the CPU (gloo).
    state = PartialState(cpu=not torch.cuda.is_available())
    return state if state.num_processes > 1 else None


def leave_together(state) -> None:
    """Wait for every process, then tear the process group down: a gloo child process can abort at exit otherwise.
    Every process must call this, as the last collective step.

    Args:
        state: accelerate's ``PartialState`` or ``AcceleratorState`` of the running processes (e.g.
            :func:`running_processes`, or a trainer's ``accelerator.state``).

    Example:
        >>> processes = running_processes()                   # doctest: +SKIP
        >>> if processes is not None:                          # doctest: +SKIP
        ...     leave_together(processes)
    """
    state.wait_for_everyone()
    state.destroy_process_group()


def shard_rows(texts: Sequence[str], batch_size: int, state) -> np.ndarray:
    """The input positions of the texts this process encodes: whole batches of the length-sorted texts, dealt out in
    snake order (batches 0, 1, ..., N-1 to processes 0 to N-1, the next N back from N-1 to 0, and so on), so that
    every process gets long and short texts alike: contiguous runs would give the first process all the longest
    batches. The positions stay in the global length order, so the process's own length-sorted pass cuts exactly the
    batches a single process would have made. A process may get none when there are fewer batches than processes."""
    check_scalar(batch_size, "batch_size", int, min_val=1)
    order = np.argsort([-len(t) for t in texts], kind="stable")  # the model's own order (its whole-list pass)
    count = state.num_processes
    batch = np.arange(len(texts)) // batch_size  # the batch of each position in that order
    owner = np.where(batch // count % 2 == 0, batch % count, count - 1 - batch % count)
    return order[owner == state.process_index]


def _gather_in_order(rows: np.ndarray, local, total: int):
    """Every process's ``local`` outputs (one row per position in ``rows``; None for none) put together in input order,
    on every process: arrays into one array, lists into one list; None when no process has any (an output field the
    pass does not produce)."""
    from accelerate.utils import gather_object

    parts = [(part_rows, values) for part_rows, values in gather_object([(rows, local)]) if values is not None]
    if len({isinstance(values, np.ndarray) for _, values in parts}) > 1:
        kinds = [type(values).__name__ for _, values in parts]
        raise RuntimeError(f"The processes returned different kinds of outputs for one pass: {kinds}.")
    if not parts:
        return None
    first = parts[0][1]
    if isinstance(first, np.ndarray):
        out = np.empty((total, *first.shape[1:]), dtype=first.dtype)
        for part_rows, values in parts:
            out[part_rows] = values
        return out
    out = [None] * total
    for part_rows, values in parts:
        for row, value in zip(part_rows, values):
            out[row] = value
    return out


@dataclass
class ShardedPasses:
    """A model's ``encoding_passes`` that splits each whole-list pass between the processes of ``state`` and gathers
    its outputs, in input order, to every one: ``run(encode, texts, batch_size, show_progress_bar)`` calls the
    model's pass ``encode(texts, show_progress_bar)`` on this process' share, which returns a ``ClusteringOutput``
    of CPU tensors in the order of the texts it was given (``encode_sorted`` of ``modeling.encoding_passes``)."""

    state: Any

    def run(self, encode, texts, batch_size, show_progress_bar):
        import torch

        from .modeling.encoding_passes import ClusteringOutput

        rows = shard_rows(texts, batch_size, self.state)
        show = show_progress_bar if self.state.is_main_process else False  # the main process alone shows a bar
        local = encode([texts[int(i)] for i in rows], show) if len(rows) else ClusteringOutput()
        fields = {}
        for name in ClusteringOutput.__dataclass_fields__:  # one gather per field, in the same order everywhere
            value = local.get(name)
            gathered = _gather_in_order(rows, None if value is None else value.numpy(), len(texts))
            if gathered is not None:
                fields[name] = torch.from_numpy(gathered)
        return ClusteringOutput(**fields)


@contextlib.contextmanager
def sharded_passes(model, state=None):
    """Inside, the model's encoding passes (``embed``, ``predict``, ``predict_proba``, ``calibrate``,
    ``initialize_clusters`` from texts) are split between all processes and their results gathered to each (see
    :func:`shard_rows`): the model's ``encoding_passes`` is a :class:`ShardedPasses` until the end. Every
    process must make the same calls. In a single process, or when already inside, nothing changes.

    Example:
        >>> with sharded_passes(model):                            # doctest: +SKIP
        ...     model.calibrate(texts)  # every process encodes 1/N of the texts, every process gets the calibration
    """
    state = running_processes() if state is None else state
    if state is None or state.num_processes == 1 or model.encoding_passes is not None:
        yield model
        return
    model.encoding_passes = ShardedPasses(state)
    try:
        yield model
    finally:
        model.encoding_passes = None


@dataclass
class SharedPipeline:
    """A text-clustering pipeline that the main process calls while the other processes help: each call's texts are
    sent to them (:func:`follow_main_process` receives them) and the encoding pass is split between all processes;
    the main process gets the results, in input order. Anything else is the wrapped pipeline's (``model``, options)."""

    pipeline: Any
    state: Any

    def __call__(self, inputs, **kwargs):
        if isinstance(inputs, str):  # one text: not worth sharing
            return self.pipeline(inputs, **kwargs)
        from accelerate.utils import broadcast_object_list

        inputs = list(inputs)
        broadcast_object_list([("call", inputs, kwargs)], from_process=0)
        return _shared_call(self.pipeline, inputs, kwargs, self.state)

    def __getattr__(self, name):
        return getattr(self.pipeline, name)

    def close(self) -> None:
        """Release the other processes (they return from :func:`follow_main_process`)."""
        from accelerate.utils import broadcast_object_list

        broadcast_object_list([("stop", None, None)], from_process=0)


def follow_main_process(pipeline, state) -> None:
    """On a process other than the main one: take part in every call the main process makes to its
    :class:`SharedPipeline`, until it is closed."""
    from accelerate.utils import broadcast_object_list

    while True:
        box = [None]
        broadcast_object_list(box, from_process=0)
        what, inputs, kwargs = box[0]
        if what == "stop":
            return
        _shared_call(pipeline, inputs, kwargs, state)


def _shared_call(pipeline, inputs, kwargs, state):
    """``pipeline(inputs, **kwargs)`` with the texts split between the processes: each answers its share of whole
    batches of the length-sorted texts (``shard_rows``; the pipeline sorts its share the same way, so each batch is the
    one a single process would have made), and every process gets all answers in input order. The texts and options are
    checked first on every process, so that all of them fail alike rather than some waiting for the others."""
    from .modeling.encoding_passes import DEFAULT_ENCODE_BATCH_SIZE
    from .modeling.validation import validate_texts

    texts = validate_texts(inputs, argument_name="inputs")
    pipeline._sanitize_parameters(**kwargs)
    batch_size = kwargs.get("batch_size") or getattr(pipeline, "_batch_size", None) or DEFAULT_ENCODE_BATCH_SIZE
    rows = shard_rows(texts, batch_size, state)
    local = pipeline([texts[int(i)] for i in rows], **kwargs) if len(rows) else None
    return _gather_in_order(rows, local, len(texts))


def run_with_processes(pipeline, work: Callable, state=None):
    """``work(clusterer)`` on the main process, with every call of ``clusterer`` (``pipeline`` shared as a
    :class:`SharedPipeline`) split between all processes; the other processes only help and get None. In one process,
    ``work(pipeline)``. Every process must call this.

    Example:
        >>> stats = run_with_processes(clusterer, lambda c: predict_file(c, "texts.txt", "out.jsonl"))  # doctest: +SKIP
    """
    state = running_processes() if state is None else state
    if state is None:
        return work(pipeline)
    if not state.is_main_process:
        follow_main_process(pipeline, state)
        return None
    shared = SharedPipeline(pipeline, state)
    try:
        return work(shared)
    finally:
        shared.close()
