"""Precision chosen by the hardware: ``"auto"`` is bf16 autocast only where the device runs it natively (CUDA, or a
CPU with AVX-512-BF16 or AMX: oneDNN's emulation is 9x-30x *slower* than fp32), fp32 elsewhere;
``$HF_TEXTCLUSTER_PRECISION`` overrides it. Serving also takes ``"int8"`` (CPU only, 1.7x-2.5x fp32 at a small cost
in agreement; see docs/results.md), never picked by ``"auto"``.
"""

from __future__ import annotations

import copy
import functools
import os
import warnings
from typing import Any

import torch

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
INFERENCE_PRECISIONS = PRECISIONS + ("int8",)
PRECISION_ENV = "HF_TEXTCLUSTER_PRECISION"
_DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


@functools.cache
def cpu_has_native_bf16() -> bool:
    """Whether this CPU runs bf16 in hardware *and* oneDNN may use it (``ONEDNN_MAX_CPU_ISA=AVX2`` counts as AVX2)."""
    cpu: Any = getattr(torch, "cpu", None)
    try:
        has_instructions = bool(cpu._is_avx512_bf16_supported() or cpu._is_amx_tile_supported())
        onednn = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a torch build without these probes: assume the slow case
        return False
    return has_instructions and onednn


def native_bf16(device: torch.device | str = "cpu") -> bool:
    """Whether bf16 autocast is fast (not emulated) on ``device``."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if device.type == "cpu":
        return cpu_has_native_bf16()
    return False


def check_precision(precision, inference: bool = False) -> str:
    """The precision's name, or a clear error. ``inference``: serving, where ``"int8"`` is also allowed."""
    if precision is None:
        precision = os.environ.get(PRECISION_ENV, "auto")
    if isinstance(precision, torch.dtype):
        precision = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}.get(precision, precision)
    allowed = INFERENCE_PRECISIONS if inference else PRECISIONS
    if precision not in allowed:
        extra = (
            "" if inference or precision != "int8" else " ('int8' is for inference only: predict, embed, the pipeline)"
        )
        raise ValueError(
            f"`precision` must be one of {allowed} (or ${PRECISION_ENV}), got {precision!r}{extra}. 'auto' uses bf16 "
            "only where the device runs it natively."
        )
    return precision


def resolve_precision(
    precision: str | torch.dtype | None = "auto", device: torch.device | str = "cpu", inference: bool = False
) -> str:
    """``precision`` checked, or for ``"auto"`` (``None``: the environment's) the fastest safe one on ``device``."""
    precision = check_precision(precision, inference)
    if precision == "auto" and os.environ.get(PRECISION_ENV, "auto") != "auto":
        precision = check_precision(os.environ[PRECISION_ENV])
    if precision == "auto":
        return "bf16" if native_bf16(device) else "fp32"
    if precision == "int8" and torch.device(device).type != "cpu":
        raise ValueError(
            f"`precision='int8'` (dynamic int8 quantization) runs on CPU only; the model is on {device}. "
            "Use 'auto' there, or move the model to the CPU."
        )
    return precision


def autocast_dtype(
    precision: str | torch.dtype | None = "auto", device: torch.device | str = "cpu"
) -> torch.dtype | None:
    """The dtype to autocast to on ``device`` (``None``: run in fp32)."""
    return _DTYPES[resolve_precision(precision, device)]


def quantize_int8(module: torch.nn.Module) -> torch.nn.Module:
    """A copy of ``module`` with its Linear layers dynamically int8 (CPU). torch's deprecation warning (for torchao,
    whose CPU path needs compilation) is silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(
            copy.deepcopy(module).eval(), {torch.nn.Linear}, dtype=torch.qint8
        )
