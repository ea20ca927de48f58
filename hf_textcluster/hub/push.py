"""Sharing clusterers on the Hugging Face Hub: ``push_to_hub`` with a model card, and remote code for users without
this package.

This is the Hub layer of the package: it sits above the models and calls them, never the other way round.
:func:`save_pretrained` is ``model.save_pretrained`` plus a model card and the remote code, and :func:`push_to_hub`
uploads all of it in one commit (a model's own ``push_to_hub`` is transformers', without either).

A pushed repository holds ``config.json``, ``model.safetensors``, the tokenizer, a generated ``README.md`` (see
:mod:`hf_textcluster.hub.model_card`), ``training_run.json`` when known, and the method's inference code (see
:mod:`hf_textcluster.models.remote_code`: the package's own configuration / modeling / pipeline files, importing only
torch, numpy and transformers). ``config.json`` then carries

- ``auto_map`` (``AutoConfig`` / ``AutoModel`` -> e.g. ``modeling_decmlm.DECMLMModel``), so that
  ``AutoModel.from_pretrained(repo, trust_remote_code=True)`` works without ``hf_textcluster``;
- ``custom_pipelines`` (``text-clustering`` -> ``pipelines.TextClusteringPipeline``), which is how transformers
  finds a repository's own pipeline: ``pipeline("text-clustering", model=repo, trust_remote_code=True)``.

Where ``hf_textcluster`` is imported, its registered classes and pipeline take precedence (the config drops both keys
on load), so nothing needs ``trust_remote_code``.
"""

import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..modeling.loading_checks import check_finite_weights
from ..modeling.modeling_utils import TextClusteringPreTrainedModel
from ..modeling.serialization import save_folder
from ..models.remote_code import add_remote_code, shipped_file_names
from ..representation import name_clusters
from ..runs.folder import RunFolder
from ..runs.record import RunRecord
from ..runs.saving import CARD_FILE, write_record
from .card_data import card_texts, encoder_hub_id
from .model_card import generate_model_card


def save_pretrained(
    model, save_directory: str | os.PathLike, *args, model_card=False, remote_code: bool = False, **kwargs
) -> None:
    """``model.save_pretrained(save_directory)`` and what the package adds, saved together (all or nothing): with
    ``remote_code``, the inference code and ``config.json``'s ``auto_map`` / ``custom_pipelines`` (so that
    ``trust_remote_code=True`` loads it without hf_textcluster); with ``model_card`` (True, a dict of
    :func:`~hf_textcluster.hub.model_card.generate_model_card` arguments, or the card's text), ``README.md`` (the
    folder's ``training_run.json`` feeds a generated card).

    Example:
        >>> save_pretrained(model, "runs/tickets-share", model_card=True, remote_code=True)  # doctest: +SKIP
    """
    with_card = model_card is not None and model_card is not False
    if not (remote_code or with_card):
        model.save_pretrained(save_directory, *args, **kwargs)
        return
    check_finite_weights(model)  # no card for a diverged model
    card_kwargs = dict(model_card) if isinstance(model_card, dict) else {}
    if with_card and not isinstance(model_card, str):  # the folder's training_run.json feeds a generated card
        card_kwargs.setdefault("training_run", RunFolder(save_directory).read_record())
    card_kwargs.setdefault("remote_code", bool(remote_code))

    def write(staging: str) -> None:
        model.save_pretrained(staging, *args, **kwargs)
        if remote_code:
            add_remote_code(staging, model.config.model_type)
        if with_card:
            _write_card(staging, model, model_card, **card_kwargs)

    save_folder(save_directory, write)  # the Hub layer's own save: the weights, the code and the card, at once


def _write_card(folder: str, model, model_card, **card_kwargs) -> None:
    """``README.md`` in ``folder``: ``model_card`` when it is the card's text, else a card generated with
    ``card_kwargs``."""
    card = model_card if isinstance(model_card, str) else generate_model_card(model, **card_kwargs)
    Path(folder, CARD_FILE).write_text(card, encoding="utf-8")


def check_ready_to_push(model) -> None:
    """Raise before anything is uploaded if ``model`` is not something a user could use from the Hub."""
    if not isinstance(model, TextClusteringPreTrainedModel):
        raise TypeError(f"push_to_hub expects an hf_textcluster clusterer, got {type(model).__name__}.")
    if not model.config.centroids_initialized:
        raise RuntimeError(
            f"Refusing to push this {type(model).__name__}: its clusters were never initialised (the model was not "
            "trained), so nobody could predict with it. Nothing was uploaded. Train it first (`hf-textcluster "
            "train`, or a trainer, or `hf_textcluster.editing.initialize_clusters(model, texts)`)."
        )
    check_finite_weights(model)  # a diverged model is never uploaded
    if model.tokenizer is None:
        raise ValueError(
            f"Refusing to push this {type(model).__name__} without a tokenizer: the pipeline and `predict` need one. "
            "Nothing was uploaded. Set `model.tokenizer = AutoTokenizer.from_pretrained(<encoder>)` first."
        )


