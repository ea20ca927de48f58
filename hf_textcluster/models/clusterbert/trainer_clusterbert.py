"""ClusterBERTTrainer: Algorithm 1 of ClusterBERT as one training run with three resumable stages.

Stage 1 (domain adaptation, the first ``stage1_fraction`` of the steps): L_rec (Eq. 1), TSDAE: a decoder that
cross-attends only to the sentence embedding z of the noised text x̃ reconstructs the original text. Stage 2
(clustering, the next ``stage2_fraction``): targets Q from k-means on the embeddings of all (un-noised) training
texts, recomputed ``clustering_rounds`` times; L_full = λ·CE(P̃, Q) + (1-λ)·L_rec (Eq. 3-4), P̃ the head's
prediction for x̃. Stage 3 (hardening, the rest): Q from Eq. 5 on the head's predictions for the un-noised texts,
recomputed ``hardening_rounds`` times, same loss with λ = ``hardening_weight``.

The decoder, its construction and the reconstruction loss are sentence-transformers' ``DenoisingAutoEncoderLoss``
(decoder tied to the encoder, as TSDAE). The noise is TSDAE's word deletion, applied in the training step to the
tokenized batch (whole words, by the tokenizer's word boundaries) so that it follows the checkpointed RNG and a
resumed run is exact; sentence-transformers' own noise function draws from numpy's global RNG while the Trainer
collates ahead, and needs NLTK's punkt data (a download).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from typing import Any

import numpy as np
import torch
from safetensors.torch import save_file
from transformers.utils import logging

from ...editing.clusters import init_head_from_centroids
from ...evaluation.metrics import clustering_scores
from ...training.callbacks import MethodCallback
from ...training.distributed import gather, global_mean
from ...training.initialization import run_kmeans
from ...training.losses import dec_target_distribution
from ...training.targets import batch_targets, set_targets, targets_computed_at
from ...training.trainer import ClusteringTrainer
from .losses_clusterbert import target_cross_entropy

logger = logging.get_logger(__name__)

STAGE_NAMES = {0: "pretrained encoder", 1: "domain adaptation", 2: "clustering", 3: "hardening"}


def delete_words(
    input_ids: torch.Tensor, attention_mask: torch.Tensor, word_ids: torch.Tensor, ratio: float, pad_token_id: int
) -> dict[str, torch.Tensor]:
    """TSDAE's noise on a tokenized batch: each word (all its tokens; ``word_ids`` -1 marks special and padding
    tokens) is deleted with probability ``ratio``, at least one word is kept, special tokens stay. Draws from torch's
    RNG. Returns the noised ``input_ids`` / ``attention_mask``, re-padded."""
    rows = []
    for ids, mask, words in zip(input_ids, attention_mask.bool(), word_ids):
        present = torch.unique(words[words >= 0])
        keep_word = torch.rand(len(present)) >= ratio
        if len(present) and not keep_word.any():
            keep_word[torch.randint(len(present), (1,))] = True
        kept = torch.isin(words, present[keep_word].to(words.device)) | ((words < 0) & mask)
        rows.append(ids[kept])
    masks = [torch.ones_like(row, dtype=attention_mask.dtype) for row in rows]
    return {
        "input_ids": torch.nn.utils.rnn.pad_sequence(rows, batch_first=True, padding_value=pad_token_id),
        "attention_mask": torch.nn.utils.rnn.pad_sequence(masks, batch_first=True),
    }


def build_denoising_loss(model):
    """sentence-transformers' ``DenoisingAutoEncoderLoss`` around ``model``'s own encoder: a decoder of the
    encoder's architecture with cross-attention, initialised from the encoder's current weights and tied to them
    (the encoder's parameters become the decoder's shared ones), reading z pooled as ``model`` pools."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules.transformer import Transformer
    from sentence_transformers.sentence_transformer.losses import DenoisingAutoEncoderLoss
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    from transformers.utils import logging as hf_logging

    model_type = model.encoder.config.model_type
    if model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        raise ValueError(
            f"ClusterBERT's denoising decoder (TSDAE) is the encoder's own architecture run as a decoder, and "
            f"transformers has no decoder version of {model_type!r} (the encoder {model.config.name_or_path!r}). "
            "Pass `encoder=` an encoder of an architecture that has one (BERT, RoBERTa, MiniLM: e.g. the default "
            "all-MiniLM-L6-v2), or train another method with this encoder."
        )
    device = model.device
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the decoder's cross-attention and LM head are new: no load report
    try:
        with tempfile.TemporaryDirectory() as folder:  # the loss builds its decoder from a checkpoint folder
            # written by hand: save_pretrained writes only on rank 0 of several processes, and every process needs it
            model.encoder.config.save_pretrained(folder)
            save_file(
                {k: v.contiguous() for k, v in model.encoder.state_dict().items()},
                os.path.join(folder, "model.safetensors"),
                metadata={"format": "pt"},
            )
            model.tokenizer.save_pretrained(folder)
            transformer = Transformer(folder, max_seq_length=model.config.max_length)
            transformer.model = model.encoder  # the encoder that trains is the clusterer's
            modules = [transformer, Pooling(model.config.encoder.hidden_size, pooling_mode=model.config.pooling)]
            if model.config.normalize_embeddings:
                modules.append(Normalize())
            sentence_model = SentenceTransformer(modules=modules, device=str(device))
            # The loss loads its decoder from the encoder config's `_name_or_path` and ties by giving the encoder the
            # decoder's parameters, loaded on the CPU: pointed at the folder above, they hold the current weights
            # (not the checkpoint the encoder once came from), and the move below takes them back to the model's
            # device with the decoder's own tensors.
            name_or_path = model.encoder.config._name_or_path
            model.encoder.config._name_or_path = folder
            try:
                loss = DenoisingAutoEncoderLoss(sentence_model, tie_encoder_decoder=True)
            finally:
                model.encoder.config._name_or_path = name_or_path
    finally:
        hf_logging.set_verbosity(verbosity)
    return loss.to(device)


