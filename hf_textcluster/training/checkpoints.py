"""What a resumed run needs besides the Trainer's own files: each checkpoint's method arrays and training modules,
a manifest written last that lists them, and the newest complete checkpoint of a run folder."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from functools import partial
from typing import BinaryIO

import numpy as np
import torch
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
from transformers.utils import logging

logger = logging.get_logger(__name__)

CHECKPOINT_ARRAY_PREFIX = "hf_textcluster_"


# Written last into each checkpoint, after the weights, optimizer, RNG states and the method's own files: it lists those
# files, so that a checkpoint a crash cut off before its end is recognised as incomplete.
CHECKPOINT_MANIFEST = f"{CHECKPOINT_ARRAY_PREFIX}checkpoint.json"


def _checkpoint_problem(folder: str) -> str | None:
    """Why ``folder`` (a ``checkpoint-N``) cannot be resumed from, or None when it is complete."""
    for name in ("config.json", "model.safetensors", "trainer_state.json"):
        if not os.path.isfile(os.path.join(folder, name)):
            return f"it has no {name}"
    try:
        with open(os.path.join(folder, "trainer_state.json")) as f:
            json.load(f)
    except (OSError, ValueError):
        return "its trainer_state.json is cut off"
    try:
        with open(os.path.join(folder, CHECKPOINT_MANIFEST)) as f:
            needed = json.load(f)["files"]
    except FileNotFoundError:
        return f"it has no {CHECKPOINT_MANIFEST}"
    except (OSError, ValueError, KeyError, TypeError):
        return f"its {CHECKPOINT_MANIFEST} is cut off"
    missing = [name for name in needed if not os.path.isfile(os.path.join(folder, name))]
    if missing:
        return f"it lacks {', '.join(missing)}"
    return None


def last_complete_checkpoint(output_dir: str) -> str | None:
    """The newest ``checkpoint-N`` of ``output_dir`` that holds everything a resumed run needs (weights, trainer
    state, and the method's own files listed in its manifest). A newer one that a crash cut off is skipped with a
    warning naming it and the checkpoint used instead."""
    if not os.path.isdir(output_dir):
        return None
    names = [d for d in os.listdir(output_dir) if re.fullmatch(rf"{PREFIX_CHECKPOINT_DIR}-\d+", d)]
    skipped: list[str] = []
    for name in sorted(names, key=lambda d: int(d.rsplit("-", 1)[1]), reverse=True):
        folder = os.path.join(output_dir, name)
        if not os.path.isdir(folder):
            continue
        problem = _checkpoint_problem(folder)
        if problem is None:
            if skipped:
                logger.warning(
                    f"Skipping the incomplete checkpoint{'s' if len(skipped) > 1 else ''} "
                    f"{'; '.join(skipped)} (interrupted while saving); resuming from {folder} instead."
                )
            return folder
        skipped.append(f"{folder} ({problem})")
    if skipped:
        logger.warning(
            f"No complete checkpoint in {output_dir}: skipping {'; '.join(skipped)} (interrupted while saving)."
        )
    return None


TRAINING_MODULES_FILE = f"{CHECKPOINT_ARRAY_PREFIX}training_modules.safetensors"


def training_module_parameters(trainer) -> list[tuple[str, torch.nn.Parameter]]:
    """The parameters of the trainer's ``training_modules()`` that are not the model's, by qualified name."""
    in_model = {id(p) for p in trainer.model.parameters()}
    return [
        (f"{name}.{param_name}", param)
        for name, module in trainer.training_modules().items()
        for param_name, param in module.named_parameters()
        if id(param) not in in_model
    ]


def training_module_state(trainer) -> dict[str, torch.Tensor]:
    """The training modules' own tensors (parameters and buffers not shared with the model), by qualified name."""
    seen = {t.data_ptr() for t in trainer.model.state_dict().values()}
    state = {}
    for name, module in trainer.training_modules().items():
        for key, tensor in module.state_dict().items():
            # tensors tied inside a module (a decoder's output layer and input embeddings) are stored once
            if tensor.data_ptr() not in seen:
                seen.add(tensor.data_ptr())
                state[f"{name}.{key}"] = tensor.detach().cpu().contiguous()
    return state


def save_resume_files(trainer, folder: str) -> None:
    """The method's own files (``checkpoint_arrays``, the training modules) and the manifest naming them, written
    while the Trainer saves a checkpoint: before its ``trainer_state.json`` and before older checkpoints are rotated
    away, so a checkpoint that looks complete is complete (each file atomically: a temporary file, then a rename)."""
    if not trainer.args.should_save:
        return
    files: dict[str, Callable[[BinaryIO], object]] = {
        f"{CHECKPOINT_ARRAY_PREFIX}{name}.npy": partial(np.save, arr=np.asarray(array))
        for name, array in trainer.checkpoint_arrays().items()
    }
    if trainer.training_modules():
        from safetensors.torch import save

        files[TRAINING_MODULES_FILE] = lambda f: f.write(save(training_module_state(trainer)))
    manifest = json.dumps({"files": list(files)}).encode()
    files[CHECKPOINT_MANIFEST] = lambda f: f.write(manifest)
    for name, write in files.items():
        path = os.path.join(folder, name)
        with open(path + ".tmp", "wb") as f:
            write(f)
        os.replace(path + ".tmp", path)


def resume_checkpoint(trainer, checkpoint: str | bool | None) -> str | bool | None:
    """The checkpoint ``train(resume_from_checkpoint=checkpoint)`` resumes from: ``True`` is the newest complete one
    of the run's ``output_dir``, an error when there is none."""
    if checkpoint is True:
        checkpoint = last_complete_checkpoint(trainer.args.output_dir)
        if checkpoint is None:
            raise ValueError(
                f"resume_from_checkpoint=True, but {trainer.args.output_dir} holds no complete "
                "checkpoint to resume from. Pass resume_from_checkpoint=None to start over."
            )
    return checkpoint


def restore_resume_files(trainer, checkpoint: str) -> None:
    """Take back what the Trainer does not restore from ``checkpoint`` (before a resumed run's first step): what its
    config says that the weights do not (``trainer.restore_config``) and what ``save_resume_files`` wrote."""
    if os.path.isfile(os.path.join(checkpoint, "config.json")):
        with open(os.path.join(checkpoint, "config.json")) as f:
            trainer.restore_config(json.load(f))
    arrays = {
        name[len(CHECKPOINT_ARRAY_PREFIX) : -len(".npy")]: np.load(os.path.join(checkpoint, name))
        for name in sorted(os.listdir(checkpoint))
        if name.startswith(CHECKPOINT_ARRAY_PREFIX) and name.endswith(".npy")
    }
    trainer.restore_checkpoint_arrays(arrays)
    modules = trainer.training_modules()
    if not modules:
        return
    modules_file = os.path.join(checkpoint, TRAINING_MODULES_FILE)
    if not os.path.isfile(modules_file):
        raise ValueError(
            f"{checkpoint} lacks {TRAINING_MODULES_FILE} (the {', '.join(modules)} this method trains besides the "
            "model): resume with --no-resume to start over."
        )
    from safetensors.torch import load_file

    saved = load_file(modules_file)
    for name, module in modules.items():
        own = {k[len(name) + 1 :]: v for k, v in saved.items() if k.startswith(f"{name}.")}
        module.load_state_dict(own, strict=False)  # the tensors it shares with the model are the model's
