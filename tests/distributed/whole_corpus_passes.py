"""The whole-corpus passes (embeddings, k-means initialisation, DEC targets, AECL's pseudo-labels, calibration,
re-clustering, streaming predict) on the toy corpus, in however many processes this was launched with
(``python whole_corpus_passes.py OUT ENCODER`` or ``accelerate launch --multi_gpu --num_processes 2 ...``). The main
process writes what each pass gave to ``OUT/passes-<processes>.npz`` and the predictions to
``OUT/predict-<processes>.jsonl``, for tests/distributed/test_distributed.py to compare. The encoding batch (25) cuts
the 120 texts into 5 batches, so two processes get uneven shares (3 and 2 batches)."""

import json
import os
import sys
from pathlib import Path

import numpy as np

from hf_textcluster.models.building import from_encoder_pretrained

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import conftest  # noqa: E402  (the toy corpus)

import hf_textcluster  # noqa: E402
from hf_textcluster.apps.streaming import predict_file  # noqa: E402
from hf_textcluster.data import load_texts  # noqa: E402
from hf_textcluster.distributed import leave_together, run_with_processes, sharded_passes  # noqa: E402
from hf_textcluster.editing import initialize_clusters
from hf_textcluster.modeling.modeling_utils import TextClusteringPreTrainedModel  # noqa: E402
from hf_textcluster.training.arguments import ClusteringTrainingArguments  # noqa: E402

BATCH = 25


def trainer_for(method: str, encoder: str, dataset, out: Path):
    spec = hf_textcluster.get_method(method)
    model = from_encoder_pretrained(spec.model_class, encoder, num_clusters=3)
    args = ClusteringTrainingArguments(
        output_dir=str(out / f"run-{method}"),
        encode_batch_size=BATCH,
        bf16=False,
        disable_tqdm=True,
        report_to=[],
        calibration_sample_size=100,
        kmeans_n_init=3,
    )
    return spec.trainer_class(model=model, args=args, train_dataset=dataset)


def count_encoded_texts() -> list[int]:
    """Counts, in this process, the texts that go through the encoder in inference passes (to show each process
    encodes its share only)."""
    counter = [0]
    cluster_batch = TextClusteringPreTrainedModel._cluster_batch  # every inference batch, pipeline's included

    def counting(self, inputs, *args, **kwargs):
        counter[0] += len(inputs["input_ids"])
        return cluster_batch(self, inputs, *args, **kwargs)

    TextClusteringPreTrainedModel._cluster_batch = counting
    return counter


def main(out: Path, encoder: str) -> None:
    processes = int(os.environ.get("WORLD_SIZE", 1))
    encoded = count_encoded_texts()
    texts, labels = conftest.toy_corpus.__wrapped__()
    dataset = load_texts(texts, labels)
    dataset = dataset.add_column("text_aug1", texts).add_column("text_aug2", texts)
    results = {}

    trainer = trainer_for("sccl", encoder, dataset, out)
    results["embeddings"] = trainer.embed_train_texts()
    trainer.initialize_clusters()
    results["kmeans_labels"] = np.asarray(trainer.initial_kmeans_labels)
    results["centroids"] = (
        trainer.model.cluster_head.state_dict()["centroids"].numpy()
        if "centroids" in trainer.model.cluster_head.state_dict()
        else next(iter(trainer.model.cluster_head.state_dict().values())).numpy()
    )
    trainer.calibrate_model()
    for name, value in trainer.model.calibration.state_dict().items():
        results[f"calibration_{name}"] = value.numpy()
    model = trainer.model
    with sharded_passes(model):  # re-clustering (`recluster`): k-means on the embeddings of texts, from the texts
        results["recluster_labels"] = initialize_clusters(model, texts[::-1], n_init=3, batch_size=BATCH)
        results["predict_proba"] = model.predict_proba(texts, batch_size=BATCH)

    decmlm = trainer_for("decmlm", encoder, dataset, out)
    decmlm.initialize_clusters()
    results["dec_targets_init"] = decmlm.targets.numpy()
    decmlm.refresh_targets()
    results["dec_targets"] = decmlm.targets.numpy()

    aecl = trainer_for("aecl", encoder, dataset, out)
    aecl.initialize_clusters()
    aecl.refresh_targets()
    results["aecl_pseudo_labels"] = aecl.targets.numpy()

    with sharded_passes(model):  # the pipeline then also gives confidences and distances
        model.calibrate(texts, batch_size=BATCH)
    from transformers import pipeline

    clusterer = pipeline("text-clustering", model=model, tokenizer=model.tokenizer, device="cpu")
    source = out / "texts.txt"
    if trainer.is_world_process_zero():
        source.write_text("\n".join(texts) + "\n", encoding="utf-8")
    trainer.accelerator.wait_for_everyone()
    run_with_processes(
        clusterer,
        lambda c: predict_file(
            c,
            str(source),
            str(out / f"predict-{processes}.jsonl"),
            chunk_size=70,
            batch_size=BATCH,
            show_progress_bar=False,
        ),
    )
    rank = int(os.environ.get("RANK", 0))
    (out / f"encoded-{processes}-rank{rank}.json").write_text(json.dumps(encoded[0]))
    if trainer.is_world_process_zero():
        np.savez(out / f"passes-{processes}.npz", **results)
        model.save_pretrained(out / f"model-{processes}")  # for `hf-textcluster predict` under accelerate launch
    if processes > 1:
        leave_together(trainer.accelerator.state)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
