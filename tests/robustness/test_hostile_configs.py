"""A config.json is data from anyone: whatever it says (fields removed, huge, negative, of the wrong type, strings
where numbers belong), loading refuses it with one clear line (sizes the weights do not hold: transformers' own
refusal, its report of each tensor logged above it), or loads what the weights hold, and never allocates more than
the weights cost. Each case runs in a child process whose address space is capped a little above what the
tiny model needs, so an allocation driven by the config fails the test instead of taking the machine down."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
import torch

from hf_textcluster import SCCLModel
from hf_textcluster.editing import initialize_clusters
from hf_textcluster.models.building import from_encoder_pretrained

# The child loads every case under an address-space cap of what it uses after its imports plus this much: about
# twice the tiny model's weights and far below what any config-driven allocation (a billion cluster names) needs.
HEADROOM_BYTES = 768 * 2**20

CHILD = textwrap.dedent(
    """
    import json, os, resource, subprocess, sys
    import hf_textcluster
    from transformers import AutoModel
    from hf_textcluster.cli import main

    def vm_size():
        for line in open("/proc/self/status"):
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024

    # warm every lazy import first, so the cap measures loading and not importing
    AutoModel.from_pretrained(sys.argv[1])
    cap = vm_size() + int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    results = {}
    for folder in sys.argv[4:]:
        if sys.argv[3] == "api":
            try:
                AutoModel.from_pretrained(folder)
                results[folder] = ["loaded", ""]
            except Exception as err:
                results[folder] = [type(err).__name__, str(err)]
        else:  # the CLI: predict and card, their stderr captured by redirecting fd 2
            import io, contextlib
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                if sys.argv[3] == "predict":
                    code = main(["predict", "--model", folder, "--input", os.path.join(folder, "texts.txt")])
                else:
                    code = main(["card", "--model", folder])
            results[folder] = [str(code), err.getvalue()]
    print(json.dumps(results))
    """
)


@pytest.fixture(scope="module")
def saved(tiny_encoder_dir, toy_corpus, tmp_path_factory):
    torch.manual_seed(0)
    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    initialize_clusters(model, toy_corpus[0])
    path = tmp_path_factory.mktemp("saved") / "model"
    model.save_pretrained(path)
    (path / "texts.txt").write_text("\n".join(toy_corpus[0][:5]) + "\n")
    return path


def _mutated(saved, root, name, edit):
    folder = root / name
    shutil.copytree(saved, folder)
    config = json.loads((folder / "config.json").read_text())
    edit(config)
    (folder / "config.json").write_text(json.dumps(config))
    return str(folder)


def _load_capped(saved, folders, mode="api"):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(saved), str(HEADROOM_BYTES), mode, *folders],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _without_names(config):
    config.pop("id2label", None)
    config.pop("label2id", None)


def _set(key, value, names=False):
    def edit(config):
        config[key] = value
        if names:
            _without_names(config)

    return edit


def _set_encoder(key, value):
    return lambda config: config["encoder"].update({key: value})


def _remove(key):
    return lambda config: config.pop(key, None)


# transformers' refusal of weights of another shape than the config's (it allocates none of them first)
MISMATCH = r"You set `ignore_mismatched_sizes` to `False`"
# name -> (edit, what the one line must say)
CASES = {
    "num_clusters_huge_no_names": (
        _set("num_clusters", 10**9, names=True),
        r"`num_clusters` must be an integer in \[2, 100000\]",
    ),
    "num_clusters_huge": (_set("num_clusters", 10**9), r"`num_clusters` must be an integer in \[2, 100000\]"),
    "num_clusters_negative": (
        _set("num_clusters", -3, names=True),
        r"`num_clusters` must be an integer in \[2, 100000\]",
    ),
    "num_clusters_string": (_set("num_clusters", "3", names=True), r"`num_clusters` must be an integer .* got '3'"),
    "num_clusters_float": (_set("num_clusters", 3.0, names=True), r"`num_clusters` must be an integer .* got 3.0"),
    "num_clusters_other": (_set("num_clusters", 5, names=True), MISMATCH),
    "num_labels_huge": (
        _set("num_labels", 10**9, names=True),
        r"`num_labels` must be an integer in \[0, 100000\] or None",
    ),
    "encoder_num_labels_huge": (
        _set_encoder("num_labels", 10**9),
        r"`encoder.num_labels` must be an integer in \[0, 100000\]",
    ),
    "hidden_size_huge": (_set_encoder("hidden_size", 10**9), r"`encoder.hidden_size` is 1000000000, beyond any"),
    "vocab_size_huge": (_set_encoder("vocab_size", 10**12), r"`encoder.vocab_size` is 1000000000000, beyond any"),
    "vocab_size_other": (_set_encoder("vocab_size", 4096), MISMATCH),
    "layers_huge": (_set_encoder("num_hidden_layers", 10**7), r"`encoder.num_hidden_layers` is 10000000, beyond any"),
    "layers_many": (_set_encoder("num_hidden_layers", 1000), r"do not fit a SCCLModel .* \d+ missing"),
    "layers_more": (_set_encoder("num_hidden_layers", 8), r"do not fit a SCCLModel .* \d+ missing"),
    "heads_zero": (_set_encoder("num_attention_heads", 0), r"does not describe a model that can be built"),
    "positions_huge": (_set_encoder("max_position_embeddings", 10**9), r"`encoder.max_position_embeddings` is"),
    "contrast_dim_huge": (_set("contrast_dim", 10**7), MISMATCH),
    "refined_head_huge": (_set("refined_head_dim", 10**9), r"`refined_head_dim` must be an integer in \[0, 16777216\]"),
    "refined_head_absent": (_set("refined_head_dim", 64), r"\d+ missing \(e.g. \['refined_head\."),
    "max_length_huge": (_set("max_length", 10**9), r"`max_length` must be an integer in \[1, 16777216\]"),
    "max_length_string": (_set("max_length", "32"), r"`max_length` must be an integer"),
    "encoder_removed": (_remove("encoder"), MISMATCH),
    "encoder_string": (_set("encoder", "bert"), r"`encoder` must be an encoder's config"),
    "pooling_number": (_set("pooling", 7), r"`pooling` must be one of"),
}


def test_every_hostile_config_is_one_clear_line_under_a_memory_cap(saved, tmp_path):
    folders = {name: _mutated(saved, tmp_path, name, edit) for name, (edit, _) in CASES.items()}
    results = _load_capped(saved, list(folders.values()))
    for name, (_, pattern) in CASES.items():
        kind, message = results[folders[name]]
        assert kind in ("ValueError", "TypeError", "OSError", "RuntimeError"), (name, kind, message)
        assert kind != "RuntimeError" or pattern == MISMATCH, (name, message)
        assert "\n" not in message.strip(), (name, message)
        import re

        assert re.search(pattern, message), (name, message)


@pytest.mark.parametrize("mode", ["predict", "card"])
def test_the_cli_refuses_a_billion_clusters_in_one_line_under_a_memory_cap(saved, tmp_path, mode):
    folder = _mutated(saved, tmp_path, "billion", _set("num_clusters", 10**9, names=True))
    shutil.copy(saved / "texts.txt", folder)
    code, stderr = _load_capped(saved, [folder], mode=mode)[folder]
    assert code == "2", stderr
    assert stderr.strip().count("\n") == 0, stderr
    assert "`num_clusters` must be an integer in [2, 100000], got 1000000000" in stderr


RANDOM_CHILD = textwrap.dedent(
    """
    import json, os, resource, shutil, sys, tempfile
    from hypothesis import given, settings, strategies as st
    import hf_textcluster
    from transformers import AutoModel

    saved, headroom = sys.argv[1], int(sys.argv[2])
    AutoModel.from_pretrained(saved)
    vm = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (vm + headroom, vm + headroom))
    config = json.load(open(os.path.join(saved, "config.json")))
    folder = tempfile.mkdtemp()
    for name in os.listdir(saved):
        if name != "config.json":
            os.symlink(os.path.join(saved, name), os.path.join(folder, name))

    # values a hostile config could hold where a size belongs
    values = st.one_of(
        st.integers(min_value=-(2**70), max_value=2**70),
        st.sampled_from([0, -1, 1, 2, 10**9, 10**12, 2**63, True, False, None]),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=8),
        st.lists(st.integers(), max_size=3),
        st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    )
    top = ["num_clusters", "max_length", "refined_head_dim", "contrast_dim", "num_calibration_texts", "pooling",
           "num_labels", "encoder"]
    encoder = ["hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size",
               "max_position_embeddings", "num_labels", "model_type"]
    bad = []

    @settings(max_examples=int(sys.argv[3]), deadline=None, database=None, derandomize=True)
    @given(
        edits=st.lists(st.tuples(st.sampled_from(top + ["encoder." + f for f in encoder]), values), min_size=1,
                       max_size=3),
        removed=st.lists(st.sampled_from(top + ["id2label", "label2id"]), max_size=2),
    )
    def check(edits, removed):
        mutated = json.loads(json.dumps(config))
        for key, value in edits:
            nested = key.startswith("encoder.") and isinstance(mutated["encoder"], dict)
            target = mutated["encoder"] if nested else mutated
            target[key.removeprefix("encoder.")] = value
        for key in removed:
            mutated.pop(key, None)
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(mutated, f)
        try:
            AutoModel.from_pretrained(folder)
        except (ValueError, TypeError, OSError, RuntimeError) as err:
            mismatch = "ignore_mismatched_sizes" in str(err)  # transformers' refusal: its only RuntimeError here
            if "\\n" in str(err).strip() or not str(err).strip() or (type(err) is RuntimeError) != mismatch:
                bad.append([edits, removed, type(err).__name__, str(err)])
        except Exception as err:
            bad.append([edits, removed, type(err).__name__, str(err)[:500]])

    check()
    shutil.rmtree(folder)
    print(json.dumps(bad, default=repr))
    """
)


def test_random_hostile_configs_load_or_fail_in_one_line_under_a_memory_cap(saved):
    pytest.importorskip("hypothesis")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    result = subprocess.run(
        [sys.executable, "-c", RANDOM_CHILD, str(saved), str(HEADROOM_BYTES), "60"],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    bad = json.loads(result.stdout.strip().splitlines()[-1])
    assert bad == [], bad[:3]
