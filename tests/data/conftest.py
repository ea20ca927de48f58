"""Fixtures of the data tests: the real benchmark folder (or a skip), tiny files, a tiny masked LM."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def real_data_dir() -> Path | None:
    """``$HF_TEXTCLUSTER_DATA_DIR``, else ``<repo>/../shared/data``, if it holds the benchmark CSVs."""
    path = Path(os.environ.get("HF_TEXTCLUSTER_DATA_DIR") or REPO_ROOT.parent / "shared" / "data")
    return path if (path / "stackoverflow.csv").is_file() else None


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = real_data_dir()
    if path is None:
        pytest.skip(
            "benchmark CSVs not found: set HF_TEXTCLUSTER_DATA_DIR to the folder holding stackoverflow.csv "
            "(default <repo>/../shared/data)"
        )
    return path


@pytest.fixture(scope="session")
def confirm_data_dir() -> Path:
    """The prepared CSVs of the confirmation-only corpora (kept out of the repository and of the shared folder):
    ``$HF_TEXTCLUSTER_CONFIRM_DATA_DIR``, else ``<repo>/../confirm-data``; skipped when absent."""
    path = Path(os.environ.get("HF_TEXTCLUSTER_CONFIRM_DATA_DIR") or REPO_ROOT.parent / "confirm-data")
    if not (path / "banking77.csv").is_file():
        pytest.skip(
            "confirmation-only CSVs not found: set HF_TEXTCLUSTER_CONFIRM_DATA_DIR to the folder holding banking77.csv "
            "(default <repo>/../confirm-data)"
        )
    return path


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory) -> str:
    """One fresh datasets cache for the tests that load the real corpora (never the user's cache)."""
    return str(tmp_path_factory.mktemp("hf_datasets_cache"))


MLM_WORDS = [
    "how",
    "do",
    "i",
    "query",
    "a",
    "table",
    "in",
    "oracle",
    "database",
    "python",
    "list",
    "of",
    "string",
    "data",
    "java",
    "strings",
    "arrays",
    "what",
    "error",
    "server",
    "code",
    "using",
    "windows",
    "linux",
    "function",
    "class",
    "file",
    "read",
    "write",
    "sql",
    "select",
    "join",
    "index",
    "loop",
]


@pytest.fixture(scope="session")
def tiny_mlm_dir(tmp_path_factory) -> Path:
    """A randomly initialised 1-layer BertForMaskedLM with a hand-made WordPiece vocabulary (no download)."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    path = tmp_path_factory.mktemp("tiny-mlm")
    letters = list("abcdefghijklmnopqrstuvwxyz")
    vocab = list(
        dict.fromkeys(
            ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
            + sorted(set(MLM_WORDS))
            + letters
            + ["##" + c for c in letters]
            + ["##s", "##ing", "?", ",", ":", "-", "."]
        )
    )
    # transformers 5: BertTokenizer takes the vocabulary itself (vocab=dict); vocab_file= is ignored.
    tokenizer = BertTokenizer(vocab={token: i for i, token in enumerate(vocab)}, do_lower_case=True)
    tokenizer.save_pretrained(path)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    BertForMaskedLM(config).save_pretrained(path)
    return path


@pytest.fixture
def one_torch_thread():
    """Tiny models run far faster on one thread (thread start-up dominates); restores the setting after."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_roberta_mlm_dir(tmp_path_factory) -> Path:
    """A randomly initialised RobertaForMaskedLM with a byte-level BPE trained here on a few sentences."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaForMaskedLM, RobertaTokenizer

    path = tmp_path_factory.mktemp("tiny-roberta")
    bpe = ByteLevelBPETokenizer()
    sentences = [" ".join(MLM_WORDS[i : i + 6]) for i in range(0, len(MLM_WORDS), 3)]
    bpe.train_from_iterator(sentences * 5, vocab_size=400, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])  # fmt: skip
    bpe.save_model(str(path))
    merges = [tuple(line.split()) for line in (path / "merges.txt").read_text().splitlines()[1:] if line]
    tokenizer = RobertaTokenizer(vocab=bpe.get_vocab(), merges=merges)
    tokenizer.save_pretrained(path)
    torch.manual_seed(0)
    config = RobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=66,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=0,
        eos_token_id=2,
    )
    RobertaForMaskedLM(config).save_pretrained(path)
    return path
