"""One training step of every method on the toy corpus, in however many processes this was launched with
(``python train_one_step.py OUT BATCH`` or ``accelerate launch --multi_gpu --num_processes 2 train_one_step.py OUT
BATCH``). The main process writes, per method, the step's loss, the rows of its global batch and the weights after
the step, for tests/distributed/test_distributed.py to compare the runs. Randomness inside the step is switched off
(no dropout, no word deletion, no masking) so that the runs can be compared exactly."""

import json
import os
import sys
from pathlib import Path

from safetensors.torch import save_file

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import conftest  # noqa: E402  (the toy corpus)

import hf_textcluster  # noqa: E402
from hf_textcluster.data import load_texts  # noqa: E402
from hf_textcluster.training.distributed import gather  # noqa: E402

# No randomness inside the step; AECL starts in its last stage (every loss term); ClusterBERT takes two steps, one in
# its clustering stage and one in hardening.
CONFIGS = {
    "sccl": {},
    "deccrl": {},
    "decmlm": {"mlm_loss_weight": 0.0},
    "aecl": {"stage1_fraction": 0.0, "stage2_fraction": 0.0, "attention_dropout": 0.0, "cluster_dropout": 0.0},
    "clusterbert": {"stage1_fraction": 0.0, "deletion_ratio": 0.0},
}


def main(out: Path, encoder: str, global_batch: int, methods: list[str]) -> None:
    processes = int(os.environ.get("WORLD_SIZE", 1))  # set by the launcher; the process group starts later
    texts, labels = conftest.toy_corpus.__wrapped__()
    dataset = load_texts(texts, labels)
    dataset = dataset.add_column("index", list(range(len(dataset))))  # to check which rows each step saw
    for method in methods:
        config = CONFIGS[method]
        seen = {}
        trainer_class = hf_textcluster.get_method(method).trainer_class
        compute_loss = trainer_class.compute_loss

        def recording(self, model, inputs, *args, _compute_loss=compute_loss, _seen=seen, **kwargs):
            loss = _compute_loss(self, model, inputs, *args, **kwargs)
            _seen.setdefault("index", gather(self, inputs["index"]).tolist())
            _seen.setdefault("loss", float(loss))
            return loss

        trainer_class.compute_loss = recording
        try:
            result = hf_textcluster.train_clusterer(
                method,
                dataset,
                str(out / f"run-{method}"),
                encoder=encoder,
                num_clusters=3,
                resume=False,
                augmentation="word_deletion" if hf_textcluster.get_method(method).uses_augmented_views else None,
                config_overrides=config,
                evaluate=False,
                save=False,
                training_overrides={
                    "max_steps": 2 if method == "clusterbert" else 1,
                    "per_device_train_batch_size": global_batch // processes,
                    "optim": "sgd",
                    "learning_rate": 0.05,
                    "head_learning_rate": 0.05,
                    "save_strategy": "no",
                    "logging_steps": 1,
                    "disable_tqdm": True,
                    "bf16": False,
                    # the head as trained: the label-free choice of what to serve may move with the
                    # last bits in which one and two processes' weights differ
                    "serve": "head",
                },
            )
        finally:
            trainer_class.compute_loss = compute_loss
        trainer = result.trainer
        if trainer.is_world_process_zero():
            save_file(
                {k: v.contiguous() for k, v in result.model.state_dict().items()},
                str(out / f"{method}-{trainer.accelerator.num_processes}.safetensors"),
            )
            (out / f"{method}-{trainer.accelerator.num_processes}.json").write_text(json.dumps(seen))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4:] or list(CONFIGS))