class ClusterBERTStagesCallback(MethodCallback):
    """Recomputes the targets Q where a round of stage 2 (k-means) or stage 3 (Eq. 5) begins. When training ends,
    scores the embeddings after the last stage if the training texts have labels (reporting only) and saves the
    decoder with ``keep_decoder``."""

    def on_step_begin(self, args, state, control, **kwargs):
        trainer, step = self._trainer(), state.global_step
        if trainer.stage(step) > 1 and (
            trainer.targets is None or step in trainer.round_starts() and not targets_computed_at(trainer, step)
        ):
            trainer.refresh_targets(trainer.stage(step))

    def on_train_end(self, args, state, control, **kwargs):
        trainer = self._trainer()
        if trainer.labels is not None and state.global_step >= state.max_steps > 0:  # finished, not interrupted
            trainer.record_stage_metrics(trainer.stage(state.global_step - 1), trainer.embed_train_texts())
        if trainer.model.config.keep_decoder:  # a ``*ForCausalLM`` folder, with the tokenizer, for more TSDAE training
            folder = os.path.join(args.output_dir, "decoder")
            trainer.reconstruction.decoder.save_pretrained(folder)
            trainer.model.tokenizer.save_pretrained(folder)


class ClusterBERTTrainer(ClusteringTrainer):
    """Trains a [`ClusterBERTModel`] on rows ``{text}``: no augmented views; the noised input is made in the step."""

    views = {"": "text"}
    word_ids = True
    stage_fractions = ("stage1_fraction", "stage2_fraction")
    targets_name = "clusterbert_targets"  # Q: N k-means cluster ids (stage 2) or N x K (Eq. 5, stage 3)
    method_callbacks = (ClusterBERTStagesCallback,)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.reconstruction = build_denoising_loss(self.model)
        self._noised_embedding: torch.Tensor | None = None
        self.reconstruction.encoder.register_forward_hook(
            lambda _module, _args, output: setattr(self, "_noised_embedding", output["sentence_embedding"])
        )
        # Labels of the training texts, when present, score each stage (Figure 3 of the paper); never trained on.
        dataset: Any = self.train_dataset
        self.labels = np.asarray(dataset["label"]) if "label" in getattr(dataset, "column_names", ()) else None
        self.stage_metrics: list[dict] = []
        self._initial_kmeans = None

    def training_modules(self) -> dict[str, torch.nn.Module]:
        return {"decoder": self.reconstruction.decoder}

    def is_encoder_parameter(self, name: str) -> bool:
        return name.startswith(("encoder.", "decoder."))  # the decoder trains at the encoder's learning rate

    # ----- stages ----------------------------------------------------------------------------------------------------
    def round_starts(self) -> dict[int, int]:
        """Step -> stage, for every step at which a stage-2 or stage-3 round recomputes Q."""
        total = max(int(self.state.max_steps or self.args.max_steps or 0), 1)
        (first2, first3), config = self.stage_bounds(), self.model.config
        rounds = ((2, first2, first3, config.clustering_rounds), (3, first3, total, config.hardening_rounds))
        return {
            first + (end - first) * r // n: stage
            for stage, first, end, n in rounds
            for r in range(n)
            if first + (end - first) * r // n < end
        }

    # ----- targets ---------------------------------------------------------------------------------------------------
    def initialize_clusters(self, embeddings: np.ndarray | None = None) -> None:
        """k-means on the pretrained encoder's embeddings: ``initial_kmeans_labels`` (plain k-means, measured in the
        same run). The head is trained from stage 2 on; ClusterBERT has no centroids."""
        embeddings = self.embed_train_texts() if embeddings is None else embeddings
        kmeans = run_kmeans(self, embeddings)
        self.initial_kmeans_labels = kmeans.labels_
        self._initial_kmeans = kmeans if self.model.config.stage1_fraction == 0 else None  # stage 2 starts on them
        self.record_stage_metrics(0, embeddings, kmeans_labels=kmeans.labels_)

    def refresh_targets(self, stage: int) -> None:
        """Q for the round of ``stage`` that starts now: k-means clusters of the embeddings of all training texts
        (stage 2), or Eq. 5 on the head's predictions for them (stage 3)."""
        start, step = time.perf_counter(), self.state.global_step
        model, (first2, first3) = self.model, self.stage_bounds()
        kmeans = self._initial_kmeans if step == 0 else None  # no stage 1: the initial k-means is this round's
        embeddings = None if kmeans is not None and stage == 2 else self.embed_train_texts()
        if stage == 2:
            kmeans = kmeans or run_kmeans(self, embeddings)
            labels, centers = kmeans.labels_, kmeans.cluster_centers_
            if step == first2 and step > 0:
                self.record_stage_metrics(1, embeddings, kmeans_labels=labels)
            if model.config.centroids_initialized:  # a re-clustering: keep the head's cluster ids (a renaming only)
                order = self._match_to_head(labels, embeddings)
                labels, centers = order[labels], centers[np.argsort(order)]
            if model.config.head_init == "kmeans":
                init_head_from_centroids(model, centers)
            set_targets(self, torch.as_tensor(labels, dtype=torch.long))
        else:
            probs = self.cluster_probabilities(embeddings).cpu()
            if step == first3:
                self.record_stage_metrics(2, embeddings, head_labels=probs.argmax(-1).numpy())
            set_targets(self, dec_target_distribution(probs))  # Eq. 5 is DEC's target distribution
        model.config.centroids_initialized = True  # the head trains from the first stage-2 step on
        logger.info(
            f"ClusterBERT stage {stage}: targets of {len(self.targets)} texts in {time.perf_counter() - start:.1f}s."
        )

    def _match_to_head(self, labels: np.ndarray, embeddings: np.ndarray) -> np.ndarray:
        """The renaming of k-means clusters that best agrees with the head's current predictions (Hungarian)."""
        from scipy.optimize import linear_sum_assignment

        head = self.cluster_probabilities(embeddings).argmax(-1).cpu().numpy()
        k = self.model.config.num_clusters
        counts = np.bincount(labels * k + head, minlength=k * k).reshape(k, k)
        return linear_sum_assignment(counts, maximize=True)[1]  # a square matrix: every row, in order

    def checkpoint_arrays(self) -> dict[str, np.ndarray]:
        arrays = super().checkpoint_arrays()
        if self.stage_metrics:
            arrays["clusterbert_stage_metrics"] = np.asarray(json.dumps(self.stage_metrics, default=float))
        return arrays

    def restore_checkpoint_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        super().restore_checkpoint_arrays(arrays)
        if "clusterbert_stage_metrics" in arrays:
            self.stage_metrics = json.loads(str(arrays["clusterbert_stage_metrics"]))

    # ----- the paper's Figure 3: clusters after each stage ---------------------------------------------------------
    def record_stage_metrics(
        self,
        stage: int,
        embeddings: np.ndarray,
        kmeans_labels: np.ndarray | None = None,
        head_labels: np.ndarray | None = None,
    ) -> None:
        """ACC / NMI of k-means on ``embeddings`` (and of the head, from stage 2 on) and the silhouette index of the
        k-means clusters, after ``stage``; only when the training texts have labels (never used for training)."""
        if self.labels is None or any(m["stage"] == stage for m in self.stage_metrics):
            return
        from sklearn.metrics import silhouette_score

        if kmeans_labels is None:
            kmeans_labels = run_kmeans(self, embeddings).labels_
        entry = {
            "stage": stage,
            "step": self.state.global_step,
            **clustering_scores(self.labels, kmeans_labels, "kmeans_"),
        }
        if stage >= 2 or head_labels is not None:
            if head_labels is None:
                head_labels = self.cluster_probabilities(embeddings).argmax(-1).cpu().numpy()
            entry.update(clustering_scores(self.labels, head_labels, "head_"))
        entry = {k: v for k, v in entry.items() if not k.endswith(("_ari", "_purity"))}  # Figure 3: ACC and NMI
        sample = min(len(embeddings), 3000)
        entry["silhouette"] = float(
            silhouette_score(embeddings, kmeans_labels, sample_size=sample, random_state=self.args.seed)
        )
        self.stage_metrics.append(entry)
        logger.info(f"ClusterBERT after stage {stage} ({STAGE_NAMES[stage]}): {entry}")

    # ----- the loss --------------------------------------------------------------------------------------------------
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        config = model.config
        stage = self.stage(self.state.global_step)
        clean = {k: inputs[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in inputs}
        pad = self.processing_class.pad_token_id
        noised = delete_words(
            inputs["input_ids"], inputs["attention_mask"], inputs["word_ids"], config.deletion_ratio, pad
        )
        self.reconstruction.decoder.train(model.training)
        reconstruction = self.reconstruction([noised, clean], None)  # Eq. 1; z̃ kept by the hook
        # TSDAE's mean is over the decoder's target tokens (the clean ids after the first, without padding)
        targets = (clean["input_ids"][:, 1:] != pad).sum()
        terms = {"reconstruction": global_mean(self, reconstruction, targets)}
        loss = terms["reconstruction"]
        noised_embedding = gather(self, self._noised_embedding)
        if stage >= 2:
            targets = batch_targets(self, inputs, noised_embedding.device)
            if targets.ndim == 1:  # k-means clusters: one-hot Q
                targets = torch.nn.functional.one_hot(targets, config.num_clusters).float()
            log_probs = torch.log_softmax(model.cluster_head(noised_embedding).float(), dim=-1)
            terms["clustering"] = target_cross_entropy(log_probs, targets)  # Eq. 3
            weight = config.clustering_weight if stage == 2 else config.hardening_weight
            loss = weight * terms["clustering"] + (1 - weight) * terms["reconstruction"]  # Eq. 4
        self.record_loss_terms(**terms)
        return (loss, {"embeddings": noised_embedding}) if return_outputs else loss
