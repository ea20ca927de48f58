"""Every Python snippet of README.md and docs/*.md runs here, on a tiny random encoder, offline, in seconds.

Snippets are read with pytest-markdown-docs' own parser, so its fence options hold: ``python continuation`` goes on
from the snippet before it (same namespace); ``python notest`` is not run and must follow an HTML comment
``<!-- notest: <reason> -->`` (it is reported as skipped with that reason). Each page's snippets run in a fresh
folder that holds what the docs assume a user has:

- ``tickets.csv`` (columns ``text``, ``team``) and ``texts.txt`` (one text per line): 120 short texts in 3 topics;
- ``runs/my-model``: a tiny SCCL model trained for a few steps on them (calibrated, as the trainer leaves it);

Snippets of one page share one folder, in page order (a page is one walk-through), and the default encoder
(``sentence-transformers/all-MiniLM-L6-v2``, or ``None``) resolves to the tiny 2-layer BERT
of ``tests/conftest.py``, so a snippet that trains the real recipe trains it on that encoder.
"""

from __future__ import annotations

import csv
import re
import shutil
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

pytest_markdown_docs = pytest.importorskip("pytest_markdown_docs.plugin")

# Written by programs (`python -m training.bench`, `python -m training.docs cards`), not by hand: their code blocks are
# examples of
# generated output (repo ids of the Hub), checked where they are generated.
GENERATED = {"docs/results.md", "docs/example_model_card.md", "docs/example_model_card_decmlm.md"}
NOTEST_REASON = re.compile(r"<!--\s*notest:\s*(.+?)\s*-->", re.S)


def documentation_files() -> list[Path]:
    files = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]
    return [f for f in files if f.relative_to(REPO_ROOT).as_posix() not in GENERATED]


def _snippets():
    """(test id, file, source or None, skip reason or None) for every Python fence."""
    parser = pytest_markdown_docs.pytest_markdown_docs_markdown_it()
    cases = []
    for path in documentation_files():
        rel = path.relative_to(REPO_ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        tests = {t.start_line: t for t in pytest_markdown_docs.extract_fence_tests(parser, text, 0, path)}
        tokens = parser.parse(text)
        for i, token in enumerate(tokens):
            if token.type != "fence" or not token.map:
                continue
            info = token.info.split()
            if not info or info[0] not in ("py", "python", "python3"):
                continue
            line = token.map[0] + 1
            test_id = f"{rel}:{line}"
            if "notest" in info:
                before = tokens[i - 1].content if i > 0 and tokens[i - 1].type == "html_block" else ""
                match = NOTEST_REASON.search(before)
                cases.append((test_id, rel, None, match.group(1) if match else None, "continuation" in info))
            else:
                cases.append((test_id, rel, tests[line].source, None, "continuation" in info))
    return cases


SNIPPETS = _snippets()


def test_every_page_is_scanned():
    assert any(case[1] == "README.md" for case in SNIPPETS), "README.md has no Python snippet"
    assert len({case[1] for case in SNIPPETS}) >= 5, "fewer than 5 pages with Python snippets were found"


def _write_corpus(folder: Path, toy_corpus) -> None:
    texts, labels = toy_corpus
    teams = ["databases", "systems", "apps"]
    with open(folder / "tickets.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "team"])
        writer.writerows((text, teams[label]) for text, label in zip(texts, labels))
    (folder / "texts.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def docs_world(tmp_path_factory, tiny_encoder_dir, toy_corpus):
    """A folder with the user's files and a trained tiny model; the default encoder resolved to the tiny BERT."""
    import hf_textcluster
    from hf_textcluster import encoders
    from hf_textcluster.models import building

    real_resolve = encoders.resolve_encoder

    def resolve_tiny(name_or_path=None):
        if name_or_path is None or str(name_or_path) == encoders.DEFAULT_ENCODER:
            name_or_path = str(tiny_encoder_dir)
        return real_resolve(name_or_path)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(building, "resolve_encoder", resolve_tiny)
        mp.setattr(encoders, "resolve_encoder", resolve_tiny)
        mp.setattr(hf_textcluster, "resolve_encoder", resolve_tiny)
        mp.setenv("HF_HUB_OFFLINE", "1")
        folder = tmp_path_factory.mktemp("docs-world")
        _write_corpus(folder, toy_corpus)
        from hf_textcluster.data import add_augmented_views, load_text_file

        train = add_augmented_views(load_text_file(folder / "tickets.csv", label_column="team"), "word_deletion")
        hf_textcluster.train_clusterer(
            "sccl",
            train,
            str(folder / "runs" / "my-model"),
            num_clusters=3,
            training_overrides={
                "max_steps": 4,
                "per_device_train_batch_size": 16,
                "save_strategy": "no",
                "bf16": False,
            },
        )
        yield folder


@pytest.fixture(scope="module")
def page_folders(docs_world, tmp_path_factory):
    """One copy of the docs world per page, made when the page's first snippet runs."""
    folders: dict[str, Path] = {}

    def folder(page: str) -> Path:
        if page not in folders:
            folders[page] = tmp_path_factory.mktemp("page") / "world"
            shutil.copytree(docs_world, folders[page])
        return folders[page]

    return folder


@pytest.mark.parametrize("case", SNIPPETS, ids=[case[0] for case in SNIPPETS])
def test_snippet(case, page_folders, monkeypatch):
    test_id, page, source, skip_reason, continuation = case
    if source is None:
        assert skip_reason, f"{test_id}: a `python notest` snippet needs <!-- notest: <reason> --> right above it"
        pytest.skip(skip_reason)
    monkeypatch.chdir(page_folders(page))
    # pytest-markdown-docs prepends the snippets a `continuation` goes on from, so each test runs its page's chain.
    code = compile(source, str(REPO_ROOT / page), "exec")
    exec(code, {"__name__": "__docs__"})


def test_readme_links_point_to_files():
    """README is not part of the site (mkdocs --strict checks the site's links): its relative links are checked here."""
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not re.match(r"[a-z]+://", t)]
    assert local, "README links to no local file"
    missing = [t for t in local if not (REPO_ROOT / t).exists()]
    assert not missing, f"README links to missing files: {missing}"