def push_to_hub(
    model,
    repo_id: str,
    *,
    metrics: Mapping[str, Any] | None = None,
    texts: Sequence[str] | None = None,
    training_run: RunRecord | None = None,
    model_card: bool | str = True,
    remote_code: bool = True,
    private: bool | None = None,
    token: str | bool | None = None,
    revision: str | None = None,
    create_pr: bool = False,
    commit_message: str | None = None,
    commit_description: str | None = None,
    max_shard_size: int | str | None = "50GB",
    **card_kwargs,
):
    """Upload a trained clusterer to ``repo_id`` in one commit: weights, config, tokenizer, model card, the
    ``training_run.json`` (when given) and, with ``remote_code``, the self-contained code. Returns the
    ``huggingface_hub.CommitInfo``.

    Everything is checked and written to a temporary folder before the first request, and the files land in a single
    commit made after every upload succeeded, so a failure never leaves a half-uploaded repository.

    Args:
        model: a trained clusterer (``config.centroids_initialized`` must be set).
        repo_id: ``"org/name"`` (created if missing).
        metrics, texts, training_run, **card_kwargs: for :func:`~hf_textcluster.hub.model_card.generate_model_card`
            (``dataset_name``, ``base_model``, ``license``, ``language``, ``tags``).
        model_card: ``True`` to generate the card, a string to upload as README.md, ``False`` for none.
        remote_code: ship the inference code and the ``auto_map`` / ``custom_pipelines`` entries.
        private, token, revision, create_pr, commit_message, commit_description: as in ``HfApi.upload_folder``.
    """
    from huggingface_hub import HfApi

    if not isinstance(repo_id, str) or not repo_id.strip("/"):
        raise ValueError(f"`repo_id` must be a Hub repository id such as 'org/name', got {repo_id!r}.")
    check_ready_to_push(model)
    api = HfApi(token=token)
    if getattr(api, "endpoint", None):  # before any work: an endpoint that never answers must not hang
        check_hub_answers(api.endpoint)
    with tempfile.TemporaryDirectory(prefix="hf-textcluster-push-") as folder:
        save_pretrained(model, folder, remote_code=remote_code, max_shard_size=max_shard_size)
        if model_card:
            card_kwargs.update(training_run=training_run, metrics=metrics, texts=texts, remote_code=remote_code)
            _write_card(folder, model, model_card, repo_id=repo_id, **card_kwargs)
        if training_run is not None:
            run = replace(training_run)
            if run.encoder:  # a local path says nothing to others (and may leak a home folder)
                run.encoder = encoder_hub_id(run.encoder) or os.path.basename(run.encoder.rstrip("/"))
            if run.input and run.input.path:  # the user's file: its name only
                run.input = replace(run.input, path=os.path.basename(str(run.input.path)))
            write_record(folder, run)
        repo_url = api.create_repo(repo_id, private=private, exist_ok=True, repo_type="model")
        if revision is not None and not create_pr:
            api.create_branch(repo_url.repo_id, branch=revision, exist_ok=True)
        return api.upload_folder(
            repo_id=repo_url.repo_id,
            folder_path=folder,
            repo_type="model",
            revision=revision,
            create_pr=create_pr,
            commit_message=commit_message or f"Upload {type(model).__name__} ({model.config.num_clusters} clusters)",
            commit_description=commit_description,
            delete_patterns=shipped_file_names(),  # an earlier push's code files, those this one ships replaced
        )


def check_hub_answers(endpoint: str, timeout: float | None = None) -> None:
    """One request to ``endpoint`` with a timeout (``HF_HUB_ETAG_TIMEOUT``, 10 s by default): a Hub that refuses
    connections or never answers is a one-line ConnectionError naming the URL, not a silent hang (huggingface_hub's
    own requests have no timeout). Any HTTP answer, even an error status, means it is there."""
    import urllib.error
    import urllib.request

    from huggingface_hub import constants

    timeout = float(timeout if timeout is not None else constants.HF_HUB_ETAG_TIMEOUT)
    url = endpoint.rstrip("/") + "/api/whoami-v2"
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout).close()
    except urllib.error.HTTPError:
        return  # it answered
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        if isinstance(reason, TimeoutError):  # socket.timeout is TimeoutError since Python 3.10
            raise ConnectionError(
                f"The Hub at {endpoint} did not answer within {timeout:g}s ({url}): check "
                "HF_ENDPOINT and your network, or raise HF_HUB_ETAG_TIMEOUT."
            ) from err
        raise ConnectionError(
            f"Cannot reach the Hub at {endpoint} ({url}): {getattr(reason, 'strerror', None) or reason}."
            " Check HF_ENDPOINT and your network."
        ) from err


def push_model_dir(
    model_dir: str | os.PathLike,
    repo_id: str,
    *,
    texts: Sequence[str] | None = None,
    data_dir: str | os.PathLike | None = None,
    max_texts: int | None = 5000,
    label_clusters: bool = False,
    model=None,
    **kwargs,
):
    """Push a trained model directory (what ``hf-textcluster train`` wrote): the model is loaded and checked, its
    ``training_run.json`` supplies the card's metrics and command, and the run's own input file (``train --input``) or
    its benchmark texts (when available locally) the cluster keywords. ``label_clusters`` names the clusters after
    their keywords (``id2label``); ``model``: the folder's model when the caller has it loaded already (on the device
    it encodes on)."""
    model, run = RunFolder(model_dir).open(model=model)
    check_ready_to_push(model)
    texts, why_no_texts = card_texts(run, texts, data_dir, max_texts, kwargs)
    if label_clusters and texts is None and not model.config.has_topic_model:
        raise ValueError(
            "`label_clusters` needs the training texts: pass `texts=` or `data_dir=` (the run's benchmark folder)"
            + (f"; {why_no_texts}." if why_no_texts else ".")
        )
    if label_clusters:  # a model with learned topics is named without texts
        name_clusters(model, texts)
    return push_to_hub(model, repo_id, texts=texts, training_run=run, **kwargs)
