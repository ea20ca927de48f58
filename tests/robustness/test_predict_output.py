"""Streaming predict never loses or mixes results: one writer per output (a lock), a resume only into the output its
progress record describes (the input by content, the output by length and hash), never padded; a killed run started
again equals the uninterrupted one."""

from __future__ import annotations

import fcntl
import json
import os

import pytest
import torch
from transformers import pipeline

import hf_textcluster  # noqa: F401
from hf_textcluster import SCCLModel
from hf_textcluster.apps import streaming
from hf_textcluster.apps.streaming import PROGRESS_SUFFIX, predict_file
from hf_textcluster.editing import initialize_clusters
from hf_textcluster.models.building import from_encoder_pretrained


@pytest.fixture(scope="module")
def clusterer(tiny_encoder_dir, toy_corpus):
    torch.manual_seed(0)
    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    initialize_clusters(model, toy_corpus[0])
    return pipeline("text-clustering", model=model, tokenizer=model.tokenizer)


@pytest.fixture()
def source(tmp_path, toy_corpus):
    path = tmp_path / "in.txt"
    path.write_text("\n".join(f"{t} {i}" for i, t in enumerate(toy_corpus[0])) + "\n", encoding="utf-8")
    return path


@pytest.fixture()
def expected(clusterer, source, tmp_path):
    out = tmp_path / "straight.jsonl"
    predict_file(clusterer, source, out, chunk_size=25)
    return out.read_bytes()


class _Killed(BaseException):
    pass


def _kill_after_progress_records(monkeypatch, n):
    """SIGKILL after the n-th progress record is written."""
    original, calls = streaming.write_whole, []

    def write(path, text):
        original(path, text)
        calls.append(1)
        if len(calls) == n:
            raise _Killed

    monkeypatch.setattr(streaming, "write_whole", write)
    return lambda: monkeypatch.setattr(streaming, "write_whole", original)


def test_a_second_writer_of_the_same_output_is_refused(clusterer, source, tmp_path):
    out = tmp_path / "out.jsonl"
    with open(str(out) + ".lock", "a") as held:  # another process writing `out`
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(RuntimeError, match=rf"Another process is writing {out}.*{out}\.lock"):
            predict_file(clusterer, source, out, chunk_size=25)
    assert not out.exists()
    predict_file(clusterer, source, out, chunk_size=25)  # the lock is gone with its holder
    assert not (tmp_path / "out.jsonl.lock").exists()


@pytest.mark.parametrize("records", [1, 2, 4])  # killed before any chunk, after one, after three of five
def test_killed_then_run_again_equals_the_uninterrupted_output(
    clusterer, source, tmp_path, expected, monkeypatch, records
):
    out = tmp_path / "out.jsonl"
    restore = _kill_after_progress_records(monkeypatch, records)
    with pytest.raises(_Killed):
        predict_file(clusterer, source, out, chunk_size=25)
    restore()
    with open(out, "ab") as f:
        f.write(b'{"text": "half a li')  # the chunk being written when the process died
    predict_file(clusterer, source, out, chunk_size=25)
    assert out.read_bytes() == expected


def test_an_output_shorter_than_its_record_is_never_padded(clusterer, source, tmp_path, expected, monkeypatch):
    out = tmp_path / "out.jsonl"
    restore = _kill_after_progress_records(monkeypatch, 4)
    with pytest.raises(_Killed):
        predict_file(clusterer, source, out, chunk_size=25)
    restore()
    data = out.read_bytes()
    out.write_bytes(data[: len(data) - 30])  # lost its end (a copy, a full disk)
    predict_file(clusterer, source, out, chunk_size=25)
    result = out.read_bytes()
    assert b"\0" not in result
    assert result == expected


def test_a_changed_output_is_not_resumed_into(clusterer, source, tmp_path, monkeypatch):
    out = tmp_path / "out.jsonl"
    restore = _kill_after_progress_records(monkeypatch, 3)
    with pytest.raises(_Killed):
        predict_file(clusterer, source, out, chunk_size=25)
    restore()
    data = bytearray(out.read_bytes())
    data[2:6] = b"TEXT"  # same length, other content
    out.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=rf"{out} no longer holds what its progress record .*--overwrite"):
        predict_file(clusterer, source, out, chunk_size=25)


