"""A save is all or nothing: every command that saves a model folder, killed after each of its file operations (the
process dies there: no later file operation runs, no cleanup either), leaves a folder that loads and predicts as its
old state or as its new one, its `previous/` included (an edit in place keeps the model before there: the new state's
`previous/` is the old state's model), and running the command again finishes the job."""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import io
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModel

import hf_textcluster  # noqa: F401
from hf_textcluster.cli import main
from hf_textcluster.editing import initialize_clusters
from hf_textcluster.modeling import serialization
from hf_textcluster.models import get_method
from hf_textcluster.models.building import from_encoder_pretrained
from hf_textcluster.representation import name_clusters
from hf_textcluster.runs.folder import RunFolder
from hf_textcluster.runs.record import RunRecord, texts_sha1
from hf_textcluster.runs.saving import PREVIOUS_FOLDER, save_model_folder, write_assignments, write_record

K = 4
KEPT = "self_training/kmeans"  # a candidate partition the folder keeps, as a `train --method auto` run does


class Killed(BaseException):
    """The process died at this file operation: it and every later one fail, so no cleanup runs (as with SIGKILL)."""


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


@contextlib.contextmanager
def file_operations(kill_after: int | None = None):
    """Count the file operations run inside (moves, links, deletions, folders made, files opened for writing,
    safetensors files written, the folder swap); with ``kill_after=n``, the process dies after the n-th."""
    done: list[str] = []
    patch = pytest.MonkeyPatch()

    def counted(name, function, writes=lambda *args, **kwargs: True):
        def operation(*args, **kwargs):
            if not writes(*args, **kwargs):
                return function(*args, **kwargs)
            if kill_after is not None and len(done) >= kill_after:
                raise Killed(name)
            result = function(*args, **kwargs)
            done.append(" ".join([name, *(os.fspath(a) for a in args[:2] if isinstance(a, (str, os.PathLike)))]))
            return result

        return operation

    for name in ("rename", "replace", "link", "symlink", "unlink", "remove", "rmdir", "mkdir"):
        patch.setattr(os, name, counted(f"os.{name}", getattr(os, name)))
    patch.setattr(os, "open", counted("os.open", os.open, lambda path, flags, *a, **k: bool(flags & _WRITE_FLAGS)))
    opened_for_writing = lambda file, mode="r", *a, **k: any(c in mode for c in "wax+")  # noqa: E731
    patch.setattr(builtins, "open", counted("open", builtins.open, opened_for_writing))
    patch.setattr(io, "open", counted("open", io.open, opened_for_writing))
    import safetensors.numpy
    import safetensors.torch
    import transformers.modeling_utils

    for module, name in [
        (safetensors.torch, "save_file"),
        (safetensors.numpy, "save_file"),
        (transformers.modeling_utils, "safe_save_file"),
        (serialization, "_exchange"),
    ]:
        if hasattr(module, name):
            patch.setattr(module, name, counted(f"{module.__name__}.{name}", getattr(module, name)))
    try:
        yield done
    finally:
        patch.undo()


