"""Training under several processes (``accelerate launch`` / ``torchrun``): the global batch, global means, results
computed once on the main process, and the gradient average. The methods call the model's parts (encode, heads,
training modules) rather than its forward, so DDP's hooks do not apply: these are their explicit equivalents, built on
accelerate's collectives (``gather``, ``reduce``, ``broadcast_object_list``)."""

from __future__ import annotations

import warnings

import torch
from accelerate.utils import broadcast_object_list

from .checkpoints import training_module_parameters


def gather(trainer, *tensors: torch.Tensor):
    """The global batch: each tensor (one row per text) concatenated over the processes in rank order; the tensor
    itself in a single process. A tensor that needs gradients goes through ``torch.distributed.nn``'s all-gather
    (accelerate's ``gather`` has no backward), whose backward sums what every process computes for this process's
    rows: when every process computes the same global loss from the gathered rows, the averaged gradient is the
    single-process one."""
    accelerator = trainer.accelerator
    if accelerator.num_processes == 1:
        return tensors[0] if len(tensors) == 1 else tensors
    from torch.distributed.nn.functional import all_gather

    with warnings.catch_warnings():  # deprecated for a private API (torch 2.13); still the public one
        warnings.simplefilter("ignore", FutureWarning)
        gathered = [torch.cat(all_gather(t)) if t.requires_grad else accelerator.gather(t) for t in tensors]
    return gathered[0] if len(gathered) == 1 else tuple(gathered)


def global_mean(trainer, local_mean: torch.Tensor, count) -> torch.Tensor:
    """A mean over the global batch's items from this process's mean over its ``count`` items (e.g. a per-token
    loss over this process's tokens): every process sees the global mean, and the averaged gradient is the
    single-process one. ``local_mean`` itself in a single process."""
    accelerator = trainer.accelerator
    if accelerator.num_processes == 1:
        return local_mean
    total = local_mean * count
    stats = torch.stack([total.detach().float(), torch.as_tensor(count, dtype=torch.float32, device=total.device)])
    stats = accelerator.reduce(stats, reduction="sum")
    scaled = total * accelerator.num_processes  # the gradient average divides by the number of processes
    return (scaled - scaled.detach() + stats[0]) / stats[1].clamp_min(1)


def share_from_main(trainer, compute):
    """``compute()`` on the main process only, its (picklable) result sent to the others: whole-corpus passes
    (embeddings, k-means, word vectors) are computed once however many processes train."""
    accelerator = trainer.accelerator
    if accelerator.num_processes == 1:
        return compute()
    box = [None]
    if accelerator.is_main_process:
        trainer.main_only = True  # an encoding pass inside runs here alone, not split between the processes
        try:
            box = [("ok", compute())]
        except Exception as err:  # the others must not wait forever for a result that will not come
            box = [("error", err)]
            broadcast_object_list(box, from_process=0)
            raise
        finally:
            trainer.main_only = False
    broadcast_object_list(box, from_process=0)
    status, value = box[0]
    if status == "error":
        raise RuntimeError(f"The main process failed computing a shared result: {value!r}")
    return value


def average_gradients(trainer) -> None:
    """The mean of every process's gradients (one flat all-reduce), after each step's backward. Done here rather than
    by DDP: the methods call the model's parts instead of its forward, which DDP's hooks rely on."""
    named = [*trainer.model.named_parameters(), *training_module_parameters(trainer)]
    params = [p for _, p in named if p.grad is not None]
    if not params:
        return
    flat = trainer.accelerator.reduce(torch.cat([p.grad.reshape(-1).float() for p in params]), reduction="mean")
    for p, grad in zip(params, flat.split([p.grad.numel() for p in params])):
        p.grad.copy_(grad.view_as(p.grad))
