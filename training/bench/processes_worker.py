"""Times the whole-corpus passes in however many processes this was launched with (``python processes_worker.py OUT
DATA_DIR CORPUS N [ENCODER]`` or under ``accelerate launch --multi_gpu --num_processes 2``), each process on one torch
thread.
The main process writes ``OUT/times-<processes>.json``: seconds per pass, each between two barriers. Run by the
``processes`` section of the benchmark (``python -m training.bench processes``)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import torch

from hf_textcluster.models.building import from_encoder_pretrained

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))


def main(out: Path, data_dir: str, corpus: str, num_texts: int, encoder: str | None = None) -> None:
    from transformers import pipeline

    from hf_textcluster import SCCLModel
    from hf_textcluster.apps.streaming import predict_file
    from hf_textcluster.data import load_benchmark, load_text_file
    from hf_textcluster.distributed import leave_together, run_with_processes
    from hf_textcluster.training.arguments import ClusteringTrainingArguments
    from hf_textcluster.training.trainer import ClusteringTrainer

    dataset = (
        load_text_file(corpus, label_column="label")
        if corpus.endswith(".csv")
        else load_benchmark(corpus, data_dir=data_dir)
    )
    dataset = dataset.select(range(min(num_texts, len(dataset))))
    num_clusters = dataset.features["label"].num_classes
    torch.manual_seed(0)
    model = from_encoder_pretrained(SCCLModel, encoder, num_clusters=num_clusters)
    args = ClusteringTrainingArguments(
        output_dir=str(out / "run"),
        disable_tqdm=True,
        report_to=[],
        calibration_sample_size=len(dataset),
        kmeans_init="k-means++",
    )
    trainer = ClusteringTrainer(model=model, args=args, train_dataset=dataset)
    processes = trainer.accelerator.num_processes
    times = {}

    def timed(name, work):
        trainer.accelerator.wait_for_everyone()
        start = time.perf_counter()
        result = work()
        trainer.accelerator.wait_for_everyone()
        times[name] = round(time.perf_counter() - start, 2)
        return result

    embeddings = timed("embeddings", trainer.embed_train_texts)
    timed("kmeans_initialisation", trainer.initialize_clusters)  # its own encoding pass, then k-means on the main
    timed("calibration", trainer.calibrate_model)
    source = out / "texts.txt"
    if trainer.is_world_process_zero():
        source.write_text("\n".join(t.replace("\n", " ") for t in dataset["text"]) + "\n", encoding="utf-8")
    clusterer = pipeline("text-clustering", model=trainer.model, tokenizer=trainer.model.tokenizer, device="cpu")
    output = out / f"predict-{processes}.jsonl"
    timed(
        "predict",
        lambda: run_with_processes(
            clusterer,
            lambda c: predict_file(
                c, str(source), str(output), overwrite=True, batch_size=args.encode_batch_size, show_progress_bar=False
            ),
        ),
    )
    if trainer.is_world_process_zero():
        (out / f"times-{processes}.json").write_text(
            json.dumps(
                {
                    "processes": processes,
                    "threads_per_process": torch.get_num_threads(),
                    "num_texts": len(dataset),
                    "embedding_dim": int(embeddings.shape[1]),
                    "seconds": times,
                }
            )
        )
    if processes > 1:
        leave_together(trainer.accelerator.state)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), *sys.argv[5:6])
