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
import math
import os
from collections.abc import Callable, Sequence

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
    count, rank = state.num_processes, state.process_index
    mine = [
        b
        for b in range(math.ceil(len(texts) / batch_size))
        if (b % count if (b // count) % 2 == 0 else count - 1 - b % count) == rank
    ]
    if not mine:
        return order[:0]
    return np.concatenate([order[b * batch_size : (b + 1) * batch_size] for b in mine])


def _gather_in_order(rows: np.ndarray, local, total: int, state):
    """Every process's ``local`` outputs (one row per position in ``rows``) put together in input order, on every
    process: arrays through one tensor all-gather (padded to the longest shard), lists as Python objects."""
    import torch
    import torch.distributed as dist
    from accelerate.utils import gather_object

    if local is None:
        meta = ("empty",)
    elif isinstance(local, np.ndarray):
        meta = ("array", tuple(local.shape[1:]), local.dtype.str)
    else:
        meta = ("list",)
    metas = gather_object([(len(rows), meta)])
    kinds = {m[0] for _, m in metas} - {"empty"}
    if not kinds:  # nothing on any process (an output field the pass does not produce)
        return None
    if len(kinds) != 1:
        raise RuntimeError(f"The processes returned different kinds of outputs for one pass: {metas}.")
    if kinds == {"list"}:
        parts = gather_object([(np.asarray(rows).tolist(), [] if local is None else list(local))])
        out = [None] * total
        for part_rows, part_values in parts:
            for row, value in zip(part_rows, part_values):
                out[row] = value
        return out
    shape, dtype = next(m[1:] for _, m in metas if m[0] == "array")
    longest = max(count for count, _ in metas)
    device = state.device if dist.get_backend() == "nccl" else torch.device("cpu")
    values = torch.zeros((longest, *shape), dtype=torch.from_numpy(np.empty(0, dtype=dtype)).dtype, device=device)
    positions = torch.full((longest,), -1, dtype=torch.long, device=device)
    if local is not None and len(rows):
        values[: len(rows)] = torch.from_numpy(np.ascontiguousarray(local)).to(device)
        positions[: len(rows)] = torch.from_numpy(np.asarray(rows, dtype=np.int64)).to(device)
    all_values = [torch.empty_like(values) for _ in range(state.num_processes)]
    all_positions = [torch.empty_like(positions) for _ in range(state.num_processes)]
    dist.all_gather(all_values, values)
    dist.all_gather(all_positions, positions)
    out = np.empty((total, *shape), dtype=dtype)
    for (count, _), part, where in zip(metas, all_values, all_positions):
        out[where[:count].cpu().numpy()] = part[:count].cpu().numpy()
    return out


def map_across_processes(
    function: Callable[[list[str]], np.ndarray | list], texts: Sequence[str], batch_size: int, state=None
):
    """``function(texts)`` computed by all processes together: each applies it to its shard (``shard_rows``) and every
    process gets the whole result in input order. ``function`` returns one row (an array's first axis, or a list
    item) per text and must batch like the model's encoding passes (length-sorted batches of ``batch_size``) for the
    result to equal a single process's exactly. Every process must call this, with the same texts.

    Args:
        function: maps a list of texts to an array (rows = texts) or a list (one item per text).
        texts: the texts (the same on every process).
        batch_size: the encoding batch size ``function`` uses.
        state: accelerate's ``PartialState`` (default: ``running_processes()``; None: one process, ``function(texts)``).

    Returns:
        ``function(texts)`` as one process would have returned it.
    """
    state = running_processes() if state is None else state
    texts = list(texts)
    if state is None or state.num_processes == 1:
        return function(texts)
    rows = shard_rows(texts, batch_size, state)
    local = function([texts[int(i)] for i in rows]) if len(rows) else None
    return _gather_in_order(rows, local, len(texts), state)


class ShardedPasses:
    """A model's ``encoding_passes`` that splits each whole-list pass between the processes of ``state`` and gathers
    its outputs, in input order, to every one: ``run(encode, texts, batch_size, show_progress_bar)`` calls the
    model's pass ``encode(texts, show_progress_bar)`` on this process' share, which returns a ``ClusteringOutput``
    of CPU tensors in the order of the texts it was given (``encode_sorted`` of ``modeling.encoding_passes``)."""

    def __init__(self, state):
        self.state = state

    def run(self, encode, texts, batch_size, show_progress_bar):
        import torch

        from .modeling.encoding_passes import ClusteringOutput

        state = self.state
        rows = shard_rows(texts, batch_size, state)
        # the main process alone shows a bar (for its share)
        local = (
            encode([texts[int(i)] for i in rows], show_progress_bar if state.is_main_process else False)
            if len(rows)
            else None
        )
        fields = {}
        for name in ClusteringOutput.__dataclass_fields__:  # one gather per field, in the same order everywhere
            value = None if local is None or local.get(name) is None else local[name].numpy()
            gathered = _gather_in_order(rows, value, len(texts), state)
            if gathered is not None:
                fields[name] = torch.from_numpy(gathered)
        return ClusteringOutput(**fields)


@contextlib.contextmanager
def sharded_passes(model, state=None):
    """Inside, the model's encoding passes (``embed``, ``predict``, ``predict_proba``, ``calibrate``,
    ``initialize_clusters`` from texts) are split between all processes and their results gathered to each (see
    :func:`map_across_processes`): the model's ``encoding_passes`` is a :class:`ShardedPasses` until the end. Every
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


class SharedPipeline:
    """A text-clustering pipeline that the main process calls while the other processes help: each call's texts are
    sent to them (:func:`follow_main_process` receives them) and the encoding pass is split between all processes;
    the main process gets the results, in input order. Anything else is the wrapped pipeline's (``model``, options)."""

    def __init__(self, pipeline, state):
        self.pipeline = pipeline
        self.state = state

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
    return map_across_processes(lambda shard: pipeline(shard, **kwargs), texts, batch_size, state)


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
