"""What a ``train --method auto`` run records and saves: the ``auto`` section of ``training_run.json`` (the signals,
every candidate's criteria, the choice) and the serving model's run folder."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ..choosing.candidate_choice import BERTOPIC_WAY, GUARD_CRITERIA
from ..choosing.criteria import AUTO_CRITERIA, PRETRAINED
from .folder import RunFolder
from .record import RunRecord, texts_sha1
from .saving import SERVED_KEY, SIGNALS_DIR, save_model_folder
from .signals import SIGNALS

__all__ = ["auto_record", "save_auto_run"]


def auto_record(results: Mapping, chosen, criterion: str | None, texts: Sequence[str], choose_seconds: float) -> dict:
    """What ``training_run.json`` records under ``"auto"``: the signals, the candidates' criteria and the choice
    (``chosen``: a :class:`~hf_textcluster.runs.auto.SignalsChoice`; ``criterion`` None: the candidate served was
    asked for)."""
    criteria = chosen.criteria
    names = [c for c in AUTO_CRITERIA if c in criteria]
    return {
        "signals": {
            name: {
                **SIGNALS[name]._asdict(),  # method, config, description
                "folder": os.path.join(SIGNALS_DIR, name),
                "steps": int(r.trainer.state.global_step),
                "batch_size": int(r.trainer.args.per_device_train_batch_size),
                "train_seconds": round(r.train_seconds, 2),
            }
            for name, r in results.items()
        },
        "criteria": names,
        "candidates": {name: {c: round(float(criteria[c][name]), 6) for c in names} for name in chosen.candidates},
        "choice": {
            "served": chosen.served,
            "criterion": criterion,
            "pick": chosen.pick,
            "guard": f"{BERTOPIC_WAY} unless the pick scores higher in each of {', '.join(GUARD_CRITERIA)}",
            "serving_signal": chosen.serving_signal,
            "head_agreement": round(float(chosen.agreement), 4),
            "rule": f"{BERTOPIC_WAY}: the model saved first (the pretrained encoder); a fine-tuned candidate: the "
            "signal that made it; a cached objective's: the pretrained encoder with a linear head (SCAN's own, or one "
            "fitted on its embeddings); the consensus and the other pretrained candidate: the fine-tuned signal whose "
            "linear head reproduces it most faithfully (the pretrained encoder when none was fine-tuned)",
        },
        "num_train_texts": len(texts),
        "texts_sha1": texts_sha1(texts),
        "choose_seconds": round(choose_seconds, 2),
    }


def served_history(output_dir: str, chosen, seconds: float) -> list[dict]:
    """What the run served when: the first save's entry (its ``training_run.json``), then what it serves now
    (``chosen``: a :class:`~hf_textcluster.runs.auto.SignalsChoice`) ``seconds`` after the start."""
    history = list(_read(output_dir).auto.get("served_history", []))
    if chosen.serving_signal == PRETRAINED:
        by = "kept: no trained candidate was confirmed" if chosen.served == chosen.pick else "kept: asked for"
    else:
        by = "the label-free choice, confirmed by its guard" if chosen.served == chosen.pick else "asked for"
    return [*history, {"served": chosen.served, "seconds": round(seconds, 1), "by": by}]


def save_auto_run(request, model, chosen, record, metrics, assignments, seconds) -> None:
    """The serving model (None: the model saved first stays), the kept candidates (``chosen``: a
    :class:`~hf_textcluster.runs.auto.SignalsChoice`), the training texts' clusters (``assignments.csv``) and
    ``training_run.json`` (the serving signal's, or the first save's, with ``auto``, what ``request`` asked and the
    run's ``seconds`` by phase) in ``request.output_dir``, all at once
    (:func:`~hf_textcluster.runs.saving.save_model_folder`)."""
    output_dir = request.output_dir
    serving_signal, criterion = chosen.serving_signal, record["choice"]["criterion"]
    first_save, signal = _read(output_dir), SIGNALS.get(serving_signal)
    run = first_save if signal is None else _read(os.path.join(output_dir, SIGNALS_DIR, serving_signal))
    record["first_save_seconds"] = first_save.auto.get("first_save_seconds")
    run = replace(
        run,
        method=first_save.method if signal is None else signal.method,
        auto=record,
        **request.record(),
        serving={
            "served": chosen.served,
            "criterion": criterion,
            "scores": {n: v[criterion] for n, v in record["candidates"].items()} if criterion else {},
        },
        config_overrides={} if signal is None else dict(signal.config),
        k_selection=first_save.k_selection or run.k_selection,
        metrics=metrics,
        seconds=dict(seconds),
    )
    candidates = ({**chosen.candidates, SERVED_KEY: chosen.served_labels}, record)
    save_model_folder(output_dir, model=model, run=run, assignments=assignments, candidates=candidates)


def _read(folder: str) -> RunRecord:
    """The run record in ``folder`` (an empty one without), its ``auto`` block a mapping."""
    run = RunFolder(folder).read_record() or RunRecord()
    return replace(run, auto=run.auto or {})