def test_an_input_rewritten_with_the_same_size_and_mtime_is_not_resumed(clusterer, source, tmp_path, monkeypatch):
    out = tmp_path / "out.jsonl"
    restore = _kill_after_progress_records(monkeypatch, 3)
    with pytest.raises(_Killed):
        predict_file(clusterer, source, out, chunk_size=25)
    restore()
    stat = source.stat()
    text = source.read_text(encoding="utf-8")
    source.write_text(text.replace("how", "who"), encoding="utf-8")  # same size
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert source.stat().st_size == stat.st_size and source.stat().st_mtime_ns == stat.st_mtime_ns
    with pytest.raises(ValueError, match="half-written prediction of another input"):
        predict_file(clusterer, source, out, chunk_size=25)


def test_a_damaged_progress_record_is_named(clusterer, source, tmp_path, monkeypatch):
    out = tmp_path / "out.jsonl"
    restore = _kill_after_progress_records(monkeypatch, 3)
    with pytest.raises(_Killed):
        predict_file(clusterer, source, out, chunk_size=25)
    restore()
    progress = tmp_path / f"out.jsonl{PROGRESS_SUFFIX}"
    progress.write_text("{'texts_done': 50", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"progress record {progress} is damaged.*--overwrite"):
        predict_file(clusterer, source, out, chunk_size=25)
    predict_file(clusterer, source, out, chunk_size=25, overwrite=True)
    assert len(out.read_text(encoding="utf-8").splitlines()) == 120
    assert all(json.loads(line)["cluster"] in (0, 1, 2) for line in out.read_text(encoding="utf-8").splitlines())


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_device_as_output_is_named_not_already_existing(clusterer, source):
    with pytest.raises(ValueError, match="`output` /dev/full is not a regular file"):
        predict_file(clusterer, source, "/dev/full", chunk_size=25)


def test_a_blank_text_is_named_by_its_line_in_the_file(clusterer, tmp_path):
    lines = [f"how do i join two tables {i}" for i in range(300)]
    lines[248] = "   "  # line 249 of the file
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"Line 249 of .*in\.txt is blank"):
        predict_file(clusterer, tmp_path / "in.txt", tmp_path / "out.jsonl", chunk_size=100)
    (tmp_path / "in.csv").write_text("text\n" + "\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"Data row 249 \(line 250, after the header\) of .*in\.csv is blank"):
        predict_file(clusterer, tmp_path / "in.csv", tmp_path / "out2.jsonl", chunk_size=100)


@pytest.mark.slow  # two predict subprocesses
def test_two_predict_processes_on_one_output_leave_one_complete_output(clusterer, tmp_path, toy_corpus):
    """Two real `hf-textcluster predict` processes started together on one --output: one writes it, the other stops
    at once with one line naming the output; the output is the uninterrupted one, every line once."""
    import subprocess
    import sys

    clusterer.model.save_pretrained(tmp_path / "model")
    clusterer.tokenizer.save_pretrained(tmp_path / "model")
    source = tmp_path / "many.txt"  # long enough that the first writer still holds the lock when the second starts
    texts = [f"{text} {i}" for i in range(160) for text in toy_corpus[0][:50]]
    source.write_text("\n".join(texts) + "\n", encoding="utf-8")
    expected = tmp_path / "straight.jsonl"
    predict_file(clusterer, source, expected, chunk_size=500)
    out = tmp_path / "out.jsonl"
    command = [
        sys.executable,
        "-m",
        "hf_textcluster.cli",
        "predict",
        "--model",
        str(tmp_path / "model"),
        "--input",
        str(source),
        "--output",
        str(out),
        "--chunk-size",
        "500",
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    both = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    results = [(p.wait(timeout=600), p.stderr.read()) for p in both]
    refused = [err for code, err in results if code != 0]
    assert sorted(code for code, _ in results)[0] == 0, results
    if refused:  # the second reached the lock while the first wrote, or (a slow start) found its finished output
        assert len(refused) == 1
        last_line = refused[0].strip().splitlines()[-1]
        assert last_line.startswith("error: "), refused[0]
        assert f"Another process is writing {out} " in last_line or f"{out} exists" in last_line, refused[0]
        assert "Traceback" not in refused[0]
    assert out.read_bytes() == expected.read_bytes()
    assert len(out.read_text().splitlines()) == len(texts)
