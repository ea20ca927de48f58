"""What a ``train --method auto`` run records and saves: the ``auto`` block of ``training_run.json`` (the signals,
every candidate's criteria, the choice, what it served when) and the serving model's run folder."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ..choosing.candidate_choice import BERTOPIC_WAY, GUARD_CRITERIA
from ..choosing.criteria import AUTO_CRITERIA, PRETRAINED
from .folder import RunFolder
from .record import AutoChoice, AutoRun, CachedRun, RunRecord, Served, Serving, SignalRun, texts_sha1
from .saving import SERVED_KEY, SIGNALS_DIR, save_model_folder
from .signals import CACHED_SIGNALS, SIGNALS

__all__ = ["auto_record", "save_auto_run"]

_RULE = (
    f"{BERTOPIC_WAY}: the model saved first (the pretrained encoder); a fine-tuned candidate: the signal that made "
    "it; a cached objective's: the pretrained encoder with a linear head (SCAN's own, or one fitted on its "
    "embeddings); the consensus and the other pretrained candidate: the fine-tuned signal whose linear head "
    "reproduces it most faithfully (the pretrained encoder when none was fine-tuned)"
)


def auto_record(
    results: Mapping, chosen, criterion: str | None, texts: Sequence[str], seconds: Mapping[str, float], made=None
) -> AutoRun:
    """What ``training_run.json`` records under ``"auto"``: the signals (``results``), the cached objectives
    (``made``: :class:`~hf_textcluster.runs.gather_candidates.CachedCandidates`), the candidates' criteria and the
    choice (``chosen``: a :class:`~hf_textcluster.runs.auto.SignalsChoice`; ``criterion`` None: the candidate served
    was asked for), ``seconds`` of the choice (``"choose"``) and of the estimate (``"estimate"``)."""
    criteria = chosen.criteria
    names = [c for c in AUTO_CRITERIA if c in criteria]
    signals = {
        name: SignalRun(
            **SIGNALS[name]._asdict(),  # method, config, description
            folder=os.path.join(SIGNALS_DIR, name),
            steps=int(r.trainer.state.global_step),
            batch_size=int(r.trainer.args.per_device_train_batch_size),
            train_seconds=round(r.train_seconds, 2),
        )
        for name, r in results.items()
    }
    guard = f"{BERTOPIC_WAY} unless the pick scores higher in each of {', '.join(GUARD_CRITERIA)}"
    choice = AutoChoice(
        chosen.served, criterion, chosen.pick, guard, chosen.serving_signal, round(float(chosen.agreement), 4), _RULE
    )
    return AutoRun(
        num_train_texts=len(texts),
        texts_sha1=texts_sha1(texts),
        signals=signals,
        criteria=names,
        candidates={name: {c: round(float(criteria[c][name]), 6) for c in names} for name in chosen.candidates},
        choice=choice,
        choose_seconds=round(seconds["choose"], 2),
        estimate_seconds=round(seconds["estimate"], 1),
        cached=None if made is None else {n: CachedRun(CACHED_SIGNALS[n], s) for n, s in made.seconds.items()},
    )


def save_auto_run(request, model, chosen, auto: AutoRun, metrics, assignments, seconds, started, keep) -> AutoRun:
    """The serving model (None: the model saved first stays), the kept candidates (``chosen``: a
    :class:`~hf_textcluster.runs.auto.SignalsChoice`), the training texts' clusters (``assignments.csv``) and
    ``training_run.json`` (the serving signal's, or the first save's, with ``auto``, what the run served when
    (``started``: its start, a ``time.perf_counter()``), what ``request`` asked and the run's ``seconds`` by phase) in
    ``request.output_dir``, all at once (:func:`~hf_textcluster.runs.saving.save_model_folder`). The signals' folders
    are recorded if ``keep`` (else removed after). Returns the ``auto`` block saved."""
    output_dir = request.output_dir
    first_save, signal = _read(output_dir), SIGNALS.get(chosen.serving_signal)
    run = first_save if signal is None else _read(os.path.join(output_dir, SIGNALS_DIR, chosen.serving_signal))
    before = first_save.auto or AutoRun()
    auto = replace(
        auto,
        signals={name: replace(s, folder=s.folder if keep else None) for name, s in auto.signals.items()},
        served_history=(*(before.served_history or ()), _served(chosen, time.perf_counter() - started)),
        first_save_seconds=before.first_save_seconds,
    )
    criterion = auto.choice.criterion
    run = replace(
        run,
        method=first_save.method if signal is None else signal.method,
        auto=auto,
        **request.record(),
        serving=Serving(
            chosen.served, criterion, {n: v[criterion] for n, v in auto.candidates.items()} if criterion else {}
        ),
        config_overrides={} if signal is None else dict(signal.config),
        k_selection=first_save.k_selection or run.k_selection,
        metrics=metrics,
        seconds=dict(seconds),
    )
    candidates = ({**chosen.candidates, SERVED_KEY: chosen.served_labels}, auto)
    save_model_folder(output_dir, model=model, run=run, assignments=assignments, candidates=candidates)
    return auto


def _served(chosen, seconds: float) -> Served:
    """What the run serves now (``chosen``: a :class:`~hf_textcluster.runs.auto.SignalsChoice`) ``seconds`` after
    its start, and why."""
    if chosen.serving_signal == PRETRAINED:
        by = "kept: no trained candidate was confirmed" if chosen.served == chosen.pick else "kept: asked for"
    else:
        by = "the label-free choice, confirmed by its guard" if chosen.served == chosen.pick else "asked for"
    return Served(chosen.served, round(seconds, 1), by)


def _read(folder: str) -> RunRecord:
    """The run record in ``folder`` (an empty one without)."""
    return RunFolder(folder).read_record() or RunRecord()
