"""Shared fixtures: tiny randomly initialised encoders built from a config (no download), offline settings."""

from __future__ import annotations

import os

from hf_textcluster.models.building import from_encoder_pretrained

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from pathlib import Path

import pytest
import torch

# Tiny models run far faster on one thread than on two here (thread overhead dominates); the end-to-end
# tests on the real MiniLM raise it again with the `all_threads` fixture.
DEFAULT_THREADS = torch.get_num_threads()
torch.set_num_threads(1)

REPO_ROOT = Path(__file__).resolve().parents[1]

WORDS = [
    "how",
    "do",
    "i",
    "join",
    "two",
    "tables",
    "in",
    "oracle",
    "sql",
    "query",
    "select",
    "from",
    "where",
    "database",
    "index",
    "python",
    "list",
    "dict",
    "sort",
    "file",
    "read",
    "write",
    "open",
    "java",
    "class",
    "method",
    "string",
    "int",
    "array",
    "loop",
    "error",
    "exception",
    "install",
    "package",
    "linux",
    "bash",
    "shell",
    "script",
    "command",
    "line",
    "apple",
    "cocoa",
    "window",
    "view",
    "button",
    "click",
    "event",
    "matlab",
    "plot",
    "matrix",
    "vector",
    "excel",
    "cell",
    "formula",
    "sheet",
    "hibernate",
    "spring",
    "bean",
    "session",
    "mapping",
    "haskell",
    "monad",
    "type",
    "function",
    "scala",
    "actor",
    "akka",
]


def shared_data_dir() -> Path | None:
    candidate = os.environ.get("HF_TEXTCLUSTER_DATA_DIR") or str(REPO_ROOT.parent / "shared" / "data")
    path = Path(candidate)
    return path if (path / "stackoverflow.csv").is_file() else None


@pytest.fixture(scope="session")
def tiny_encoder_dir(tmp_path_factory) -> Path:
    """A 2-layer, 32-wide BERT with a WordPiece vocabulary of the words above, saved like any checkpoint."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    path = tmp_path_factory.mktemp("tiny-bert")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(set(WORDS)) + list("abcdefghijklmnopqrstuvwxyz?")
    vocab_map = {token: i for i, token in enumerate(dict.fromkeys(vocab))}
    backend = Tokenizer(models.WordPiece(vocab_map, unk_token="[UNK]"))
    backend.normalizer = normalizers.BertNormalizer(lowercase=True)
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    from tokenizers import processors

    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab_map["[CLS]"]), ("[SEP]", vocab_map["[SEP]"])]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )
    config = BertConfig(
        vocab_size=len(vocab_map),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    import torch

    torch.manual_seed(0)
    BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_mpnet_dir(tiny_encoder_dir, tmp_path_factory) -> Path:
    """A 1-layer, 32-wide MPNet (all-mpnet-base-v2's architecture: no token types, no decoder version) with the tiny
    BERT's tokenizer."""
    from transformers import AutoTokenizer, MPNetConfig, MPNetModel

    path = tmp_path_factory.mktemp("tiny-mpnet")
    tokenizer = AutoTokenizer.from_pretrained(tiny_encoder_dir)
    config = MPNetConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=66,
    )
    torch.manual_seed(0)
    MPNetModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def toy_corpus() -> tuple[list[str], list[int]]:
    """120 short texts in 3 topics, deterministic, with labels."""
    import random

    rng = random.Random(0)
    topics = [WORDS[0:17], WORDS[17:33], WORDS[33:]]
    texts, labels = [], []
    for i in range(120):
        label = i % 3
        texts.append(" ".join(rng.choice(topics[label]) for _ in range(rng.randint(3, 9))))
        labels.append(label)
    return texts, labels


@pytest.fixture(scope="module")
def toy_model(tiny_encoder_dir, toy_corpus):
    """A tiny seeded SCCL model with k-means clusters on the toy corpus; one per test module (tests may change it)."""
    from hf_textcluster import SCCLModel
    from hf_textcluster.editing import initialize_clusters

    torch.manual_seed(0)
    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    initialize_clusters(model, toy_corpus[0])
    return model


@pytest.fixture()
def all_threads():
    torch.set_num_threads(DEFAULT_THREADS)
    yield
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def data_dir_or_skip() -> Path:
    path = shared_data_dir()
    if path is None:
        pytest.skip("benchmark CSVs not found: set HF_TEXTCLUSTER_DATA_DIR (default <repo>/../shared/data)")
    return path


# Fixtures that make a test slow wherever it sits (`make test-fast` leaves such tests out; `make test` runs them):
# the stand-in Hub server and the olah mirror (real HTTP servers, client subprocesses) and the real MiniLM
# (`all_threads`).
SLOW_FIXTURES = {"hub_server": "the local Hub server", "olah_endpoint": "the olah mirror", "all_threads": "the MiniLM"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if any(name in SLOW_FIXTURES for name in getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture()
def bench_store(tmp_path, monkeypatch):
    """The benchmark store (``training.bench.store``) writing to a temporary results.json / results.md, with run
    folders under tmp_path/runs (the modules that use it put the checkout on ``sys.path`` for ``training``)."""
    from training.bench import store

    monkeypatch.setattr(store, "RESULTS_JSON", tmp_path / "results.json")
    monkeypatch.setattr(store, "RESULTS_MD", tmp_path / "results.md")
    monkeypatch.setattr(store, "REPO", tmp_path)
    return store
