"""docs/example_model_card*.md: the cards of two small models (SCCL and DEC-MLM) trained on the pip-shipped MiniLM
for a few steps on a fixed toy corpus of IT tickets in three teams (labels only score), as a user would train them
with ``hf-textcluster train --input tickets.csv --label-column team``. Deterministic: fixed texts, seeds and fp32.

    python -m training.docs cards            # rewrite both cards (about a minute on 2 CPU cores)
    python -m training.docs cards --check    # exit 1 when they are stale
"""

from __future__ import annotations

import csv
import random
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CARDS = {"sccl": REPO / "docs" / "example_model_card.md", "decmlm": REPO / "docs" / "example_model_card_decmlm.md"}
REPO_IDS = {"sccl": "your-org/sccl-tickets", "decmlm": "your-org/decmlm-tickets"}
MAX_STEPS = 20
# Four teams; a third of each ticket's words are generic and some words are shared by two teams, so the clusters
# are not trivially separable.
TOPICS = {
    "databases": [
        "sql",
        "query",
        "table",
        "index",
        "join",
        "oracle",
        "postgres",
        "deadlock",
        "backup",
        "schema",
        "replica",
        "transaction",
    ],
    "network": [
        "vpn",
        "wifi",
        "dns",
        "proxy",
        "firewall",
        "router",
        "packet",
        "ping",
        "gateway",
        "ethernet",
        "bandwidth",
        "ssl",
    ],
    "accounts": [
        "password",
        "reset",
        "login",
        "account",
        "locked",
        "expired",
        "mfa",
        "sso",
        "permission",
        "group",
        "username",
        "profile",
    ],
    "hardware": [
        "printer",
        "laptop",
        "screen",
        "keyboard",
        "battery",
        "dock",
        "monitor",
        "mouse",
        "toner",
        "charger",
        "headset",
        "webcam",
    ],
}
SHARED = {
    "databases": ["timeout", "access"],
    "network": ["timeout", "slow"],
    "accounts": ["access", "email"],
    "hardware": ["slow", "email"],
}
GENERIC = [
    "help",
    "please",
    "urgent",
    "issue",
    "error",
    "cannot",
    "since",
    "today",
    "again",
    "still",
    "broken",
    "not",
    "working",
]


def toy_tickets(num_texts: int = 200, seed: int = 0) -> list[tuple[str, str]]:
    """``(text, team)`` rows: short tickets of 4 to 9 words, a third of them generic, in a fixed order."""
    rng = random.Random(seed)
    teams = list(TOPICS)
    rows = []
    for i in range(num_texts):
        team = teams[i % len(teams)]
        words = [
            rng.choice(GENERIC) if rng.random() < 0.35 else rng.choice(TOPICS[team] + SHARED[team])
            for _ in range(rng.randint(4, 9))
        ]
        rows.append((" ".join(words), team))
    return rows


def train_example(method: str, folder: Path) -> Path:
    """Train ``method`` on the toy tickets in ``folder`` as ``hf-textcluster train`` does; the model's folder."""
    import torch

    from hf_textcluster.data import load_text_file
    from hf_textcluster.runs.api import train_clusterer

    path = folder / "tickets.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([("text", "team"), *toy_tickets()])
    torch.manual_seed(0)
    output_dir = folder / method
    train_clusterer(
        method,
        load_text_file(path, label_column="team"),
        str(output_dir),
        augmentation="word_deletion" if method == "sccl" else None,  # DEC-MLM trains on the texts alone
        training_overrides={
            "max_steps": MAX_STEPS,
            "per_device_train_batch_size": 16,
            "bf16": False,  # the same numbers on every CPU
            "save_strategy": "no",
        },
        input_file={"path": str(path), "text_column": "text", "label_column": "team"},
    )
    return output_dir


def train_and_card(method: str, folder: Path) -> str:
    """The card of ``method`` trained on the toy tickets (see :func:`train_example`)."""
    from hf_textcluster.hub.model_card import write_model_card

    return write_model_card(train_example(method, folder), "-", repo_id=REPO_IDS[method])


def render_cards() -> dict[Path, str]:
    """Each example card's path and its text as generated today."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: the sums in the same order everywhere
    try:
        with tempfile.TemporaryDirectory() as tmp:
            return {CARDS[m]: train_and_card(m, Path(tmp)) for m in CARDS}
    finally:
        torch.set_num_threads(threads)


def write(check: bool = False) -> list[Path]:
    """Rewrite the example cards (``check``: write nothing); the paths that were (or would be) changed."""
    changed = []
    for path, text in render_cards().items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            changed.append(path)
            if not check:
                path.write_text(text, encoding="utf-8")
    return changed
