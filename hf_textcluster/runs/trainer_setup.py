"""What a training run builds before it trains: the model's configuration (the recipe's, with the user's overrides
checked), the schedule and the training arguments, then the model and the method's Trainer."""

from __future__ import annotations

import difflib
from dataclasses import fields

import torch
from transformers.utils import logging

from ..models.building import from_encoder_pretrained
from ..training.arguments import ClusteringTrainingArguments
from .schedule import Schedule, plan_schedule

logger = logging.get_logger(__name__)


def check_config_overrides(config_class, overrides: dict) -> None:
    """Unknown keys and values of the wrong kind are errors here, not a silently stored key or a failure at step 1."""
    defaults = config_class()
    for key, value in overrides.items():
        if key == "encoder" or not hasattr(defaults, key):
            known = sorted(
                k for k in defaults.to_dict() if not k.startswith("_") and k not in ("encoder", "transformers_version")
            )
            close = difflib.get_close_matches(key, known, n=1)
            raise ValueError(
                f"Unknown {config_class.__name__} key {key!r}"
                + (f"; did you mean {close[0]!r}?" if close else f". Known keys: {', '.join(known)}.")
            )
        default = getattr(defaults, key)
        numeric = isinstance(default, (int, float)) and not isinstance(default, bool)
        if numeric and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ValueError(f"Config key {key!r} takes a number (default {default!r}), got {value!r}.")
        if isinstance(default, bool) and not isinstance(value, bool):
            raise ValueError(f"Config key {key!r} takes true or false, got {value!r}.")


def build_training_arguments(output_dir: str, recipe_training: dict, overrides: dict | None = None, seed: int = 0):
    values = {"output_dir": output_dir, "seed": seed, "report_to": "none", "save_total_limit": 2}
    values.update(recipe_training)
    values.update(overrides or {})
    steps = values.get("max_steps", -1)
    # the loss terms every ~10% of a short run (the progress bar shows them), at most every 50 steps
    values.setdefault("logging_steps", min(50, max(1, steps // 10)) if steps > 0 else 50)
    if steps > 0 and "save_steps" not in values and values.get("save_strategy", "steps") == "steps":
        # Checkpoints every ~10% of the run, so an interrupted `train` has something to resume from.
        values["save_strategy"], values["save_steps"] = "steps", max(1, steps // 10)
    if not torch.cuda.is_available():
        values.setdefault("use_cpu", True)  # TrainingArguments refuses bf16 without a GPU unless told it is on CPU
    unknown = sorted(set(values) - {f.name for f in fields(ClusteringTrainingArguments)})
    if unknown:
        raise ValueError(f"Unknown training arguments {unknown}; see `hf-textcluster train --help`.")
    return ClusteringTrainingArguments(**values)


def set_up_training(spec, request, plan: dict, num_texts: int) -> tuple[dict, Schedule, ClusteringTrainingArguments]:
    """(the model's config values, the schedule, the training arguments) of a run of ``spec`` as ``request`` (a
    :class:`~hf_textcluster.runs.request.TrainingRequest`) asks, with the recipe ``plan`` on ``num_texts`` training
    texts; says the schedule (a warning when ``request.verbose``, else at INFO level)."""
    check_config_overrides(spec.config_class, request.config_overrides or {})
    config_kwargs = {**plan["config"], **(request.config_overrides or {})}
    schedule = plan_schedule(plan, num_texts, request.training_overrides)
    training = {**plan["training"], "max_steps": schedule.max_steps or -1}
    if not request.verbose:
        training["disable_tqdm"] = True
    args = build_training_arguments(request.output_dir, training, request.training_overrides, seed=request.seed)
    (logger.warning if request.verbose else logger.info)(
        f"Training {spec.display_name} with the {request.recipe} recipe: {schedule.describe()}."
    )
    return config_kwargs, schedule, args


def build_trainer(spec, num_clusters: int, encoder, config_kwargs: dict, args, train_dataset, test_dataset, embeddings):
    """(model, trainer): the method's model (K clusters, built from the encoder) and its Trainer. ``embeddings``
    (those that chose K, if any) initialise k-means; the evaluation is on the held-out texts, or on the training
    texts without them."""
    model = from_encoder_pretrained(spec.model_class, encoder, num_clusters=num_clusters, **config_kwargs)
    return model, spec.trainer_class(
        model=model,
        args=args,
        train_dataset=train_dataset,
        init_embeddings=embeddings,
        eval_dataset=test_dataset if test_dataset is not None else train_dataset,
    )
