"""The label-free criteria of a kept ``train --method auto`` run's candidates, computed again (e.g. with criteria
added since): from its run folder (each kept signal's model and the pretrained encoder embed the texts again) or,
for the criteria that need no model, from the committed candidate store."""

from __future__ import annotations

import os
from collections.abc import Sequence

from transformers import AutoModel

from hf_textcluster.choosing.criteria import PRETRAINED, lexical_space
from hf_textcluster.choosing.serving import partition_features
from hf_textcluster.models import get_method
from hf_textcluster.reuse import embed
from hf_textcluster.runs.candidate_file import read_candidates, texts_match
from hf_textcluster.runs.folder import RunFolder
from hf_textcluster.runs.gather_candidates import pretrained_embedder
from hf_textcluster.runs.saving import CANDIDATES_FILE, SERVED_KEY
from hf_textcluster.runs.signals import SIGNALS, SIGNALS_DIR

from .criteria import AUTO_RECORDED, REGISTRY, criteria_of


def rescore_kept_candidates(
    model_dir: str | os.PathLike,
    texts: Sequence[str],
    *,
    encoder: str | None = None,
    criteria: Sequence[str] = AUTO_RECORDED,
    random_state: int = 0,
    precision: str = "auto",
) -> dict[str, dict[str, float]]:
    """The label-free criteria of the candidates a ``train --method auto`` run kept, computed again (e.g. with
    criteria added since): each kept signal's model and the pretrained encoder embed ``texts`` again.

    Args:
        model_dir: the run's folder (its :data:`CANDIDATES_FILE` and ``signals/``).
        texts: the run's training texts, in the order it trained on them.
        encoder: the run's pretrained encoder (default: the one its ``training_run.json`` records, else the
            default encoder).
        criteria: which of :data:`~training.bench.criteria.AUTO_RECORDED` to compute.
        random_state: seed of the criteria (the run's seed reproduces its own values).
        precision: of the encoding passes (``"auto"``, ``"fp32"``, ``"bf16"``; the run's own reproduces its values).

    Returns:
        ``{criterion: {candidate: value}}``.

    Raises:
        ValueError: the folder keeps no candidates or no signal models, or ``texts`` are not the texts they partition.

    Example:
        >>> values = rescore_kept_candidates("runs/auto-so", texts, criteria=["knn_holdout_shared"])  # doctest: +SKIP
    """
    kept = read_candidates(model_dir, served=False)
    if kept is None:
        raise ValueError(f"{os.fspath(model_dir)} keeps no candidate partitions ({CANDIDATES_FILE}).")
    partitions, metadata = kept
    if not texts_match(texts, metadata):
        raise ValueError("`texts` are not the training texts the kept candidates partition (count or digest differ).")
    # nothing to embed, unless a lexical criterion lacks its space (texts sharing too few words): then it falls back
    # on the embeddings, as in training
    spaces_read = {REGISTRY[c].space for c in criteria if c in REGISTRY}
    if spaces_read <= {None, "lexical"} and (
        "lexical" not in spaces_read or lexical_space(texts, random_state=random_state) is not None
    ):
        return criteria_of(partitions, {}, texts=texts, criteria=criteria, random_state=random_state)
    spaces, model = {}, None
    for name, signal in SIGNALS.items():
        folder = os.path.join(os.fspath(model_dir), SIGNALS_DIR, name)
        if os.path.isfile(os.path.join(folder, "config.json")):
            model = get_method(signal.method).model_class.from_pretrained(folder)
            embeddings = embed(model, list(texts), show_progress_bar=False, precision=precision)
            spaces[name] = partition_features(model, embeddings)
    if model is None:  # no encoder fine-tuned (the cached objectives' candidates): the pretrained space alone
        if any(not name.startswith((f"{PRETRAINED}/", "consensus")) for name in partitions):
            raise ValueError(
                f"{os.fspath(model_dir)} keeps no trained signal under {SIGNALS_DIR}/: train it with --keep-signals "
                "(keep_signals=True) to re-score its candidates in the signals' spaces."
            )
        model = AutoModel.from_pretrained(os.fspath(model_dir))
    embedder = pretrained_embedder(model, encoder or getattr(RunFolder(model_dir).read_record(), "encoder", None))
    embeddings = embed(embedder, list(texts), show_progress_bar=False, precision=precision)
    spaces[PRETRAINED] = partition_features(embedder, embeddings)
    return criteria_of(partitions, spaces, texts=texts, criteria=criteria, random_state=random_state)


def rescore_from_store(kept, texts: list[str], seed: int, criteria, what: str) -> dict[str, dict[str, float]]:
    """The criteria the committed candidate store can give (no model: agreement, the lexical vote and its supported
    form) of a run's kept partitions, computed again on its ``texts``."""
    partitions, metadata = kept
    partitions.pop(SERVED_KEY, None)
    if not texts_match(texts, metadata):
        raise SystemExit(f"{what}: the stored candidates partition other texts than the corpus gives now.")
    possible = tuple(c for c in AUTO_RECORDED if REGISTRY[c].space in (None, "lexical"))  # no model's space
    wanted = list(criteria or possible)
    need_models = [c for c in wanted if c not in possible]
    if need_models or lexical_space(texts, random_state=seed) is None:
        raise SystemExit(
            f"{what}: {', '.join(need_models) or 'the lexical vote (too few shared words)'} needs the run's models, "
            "which only its run folder keeps; the candidate store gives " + ", ".join(possible) + "."
        )
    return criteria_of(partitions, {}, texts=texts, criteria=wanted, random_state=seed)
