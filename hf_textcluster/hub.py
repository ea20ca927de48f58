"""Sharing clusterers on the Hugging Face Hub: ``push_to_hub`` with a model card, and remote code for users without
this package.

A pushed repository holds ``config.json``, ``model.safetensors``, the tokenizer, a generated ``README.md`` (see
:mod:`hf_textcluster.modelcard`), ``training_run.json`` when known, and the self-contained inference code
``standalone_textcluster.py``: one file, the same for every method that has remote code (SCCL, DEC-MLM), holding
the shared config fields, pooling, Student's t assignment, batched ``embed`` / ``predict`` / ``predict_proba`` and
the ``text-clustering`` pipeline once, plus each method's config and model class (with the heads its checkpoints
hold, under the package's parameter names). It imports only torch / numpy / transformers. ``config.json`` then
carries

- ``auto_map`` (``AutoConfig`` / ``AutoModel`` -> the method's classes in that file, e.g.
  ``standalone_textcluster.DECMLMModel``), so that ``AutoModel.from_pretrained(repo, trust_remote_code=True)`` works
  without ``hf_textcluster``;
- ``custom_pipelines`` (``text-clustering`` -> the pipeline class of that file), which is how transformers finds a
  repository's own pipeline: ``pipeline("text-clustering", model=repo, trust_remote_code=True)``.

Where ``hf_textcluster`` is imported, its registered classes and pipeline take precedence (the config drops both keys
on load), so nothing needs ``trust_remote_code``.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any, Mapping, Sequence

from .modelcard import TRAINING_RUN_FILE, encoder_hub_id, generate_model_card

STANDALONE_FILE = Path(__file__).resolve().parent / "standalone_textcluster.py"

# model_type -> (self-contained code file, its config class, its model class). The file ships as-is.
REMOTE_CODE = {
    "sccl": (STANDALONE_FILE, "SCCLConfig", "SCCLModel"),
    "decmlm": (STANDALONE_FILE, "DECMLMConfig", "DECMLMModel"),
}
PIPELINE_TASK = "text-clustering"
PIPELINE_CLASS = "TextClusteringPipeline"


def remote_code_file(model_type: str) -> Path | None:
    """The self-contained inference file of a method, or ``None`` when the method has none yet."""
    entry = REMOTE_CODE.get(model_type)
    return entry[0] if entry is not None else None


def add_remote_code(directory: str | os.PathLike, model_type: str) -> list[str]:
    """Copy the method's self-contained code into a saved model ``directory`` and point ``config.json``'s
    ``auto_map`` and ``custom_pipelines`` at it. Returns the files added (none, with a warning, for a method without
    remote code: such a repository needs ``pip install hf_textcluster``)."""
    directory = Path(directory)
    entry = REMOTE_CODE.get(model_type)
    if entry is None:
        warnings.warn(
            f"Method {model_type!r} has no self-contained remote code yet: the repository will need "
            "`pip install hf_textcluster` to be used (trust_remote_code=True will not work).",
            stacklevel=2,
        )
        return []
    source, config_class, model_class = entry
    config_path = directory / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    module = source.stem
    config["auto_map"] = {"AutoConfig": f"{module}.{config_class}", "AutoModel": f"{module}.{model_class}"}
    config["custom_pipelines"] = {
        PIPELINE_TASK: {"impl": f"{module}.{PIPELINE_CLASS}", "pt": ["AutoModel"], "tf": [], "type": "text"}
    }
    shutil.copyfile(source, directory / source.name)
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return [source.name]


def check_ready_to_push(model) -> None:
    """Raise before anything is uploaded if ``model`` is not something a user could use from the Hub."""
    from .modeling_utils import TextClusteringPreTrainedModel

    if not isinstance(model, TextClusteringPreTrainedModel):
        raise TypeError(f"push_to_hub expects an hf_textcluster clusterer, got {type(model).__name__}.")
    if not model.config.centroids_initialized:
        raise RuntimeError(
            f"Refusing to push this {type(model).__name__}: its clusters were never initialised (the model was not "
            "trained), so nobody could predict with it. Nothing was uploaded. Train it first (`hf-textcluster "
            "train`, or a trainer, or `model.initialize_centroids(texts)`)."
        )
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
    training_run: Mapping[str, Any] | None = None,
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
        metrics, texts, training_run, **card_kwargs: for :func:`~hf_textcluster.modelcard.generate_model_card`
            (``dataset_name``, ``base_model``, ``license``, ``language``, ``tags``).
        model_card: ``True`` to generate the card, a string to upload as README.md, ``False`` for none.
        remote_code: ship ``standalone_textcluster.py`` and the ``auto_map`` / ``custom_pipelines`` entries.
        private, token, revision, create_pr, commit_message, commit_description: as in ``HfApi.upload_folder``.
    """
    from huggingface_hub import HfApi

    if not isinstance(repo_id, str) or not repo_id.strip("/"):
        raise ValueError(f"`repo_id` must be a Hub repository id such as 'org/name', got {repo_id!r}.")
    check_ready_to_push(model)
    with tempfile.TemporaryDirectory(prefix="hf-textcluster-push-") as folder:
        model.save_pretrained(folder, remote_code=remote_code, max_shard_size=max_shard_size)
        if model_card:
            card = model_card if isinstance(model_card, str) else generate_model_card(
                model, training_run=training_run, metrics=metrics, texts=texts, repo_id=repo_id,
                remote_code=remote_code, **card_kwargs,
            )
            Path(folder, "README.md").write_text(card, encoding="utf-8")
        if training_run:
            run = dict(training_run)
            if run.get("encoder"):  # a local path says nothing to others (and may leak a home folder)
                run["encoder"] = encoder_hub_id(run["encoder"]) or os.path.basename(str(run["encoder"]).rstrip("/"))
            Path(folder, TRAINING_RUN_FILE).write_text(json.dumps(run, indent=2), encoding="utf-8")
        api = HfApi(token=token)
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
        )


def push_model_dir(
    model_dir: str | os.PathLike,
    repo_id: str,
    *,
    texts: Sequence[str] | None = None,
    data_dir: str | os.PathLike | None = None,
    max_texts: int | None = 5000,
    label_clusters: bool = False,
    **kwargs,
):
    """Push a trained model directory (what ``hf-textcluster train`` wrote): the model is loaded and checked, its
    ``training_run.json`` supplies the card's metrics and command, and the run's benchmark texts (when available
    locally) the cluster keywords. ``label_clusters`` names the clusters after their keywords (``id2label``)."""
    from .modelcard import _sample, label_clusters as name_clusters, load_clusterer, read_training_run, training_texts_for

    model_dir = Path(model_dir)
    if not (model_dir / "config.json").is_file():
        raise FileNotFoundError(f"{model_dir} is not a saved model directory (no config.json).")
    model = load_clusterer(model_dir)
    check_ready_to_push(model)
    run = read_training_run(model_dir)
    if texts is None:
        texts = training_texts_for(run, data_dir)
    if texts is not None:
        texts = _sample(list(texts), max_texts)
        if label_clusters:
            name_clusters(model, texts)
    elif label_clusters:
        raise ValueError(
            "`label_clusters` needs the training texts: pass `texts=` or `data_dir=` (the run's benchmark folder)."
        )
    return push_to_hub(model, repo_id, texts=texts, training_run=run, **kwargs)
