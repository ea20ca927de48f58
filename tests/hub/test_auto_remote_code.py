"""What `train --method auto` saved (the consensus, or any candidate, served by one signal's model through a linear
head) loads, serves the same clusters and calibrates through remote code where hf_textcluster is not installed."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
from hub_client import run_client

from hf_textcluster import train_clusterer
from hf_textcluster.data import load_texts
from hf_textcluster.models.remote_code import add_remote_code
from hf_textcluster.runs.candidate_file import read_candidates
from hf_textcluster.runs.signals import CONSENSUS

LOAD_LOCALLY = """
from transformers import AutoModel, pipeline
model = AutoModel.from_pretrained(PAYLOAD["model_dir"], trust_remote_code=True)
clusterer = pipeline("text-clustering", model=PAYLOAD["model_dir"], trust_remote_code=True)
emit({
    "class": type(model).__module__,
    "served_partition": model.config.served_partition,
    "predictions": model.predict(PAYLOAD["texts"]).tolist(),
    "pipeline": [r["cluster"] for r in clusterer(PAYLOAD["texts"])],
    "calibrated_on": model.calibrate(PAYLOAD["texts"]).config.num_calibration_texts,
    "loaded_modules": sorted(m for m in sys.modules if m.split(".")[0] == "hf_textcluster"),
})
"""


@pytest.mark.parametrize("serve", [CONSENSUS, "pretrained/umap_kmeans"])
def test_the_served_candidate_works_as_remote_code(serve, tiny_encoder_dir, toy_corpus, tmp_path):
    texts, labels = toy_corpus
    out = tmp_path / "auto"
    train = dict(per_device_train_batch_size=16, bf16=False, save_strategy="no", disable_tqdm=True, max_steps=2)
    result = train_clusterer(
        "auto",
        load_texts(texts, labels),
        str(out),
        encoder=str(tiny_encoder_dir),
        num_clusters=3,
        training_overrides={**train, "serve": serve},
        evaluate=False,
    )
    shipped = tmp_path / "shipped"
    shutil.copytree(out, shipped, ignore=shutil.ignore_patterns("signals"))
    add_remote_code(shipped, result.model.config.model_type)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_TEXTCLUSTER")}
    env.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="1")
    answer = run_client(LOAD_LOCALLY, env, {"model_dir": str(shipped), "texts": texts}, hide_package=True)
    assert answer["loaded_modules"] == [] and answer["class"].startswith("transformers_modules")
    assert answer["served_partition"] == serve
    assert answer["calibrated_on"] == len(texts)  # remote code calibrates too
    served = read_candidates(out)[0]["served"].tolist()
    assert answer["predictions"] == served and answer["pipeline"] == served
    assert np.array_equal(result.served_labels, np.array(served))
