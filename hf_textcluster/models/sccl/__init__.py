"""SCCL: Supporting Clustering with Contrastive Learning (Zhang et al., NAACL 2021)."""
from .configuration_sccl import SCCLConfig
from .modeling_sccl import SCCLModel

__all__ = ["SCCLConfig", "SCCLModel"]
