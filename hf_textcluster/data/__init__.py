"""Data for short-text clustering: the benchmark corpora as ``datasets``, user texts, and augmented views.

>>> from hf_textcluster.data import load_benchmark
>>> ds = load_benchmark("stackoverflow", data_dir="../shared/data")     # text, label (ClassLabel, 20 names)
>>> ds = load_benchmark("stackoverflow", augmentation="sccl_contextual")  # + text_aug1, text_aug2
>>> ds = load_sample()                                                  # 2,000 titles shipped in the package
"""

from ..modeling.validation import validate_texts
from .augmentation import AUGMENTERS, add_augmented_views, get_augmenter
from .augmenters import RandomWordDeletion, RandomWordSwap, TextAugmenter, VirtualAugmenter
from .benchmark import DATA_DIR_ENV, ShortTextClusteringBenchmark, ShortTextClusteringConfig
from .corpora import BENCHMARKS, CORPORA, CorpusSpec
from .loading import default_data_dir, load_benchmark, load_sample, load_texts
from .nlpaug_augmenters import ContextualWordSubstitution, WordNetSynonymAugmenter
from .precomputed import AUGMENTATION_FAMILIES
from .provenance import benchmark_corpus, views_augmentation
from .readers import parse_json_lines, parse_label_tab_text, parse_line_aligned
from .text_files import load_text_file

__all__ = [
    "AUGMENTATION_FAMILIES",
    "AUGMENTERS",
    "BENCHMARKS",
    "CORPORA",
    "ContextualWordSubstitution",
    "CorpusSpec",
    "DATA_DIR_ENV",
    "RandomWordDeletion",
    "RandomWordSwap",
    "ShortTextClusteringBenchmark",
    "ShortTextClusteringConfig",
    "TextAugmenter",
    "VirtualAugmenter",
    "WordNetSynonymAugmenter",
    "add_augmented_views",
    "benchmark_corpus",
    "default_data_dir",
    "get_augmenter",
    "load_benchmark",
    "load_sample",
    "load_text_file",
    "load_texts",
    "parse_json_lines",
    "parse_label_tab_text",
    "parse_line_aligned",
    "validate_texts",
    "views_augmentation",
]