def _tiny_generator(path: Path, texts) -> Path:
    """A 1-layer random GPT-2 with a word-level tokenizer of the texts' words (what `name` asks for names)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    vocab = ["<pad>", "<unk>", "<eos>", *sorted({w for t in texts for w in t.split()})]
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="<unk>", pad_token="<pad>", eos_token="<eos>"
    )
    config = GPT2Config(
        vocab_size=len(vocab), n_layer=1, n_embd=16, n_head=2, n_positions=256, eos_token_id=2, bos_token_id=2
    )
    torch.manual_seed(0)
    model = GPT2LMHeadModel(config)
    with torch.no_grad():  # answers of words, not special tokens
        model.get_output_embeddings().weight[:3] = 0.0
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def pristine(tiny_encoder_dir, toy_corpus, tmp_path_factory):
    """A trained run folder as the commands meet it (model, training_run.json, assignments.csv, kept candidates, the
    model before an earlier edit in previous/), its texts, new texts and a generator."""
    texts, _ = toy_corpus
    root = tmp_path_factory.mktemp("saves")
    torch.manual_seed(0)
    model = from_encoder_pretrained(
        get_method("sccl").model_class, str(tiny_encoder_dir), num_clusters=K, max_length=16
    )
    initialize_clusters(model, texts)
    model.calibrate(texts)
    name_clusters(model, texts)
    model.save_pretrained(root / "model")
    (root / "texts.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    (root / "new.txt").write_text("\n".join(texts[::7]) + "\n", encoding="utf-8")
    folder = RunFolder(root / "model")
    record = {"num_train_texts": len(texts), "texts_sha1": texts_sha1(texts)}
    write_record(
        folder.path,
        RunRecord(method="sccl", num_clusters=K, input={"path": str(root / "texts.txt"), "text_column": "text"}),
    )
    clusters = model.predict(texts)
    write_assignments(folder.path, clusters)
    save_model_folder(root / "model", candidates=({KEPT: np.asarray(clusters)[::-1]}, record))
    assert main(["rename", "--model", str(root / "model"), "3=earlier"]) == 0  # keeps a previous/
    _tiny_generator(root / "generator", texts)
    return root


def _argv(command: str, root: Path, model: Path, out: Path) -> list[str]:
    name, copy = command.split(" ")[0], command.endswith("--output-dir")
    given = {
        "refine": ["--input", root / "texts.txt", "--serve", KEPT],
        "recluster": ["--input", root / "texts.txt", "--kmeans-init", "k-means++"],
        "calibrate": ["--input", root / "texts.txt"],
        "name": ["--input", root / "texts.txt", "--generator", root / "generator"],
        "rename": ["0=alpha", "1=beta"],
        "reduce": ["--to", "2"],
        "merge": ["0,1"],
        "split": ["0", "--input", root / "texts.txt"],
        "update": ["--input", root / "new.txt", "--accept-new"],
        "restore": [],
    }[name]
    return [name, "--model", str(model), *map(str, given), *(["--output-dir", str(out)] if copy else [])]


def _run(command: str, root: Path, model: Path, out: Path) -> None:
    if command == "save_pretrained":  # the library's own save, over the folder, of a changed model
        changed = AutoModel.from_pretrained(model)
        with torch.no_grad():
            next(changed.parameters()).mul_(0.5)
        changed.config.id2label = {k: f"saved {k}" for k in range(K)}
        changed.config.label2id = {v: k for k, v in changed.config.id2label.items()}
        changed.save_pretrained(model)
        return
    assert main(_argv(command, root, model, out)) == 0


def _state(folder: Path) -> dict[str, str] | None:
    """Every file a save writes (path -> digest); None for no folder."""
    if not folder.is_dir():
        return None
    return {
        str(path.relative_to(folder)): hashlib.sha1(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _check(folder: Path, old: dict | None, new: dict, texts) -> str:
    """The folder is its old state or its new one (every file the command changes changed, every other one as it
    was), and it loads and predicts; returns which."""
    now = _state(folder)
    if now != old:
        before, after = old or {}, now or {}
        changed = {name for name in set(new) | set(before) if new.get(name) != before.get(name)}
        stale = [name for name in sorted(changed) if after.get(name) == before.get(name)]
        altered = [name for name in sorted(set(after) - changed) if after.get(name) != before.get(name)]
        assert not stale and not altered, f"{folder} mixes its old and new states: old {stale}, changed {altered}"
        kept = {name: digest for name, digest in after.items() if name.startswith(PREVIOUS_FOLDER + os.sep)}
        if kept != {name: digest for name, digest in before.items() if name.startswith(PREVIOUS_FOLDER + os.sep)}:
            # the model before, as it was: the old state's own files
            model_before = {os.path.join(PREVIOUS_FOLDER, name): d for name, d in before.items() if os.sep not in name}
            assert kept == model_before, f"{folder}/{PREVIOUS_FOLDER} is not the model before the save"
    if now is not None:
        assert len(AutoModel.from_pretrained(folder).predict(texts[:4])) == 4
    return "old" if now == old else "new"


EDITS = ["refine", "recluster", "calibrate", "name", "rename", "reduce", "merge", "split", "update", "restore"]
NEW_FOLDER = ["merge --output-dir", "update --output-dir"]  # copies into a new folder; the others save in place
COMMANDS = ["save_pretrained", *EDITS, *NEW_FOLDER]


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_a_save_killed_after_any_file_operation_leaves_the_old_or_the_new_one(command, pristine, toy_corpus, tmp_path):
    texts, _ = toy_corpus
    model, out = tmp_path / "model", tmp_path / "out"
    target = out if command in NEW_FOLDER else model
    shutil.copytree(pristine / "model", model)
    old = _state(target)
    with file_operations() as done:
        _run(command, pristine, model, out)
    new = _state(target)
    assert new != old and done, command
    for kill_after in range(len(done)):
        shutil.rmtree(model)
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(pristine / "model", model)
        with file_operations(kill_after), pytest.raises(Killed):
            _run(command, pristine, model, out)
        _check(target, old, new, texts)  # as transformers alone loads it
        assert command not in NEW_FOLDER or _state(model) == _state(pristine / "model")  # an edit's source is kept
        serialization.recover_folder(target, complete=True)  # what the next command that saves it does first
        which = _check(target, old, new, texts)
        if which == "old":  # running the command again finishes the job
            _run(command, pristine, model, out)
            assert _check(target, old, new, texts) == "new", f"{command} killed before {done[kill_after]}"
        else:  # a command that opens the folder cleans up what the killed save left
            assert main(["info", "--model", str(target)]) == 0
        assert not [path.name for path in tmp_path.iterdir() if ".saving-" in path.name], done[kill_after]
        assert _check(target, old, new, texts) == "new"
