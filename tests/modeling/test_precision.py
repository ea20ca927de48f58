"""Precision chosen by the hardware: bf16 only where it is native, fp32 elsewhere, forced values respected."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from hf_textcluster import ClusteringTrainingArguments
from hf_textcluster.modeling import precision
from hf_textcluster.modeling.precision import autocast_dtype, resolve_precision
from hf_textcluster.models.building import from_encoder_pretrained


@pytest.fixture()
def cpu_bf16(monkeypatch):
    """``cpu_bf16(native)``: pretend the CPU has (or lacks) native bf16, as the detection sees it."""

    def set_native(native: bool):
        precision.cpu_has_native_bf16.cache_clear()
        monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: native)
        monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: native)
        monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: True)
        monkeypatch.delenv(precision.PRECISION_ENV, raising=False)

    yield set_native
    precision.cpu_has_native_bf16.cache_clear()


def test_auto_is_fp32_without_native_bf16(cpu_bf16, tmp_path):
    cpu_bf16(False)
    assert resolve_precision("auto", "cpu") == "fp32" and autocast_dtype("auto", "cpu") is None
    args = ClusteringTrainingArguments(output_dir=str(tmp_path), report_to="none", use_cpu=True)
    assert args.bf16 is False and args.precision_source == "auto"


def test_auto_is_bf16_with_native_bf16(cpu_bf16, tmp_path):
    cpu_bf16(True)
    assert resolve_precision("auto", "cpu") == "bf16" and autocast_dtype(None, "cpu") is torch.bfloat16
    args = ClusteringTrainingArguments(output_dir=str(tmp_path), report_to="none")
    assert args.bf16 is True and args.use_cpu  # bf16 on a CPU needs use_cpu, set for the user


def test_forced_values_win_over_the_hardware(cpu_bf16, tmp_path, monkeypatch):
    cpu_bf16(False)
    assert resolve_precision("bf16", "cpu") == "bf16" and resolve_precision(torch.float32, "cpu") == "fp32"
    args = ClusteringTrainingArguments(output_dir=str(tmp_path), report_to="none", bf16=True)
    assert args.bf16 is True and args.precision_source == "forced"
    monkeypatch.setenv(precision.PRECISION_ENV, "bf16")  # the process-wide override
    assert resolve_precision("auto", "cpu") == "bf16"


def test_a_missing_probe_counts_as_no_native_bf16(monkeypatch):
    precision.cpu_has_native_bf16.cache_clear()
    monkeypatch.delattr(torch.cpu, "_is_avx512_bf16_supported")
    try:
        assert precision.cpu_has_native_bf16() is False
    finally:
        precision.cpu_has_native_bf16.cache_clear()


def test_bad_precision_names_the_argument():
    with pytest.raises(ValueError, match="`precision` must be one of"):
        resolve_precision("float8")


def test_the_onednn_isa_cap_counts_as_a_cpu_without_bf16():
    """ONEDNN_MAX_CPU_ISA=AVX2 makes oneDNN emulate bf16 (slow): the real detection, in a fresh process, says fp32."""
    code = "from hf_textcluster.modeling.precision import resolve_precision; print(resolve_precision('auto', 'cpu'))"
    env = {"ONEDNN_MAX_CPU_ISA": "AVX2", "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "fp32"


def test_training_run_and_model_card_record_the_precision(trained_tiny_run):
    run = json.loads((trained_tiny_run / "training_run.json").read_text())
    assert run["precision"].startswith("fp32 (forced; CPU ")
    from hf_textcluster.hub.model_card import write_model_card

    card = write_model_card(trained_tiny_run, output="-", texts=["sql query"] * 3)
    assert "| training | `precision` | fp32 (forced; CPU" in card


@pytest.fixture()
def trained_tiny_run(tiny_encoder_dir, toy_corpus, tmp_path):
    from hf_textcluster import train_clusterer
    from hf_textcluster.data import load_texts

    texts, labels = toy_corpus
    train_clusterer(
        "sccl",
        load_texts(texts, labels),
        str(tmp_path / "run"),
        encoder=str(tiny_encoder_dir),
        training_overrides={"max_steps": 1, "per_device_train_batch_size": 16, "bf16": False, "save_strategy": "no"},
        evaluate=True,
    )
    return tmp_path / "run"


def test_train_precision_maps_onto_the_training_arguments(monkeypatch):
    from hf_textcluster.cli.train import check_pass_through, precision_overrides

    monkeypatch.delenv("HF_TEXTCLUSTER_PRECISION", raising=False)
    assert precision_overrides("auto") == {}  # not given: the hardware decides
    assert precision_overrides("fp32") == {"bf16": False, "fp16": False}
    assert precision_overrides("bf16") == {"bf16": True, "fp16": False}
    assert precision_overrides("fp16") == {"bf16": False, "fp16": True}
    monkeypatch.setenv("HF_TEXTCLUSTER_PRECISION", "fp32")
    assert precision_overrides("auto") == {"bf16": False, "fp16": False}
    # one name per setting: the TrainingArguments spellings are refused, naming the option
    with pytest.raises(ValueError, match="pass --precision bf16"):
        check_pass_through(["--bf16", "True"])
    with pytest.raises(ValueError, match="pass --calibration-sample"):
        check_pass_through(["--calibration-sample-size=5"])
    check_pass_through(["--save-steps", "3"])


def test_int8_is_for_serving_on_the_cpu_only():
    assert resolve_precision("int8", "cpu", inference=True) == "int8"
    with pytest.raises(ValueError, match="int8' is for inference only"):
        resolve_precision("int8", "cpu")  # training: there is no int8 training here
    with pytest.raises(ValueError, match="CPU only"):
        resolve_precision("int8", "cuda", inference=True)


def test_int8_quantizes_a_cached_copy_of_the_encoder_and_follows_its_weights(tiny_encoder_dir, toy_corpus):
    from hf_textcluster import SCCLModel

    torch.manual_seed(0)
    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    texts = toy_corpus[0][:40]
    before = {k: v.clone() for k, v in model.state_dict().items()}
    fp32, int8 = model.embed(texts, precision="fp32"), model.embed(texts, precision="int8")
    quantized = model._int8_encoder()
    assert type(quantized.encoder.layer[0].attention.self.query) is not torch.nn.Linear
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())  # the served weights are untouched
    assert "_int8_cache" not in "".join(model.state_dict())  # never saved
    cosine = (fp32 * int8).sum(1) / (np.linalg.norm(fp32, axis=1) * np.linalg.norm(int8, axis=1))
    assert cosine.min() > 0.95 and not np.allclose(fp32, int8)  # quantized, yet close
    model.embed(texts[:3], precision="int8")
    assert model._int8_encoder() is quantized  # made once
    with torch.no_grad():  # as an optimizer step does: the next int8 pass quantizes the new weights
        model.encoder.encoder.layer[0].attention.self.query.weight.mul_(2.0)
    assert model._int8_encoder() is not quantized
    fresh = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    fresh.load_state_dict(model.state_dict())
    np.testing.assert_allclose(fresh.embed(texts, precision="int8"), model.embed(texts, precision="int8"), atol=1e-5)
