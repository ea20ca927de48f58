"""Bad input is one line naming the argument and the fix."""

from __future__ import annotations

import pytest
import torch

from hf_textcluster.cli import main
from hf_textcluster.data import load_texts
from hf_textcluster.runs.train import split_held_out


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_predict_on_a_missing_gpu_names_the_device(tmp_path, capsys):
    (tmp_path / "in.txt").write_text("how do i join two tables\n")
    model = tmp_path / "model"
    model.mkdir()
    assert main(["predict", "--model", str(model), "--input", str(tmp_path / "in.txt"), "--device", "cuda"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--device cuda: this machine has no CUDA GPU" in err[0] and "--device cpu" in err[0]


def test_a_test_size_leaving_too_few_texts_names_the_argument(toy_corpus):
    dataset = load_texts(*toy_corpus)  # 120 texts in 3 classes
    with pytest.raises(
        ValueError,
        match=r"`test_size` 0.99 \(--test-size\) holds out 119 of 120 texts, leaving 1 to "
        r"train on; each side needs at least 3 texts.*smaller --test-size",
    ):
        split_held_out(dataset, 0.99)
    train, test = split_held_out(dataset, 0.2)
    assert len(train) == 96 and len(test) == 24
