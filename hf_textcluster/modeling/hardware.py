"""The CPU a run is on, in words, for logs and benchmark tables.

Package-only: no shipped module imports this one, so it is not part of a pushed repository's remote code (what the
hardware decides for serving, bf16 or not, is :mod:`~hf_textcluster.modeling.precision`).
"""

from __future__ import annotations

import torch

from .precision import cpu_has_native_bf16


def cpu_capability() -> str:
    """A short description of the CPU's vector capability, for logs, benchmark tables and model cards."""
    capability = torch.backends.cpu.get_cpu_capability()
    extras = []
    cpu = torch.cpu
    for name, probe in (("AVX512-BF16", "_is_avx512_bf16_supported"), ("AMX", "_is_amx_tile_supported")):
        try:
            if getattr(cpu, probe)():
                extras.append(name)
        except (AttributeError, RuntimeError):
            pass
    native = "native bf16" if cpu_has_native_bf16() else "no native bf16"
    return f"{capability}{''.join(' + ' + e for e in extras)} ({native})"
