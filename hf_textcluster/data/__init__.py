"""Data for short-text clustering: the benchmark corpora as ``datasets``, user texts, and augmented views.

>>> from hf_textcluster.data import load_benchmark
>>> ds = load_benchmark("stackoverflow", data_dir="../shared/data")     # text, label (ClassLabel, 20 names)
>>> ds = add_augmented_views(ds, "word_deletion")                        # + text_aug1, text_aug2
>>> ds = load_sample()                                                  # 2,000 titles shipped in the package
"""

from .augmentation import add_augmented_views
from .corpora import BENCHMARKS, CORPORA
from .loading import default_data_dir, load_benchmark, load_sample, load_texts
from .text_files import load_text_file

__all__ = [
    "BENCHMARKS",
    "CORPORA",
    "add_augmented_views",
    "default_data_dir",
    "load_benchmark",
    "load_sample",
    "load_text_file",
    "load_texts",
]
