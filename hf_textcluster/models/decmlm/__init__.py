"""DEC-MLM: unsupervised fine-tuning with a masked-LM loss and a DEC clustering loss (Huang et al., COLING 2020)."""
from .configuration_decmlm import DECMLMConfig
from .modeling_decmlm import DECMLMModel

__all__ = ["DECMLMConfig", "DECMLMModel"]
