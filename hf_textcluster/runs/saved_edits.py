"""The edits of :class:`~hf_textcluster.runs.clusterer.Clusterer` on a model folder, what the command line's edit
commands (``merge``, ``split``, ``rename``, ...) call: load, edit, save, holding the folder's writer lock throughout."""

from __future__ import annotations

import os

from ..modeling.serialization import folder_lock, recover_folder, save_interrupted
from ..modeling.validation import check_local_path
from .clusterer import EDITS, Clusterer
from .folder import save_back_target
from .record import next_edit_id

__all__ = ["edit_saved_model"]


def edit_saved_model(
    model: str | os.PathLike, output_dir: str | os.PathLike | None, op: str, *, overwrite=False, device=None, **kwargs
):
    """Edit the model saved in ``model`` by ``op`` (one of :data:`~hf_textcluster.runs.clusterer.EDITS`, a
    :class:`~hf_textcluster.runs.clusterer.Clusterer` method: ``"merge"``, ``"split"``, ...; ``kwargs`` are its
    arguments) and save it: in place when ``output_dir`` is None (the model before is kept in ``<model>/previous/``),
    else into ``output_dir`` (a folder holding another trained model only with ``overwrite``), holding its writer lock
    from the load to the save; ``device``: where it encodes texts (default: where it loads). Returns ``(clusterer,
    what the method returned)``.

    Raises:
        ValueError: an unknown ``op``, a bad argument, a Hub model without ``output_dir``.
        FileExistsError: ``output_dir`` holds another trained model and ``overwrite`` is false.
        EditAlreadyApplied: in place, the folder's last edit is this very edit (a command run again).

    Example:
        >>> clusterer, _ = edit_saved_model("runs/tickets", None, "merge", clusters=[[3, 7]])  # doctest: +SKIP
        >>> *_, last_edit = clusterer.run.edits                                             # doctest: +SKIP
        >>> last_edit["op"], clusterer.model.config.num_clusters                              # doctest: +SKIP
        ('merge', 19)
    """
    if op not in EDITS:
        raise ValueError(f"`op` must be one of {', '.join(EDITS)}; got {op!r}.")
    model = os.fspath(model)
    check_local_path(model, "--model")
    target = save_back_target(model, output_dir, overwrite=overwrite, command=op).path  # refused before any work
    with folder_lock(target):  # one writer from reading the model to saving it: no edit of another is lost
        interrupted = save_interrupted(target)  # a re-run after it: the same last edit is not applied twice
        recover_folder(target, complete=True)
        clusterer = Clusterer.load(model)
        if device is not None:
            clusterer.model.to(device)
        edit_id = next_edit_id(clusterer.run.edits, op, kwargs, model if interrupted and not output_dir else None)
        result = getattr(clusterer, op)(**kwargs)
        clusterer.run.amend_last_edit(id=edit_id)
        clusterer.save(output_dir, overwrite=overwrite)
    return clusterer, result
