"""Fixtures shared by the method tests."""

import numpy as np
import pytest
from datasets import Dataset


@pytest.fixture()
def views_dataset(toy_corpus):
    """The toy corpus with two augmented views (random word deletion, and the text itself)."""
    texts, labels = toy_corpus
    rng = np.random.default_rng(0)
    aug = [" ".join(w for w in t.split() if rng.random() > 0.2) or t for t in texts]
    return Dataset.from_dict({"text": texts, "text_aug1": aug, "text_aug2": texts, "label": labels})
