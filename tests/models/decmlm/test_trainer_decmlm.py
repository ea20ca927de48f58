"""DECMLMTrainer: masking, the joint loss against a direct re-computation, the per-epoch target refresh, the
"w/o masked LM loss" ablation, learning rates, the index column, bf16, resuming, and `train --method decmlm`."""

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from datasets import Dataset
from transformers import TrainerCallback

from hf_textcluster import ClusteringTrainingArguments, DECMLMModel, DECMLMTrainer, train_clusterer
from hf_textcluster.editing import initialize_clusters
from hf_textcluster.models.building import from_encoder_pretrained
from hf_textcluster.models.decmlm.losses_decmlm import masked_lm_loss, mlm_logits
from hf_textcluster.models.decmlm.trainer_decmlm import MaskedLMCollator, mask_tokens
from hf_textcluster.training.losses import dec_target_distribution


@pytest.fixture()
def dataset(toy_corpus):
    texts, labels = toy_corpus
    return Dataset.from_dict({"text": texts, "label": labels})


def _args(tmp_path, **kwargs):
    defaults = dict(
        output_dir=str(tmp_path / "run"),
        per_device_train_batch_size=16,
        learning_rate=1e-4,
        report_to="none",
        disable_tqdm=True,
        use_cpu=True,
        save_strategy="no",
        max_steps=3,
        seed=0,
    )
    defaults.update(kwargs)
    return ClusteringTrainingArguments(**defaults)


def _model(encoder_dir, **kwargs):
    torch.manual_seed(0)
    return from_encoder_pretrained(DECMLMModel, str(encoder_dir), num_clusters=3, **kwargs)


# ----- masking -------------------------------------------------------------------------------------------------
def test_masking_rate_and_never_special_or_padding_tokens(tiny_encoder_dir, toy_corpus):
    model = _model(tiny_encoder_dir)
    tokenizer = model.tokenizer
    collator = MaskedLMCollator(
        tokenizer,
        32,
        probability=0.1,
        vocab_size=model.config.encoder.vocab_size,
        generator=torch.Generator().manual_seed(0),
    )
    rows = [{"text": t, "index": i} for i, t in enumerate(toy_corpus[0] * 10)]
    batch = collator.add_masks(collator(rows))
    ids, masked, labels = batch["input_ids"], batch["mlm_input_ids"], batch["mlm_labels"]
    special = torch.isin(ids, torch.tensor(tokenizer.all_special_ids))
    maskable = batch["attention_mask"].bool() & ~special
    assert special.any() and (batch["attention_mask"] == 0).any()  # the batch has [CLS]/[SEP] and padding
    selected = labels != -100
    assert not (selected & ~maskable).any()
    assert torch.equal(masked[~maskable], ids[~maskable])  # special and padding tokens are never touched
    assert torch.equal(labels[selected], ids[selected])
    assert selected.sum() / maskable.sum() == pytest.approx(0.1, abs=0.015)
    n = selected.sum().item()
    mask_id = tokenizer.mask_token_id
    assert (masked[selected] == mask_id).sum().item() / n == pytest.approx(0.8, abs=0.05)
    changed = selected & (masked != mask_id) & (masked != ids)
    assert changed.sum().item() / n == pytest.approx(0.1, abs=0.04)  # random tokens (a few equal the original)
    assert not torch.isin(masked[changed], torch.tensor(tokenizer.all_special_ids)).any()
    assert torch.equal(batch["index"], torch.arange(len(rows)))


def test_mask_tokens_all_mask_and_the_paper_variant():
    ids = torch.arange(10, 30).reshape(2, 10)
    maskable = torch.ones_like(ids, dtype=torch.bool)
    maskable[:, 0] = False
    masked, labels = mask_tokens(
        ids,
        maskable,
        mask_token_id=4,
        replacement_ids=torch.arange(5, 50),
        probability=0.99,
        mask_fraction=1.0,
        random_fraction=0.0,
        generator=torch.Generator().manual_seed(0),
    )
    selected = labels != -100
    assert not selected[:, 0].any() and selected.sum() >= 15
    assert (masked[selected] == 4).all() and torch.equal(masked[~selected], ids[~selected])


def test_masked_lm_loss_is_cross_entropy_over_masked_positions_only():
    logits = torch.randn(2, 5, 7)
    labels = torch.full((2, 5), -100)
    labels[0, 1], labels[1, 3] = 2, 6
    expected = (F.cross_entropy(logits[0, 1:2], labels[0, 1:2]) + F.cross_entropy(logits[1, 3:4], labels[1, 3:4])) / 2
    torch.testing.assert_close(masked_lm_loss(logits, labels), expected)
    empty = masked_lm_loss(logits.requires_grad_(), torch.full((2, 5), -100))
    assert empty.item() == 0.0 and empty.requires_grad  # no masked token: 0, not NaN


# ----- the loss ------------------------------------------------------------------------------------------------
def test_compute_loss_matches_direct_recomputation(tiny_encoder_dir, dataset, tmp_path):
    model = _model(tiny_encoder_dir, mlm_loss_weight=0.7, cluster_loss_weight=1.3, alpha=2.0)
    trainer = DECMLMTrainer(model=model, args=_args(tmp_path), train_dataset=dataset)
    initialize_clusters(model, dataset["text"])
    trainer.refresh_targets()
    assert trainer.targets.shape == (len(dataset), 3)
    rows = [trainer.train_dataset[i] for i in (5, 17, 3, 90, 41, 64, 2, 33)]
    batch = trainer.data_collator(rows)
    assert batch["index"].tolist() == [5, 17, 3, 90, 41, 64, 2, 33]
    recorded = {}
    trainer.record_loss_terms = lambda **terms: recorded.update(terms)
    model.eval()  # no dropout, so the direct computation sees the same token states
    loss = trainer.compute_loss(model, batch)

    hidden = model.encoder(
        input_ids=batch["mlm_input_ids"],
        attention_mask=batch["attention_mask"],
        token_type_ids=batch.get("token_type_ids"),
    ).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    z = (hidden * mask).sum(1) / mask.sum(1)
    distances = torch.cdist(z, model.cluster_head.centroids).pow(2)
    kernel = (1 + distances / 2.0).pow(-(2.0 + 1) / 2)
    q = kernel / kernel.sum(1, keepdim=True)
    p = trainer.targets[batch["index"]]
    expected_kl = (p * (p.log() - q.log())).sum(1).mean()
    logits = mlm_logits(model, hidden)  # all positions; the cross-entropy ignores the unmasked ones
    expected_mlm = F.cross_entropy(logits.flatten(0, 1), batch["mlm_labels"].flatten(), ignore_index=-100)
    torch.testing.assert_close(recorded["cluster_kl"], expected_kl, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(recorded["mlm"], expected_mlm, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(loss, 0.7 * expected_mlm + 1.3 * expected_kl, rtol=1e-4, atol=1e-5)
    # The targets are the stored per-epoch ones, not this batch's own DEC target.
    assert not torch.allclose(p, dec_target_distribution(q), atol=1e-4)


class _TargetRecorder(TrainerCallback):
    """Records the trainer's targets before every step, and the full-pass target P from the current weights at the
    start of training and after every step."""

    def __init__(self, model, texts):
        self.model, self.texts = model, texts
        self.trainer = None
        self.per_step, self.expected_after_step = [], {}

    def _full_pass_target(self):  # P over all rows, unmasked inputs, from the current weights
        return dec_target_distribution(torch.from_numpy(self.model.predict_proba(self.texts)))

    def on_train_begin(self, args, state, control, **kwargs):
        self.expected_after_step[0] = self._full_pass_target()

    def on_step_end(self, args, state, control, **kwargs):
        self.expected_after_step[state.global_step] = self._full_pass_target()

    def on_step_begin(self, args, state, control, **kwargs):
        self.per_step.append(self.trainer.targets.clone())


def _train_recording_targets(model, dataset, tmp_path):
    trainer = DECMLMTrainer(
        model=model,
        args=_args(
            tmp_path,
            max_steps=-1,
            num_train_epochs=2,
            per_device_train_batch_size=8,
            learning_rate=1e-3,
            head_learning_rate=1e-2,
        ),
        train_dataset=dataset,
    )
    recorder = _TargetRecorder(model, dataset["text"])
    recorder.trainer = trainer
    trainer.add_callback(recorder)
    trainer.train()
    return trainer, recorder


def _steps_where_targets_change(per_step):
    return [i for i in range(1, len(per_step)) if not torch.allclose(per_step[i - 1], per_step[i], atol=1e-4)]


def test_targets_change_only_at_epoch_boundaries(tiny_encoder_dir, dataset, tmp_path):
    small = dataset.select(range(48))
    trainer, recorder = _train_recording_targets(_model(tiny_encoder_dir), small, tmp_path)
    steps = recorder.per_step
    assert len(steps) == 12  # 6 steps per epoch
    assert _steps_where_targets_change(steps) == [6]
    torch.testing.assert_close(steps[0], recorder.expected_after_step[0], rtol=1e-4, atol=1e-6)  # the k-means pass
    torch.testing.assert_close(steps[6], recorder.expected_after_step[6], rtol=1e-4, atol=1e-6)  # after epoch 1
    assert trainer.target_refreshes == 2  # the first epoch reuses the k-means initialisation's encoding pass


def test_target_refresh_steps_refreshes_every_k_steps_instead_of_per_epoch(tiny_encoder_dir, dataset, tmp_path):
    small = dataset.select(range(48))
    trainer, recorder = _train_recording_targets(_model(tiny_encoder_dir, target_refresh_steps=4), small, tmp_path)
    steps = recorder.per_step
    assert len(steps) == 12
    assert _steps_where_targets_change(steps) == [4, 8]  # not at the epoch boundary (step 6)
    for step in (4, 8):
        torch.testing.assert_close(steps[step], recorder.expected_after_step[step], rtol=1e-4, atol=1e-6)
    assert trainer.target_refreshes == 3  # the k-means pass, then steps 4 and 8


def test_a_second_train_call_recomputes_the_targets(tiny_encoder_dir, dataset, tmp_path):
    model = _model(tiny_encoder_dir)
    trainer = DECMLMTrainer(model=model, args=_args(tmp_path, max_steps=2, learning_rate=1e-3), train_dataset=dataset)
    trainer.train()
    assert trainer.target_refreshes == 1  # the k-means pass only
    before = trainer.targets.clone()
    trainer.train()  # centroids already fitted: no k-means, but P must come from the trained weights, not be reused
    assert trainer.target_refreshes == 2 and not torch.allclose(before, trainer.targets, atol=1e-6)


def test_loss_terms_are_logged(tiny_encoder_dir, dataset, tmp_path):
    model = _model(tiny_encoder_dir)
    trainer = DECMLMTrainer(model=model, args=_args(tmp_path, logging_steps=1), train_dataset=dataset)
    trainer.train()
    logged = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert logged and all("loss_mlm" in e and "loss_cluster_kl" in e for e in logged)


def test_without_masked_lm_loss_skips_masking_and_the_head(tiny_encoder_dir, dataset, tmp_path):
    model = _model(tiny_encoder_dir, mlm_loss_weight=0.0)
    calls = []
    model.mlm_head.register_forward_hook(lambda module, args, output: calls.append(1))
    trainer = DECMLMTrainer(model=model, args=_args(tmp_path, logging_steps=1), train_dataset=dataset)
    batch = trainer.data_collator([trainer.train_dataset[i] for i in range(4)])
    assert "mlm_input_ids" not in batch and "mlm_labels" not in batch
    head_before = model.mlm_head.dense.weight.detach().clone()
    encoder_before = model.encoder.embeddings.word_embeddings.weight.detach().clone()
    trainer.train()
    assert calls == []
    torch.testing.assert_close(model.mlm_head.dense.weight, head_before)
    assert not torch.equal(encoder_before, model.encoder.embeddings.word_embeddings.weight.detach())
    logged = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert logged and all(
        "loss_mlm" not in e and e["loss"] == pytest.approx(e["loss_cluster_kl"], rel=1e-4) for e in logged
    )


# ----- optimisation, data, precision ---------------------------------------------------------------------------
def test_learning_rates_of_encoder_centroids_and_mlm_head(tiny_encoder_dir, tiny_mlm_encoder_dir, dataset, tmp_path):
    untrained = _model(tiny_encoder_dir)
    trainer = DECMLMTrainer(model=untrained, args=_args(tmp_path, learning_rate=2e-5), train_dataset=dataset)
    encoder_group, head_group = trainer.create_optimizer().param_groups
    assert encoder_group["lr"] == pytest.approx(2e-5) and head_group["lr"] == pytest.approx(2e-3)
    head_ids = {id(p) for p in head_group["params"]}
    assert id(untrained.cluster_head.centroids) in head_ids and id(untrained.mlm_head.dense.weight) in head_ids
    pretrained = _model(tiny_mlm_encoder_dir)
    trainer = DECMLMTrainer(model=pretrained, args=_args(tmp_path, head_learning_rate=7e-4), train_dataset=dataset)
    encoder_group, head_group = trainer.create_optimizer().param_groups
    assert head_group["lr"] == pytest.approx(7e-4)
    assert [id(p) for p in head_group["params"]] == [id(pretrained.cluster_head.centroids)]
    assert id(pretrained.mlm_head.dense.weight) in {id(p) for p in encoder_group["params"]}


def test_index_column_is_added_and_checked(tiny_encoder_dir, dataset, tmp_path):
    model = _model(tiny_encoder_dir)
    trainer = DECMLMTrainer(model=model, args=_args(tmp_path), train_dataset=dataset)
    assert trainer.train_dataset["index"] == list(range(len(dataset)))
    assert "index" not in dataset.column_names  # the caller's dataset is left alone
    DECMLMTrainer(model=model, args=_args(tmp_path), train_dataset=trainer.train_dataset)  # a correct one is kept
    shuffled = dataset.add_column("index", list(reversed(range(len(dataset)))))
    with pytest.raises(ValueError, match="'index' column"):
        DECMLMTrainer(model=model, args=_args(tmp_path), train_dataset=shuffled)
    with pytest.raises(ValueError, match="remove_unused_columns"):
        DECMLMTrainer(model=model, args=_args(tmp_path, remove_unused_columns=True), train_dataset=dataset)


def test_compute_loss_before_targets_is_a_clear_error(tiny_encoder_dir, dataset, tmp_path):
    model = _model(tiny_encoder_dir)
    trainer = DECMLMTrainer(model=model, args=_args(tmp_path), train_dataset=dataset)
    batch = trainer.data_collator([trainer.train_dataset[i] for i in range(4)])
    with pytest.raises(RuntimeError, match="refresh_targets"):
        trainer.compute_loss(model, batch)
    batch.pop("index")
    with pytest.raises(ValueError, match="index"):
        trainer.compute_loss(model, batch)


def test_bf16_runs_the_loss_under_autocast(tiny_encoder_dir, dataset, tmp_path):
    model = _model(tiny_encoder_dir)
    dtypes = []
    model.encoder.encoder.layer[0].attention.self.query.register_forward_hook(
        lambda module, args, output: dtypes.append((module.training, output.dtype))
    )
    DECMLMTrainer(model=model, args=_args(tmp_path, bf16=True, max_steps=1), train_dataset=dataset).train()
    in_training = [dtype for training, dtype in dtypes if training]  # (the cluster checks run in eval mode)
    assert in_training and set(in_training) == {torch.bfloat16}


# ----- orchestration -------------------------------------------------------------------------------------------
class _Interrupt(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == 3:
            raise KeyboardInterrupt


def test_interrupted_training_resumes_and_recomputes_the_targets(tiny_encoder_dir, dataset, tmp_path, monkeypatch):
    output_dir = str(tmp_path / "run")
    overrides = dict(
        max_steps=4,
        save_steps=2,
        per_device_train_batch_size=16,
        use_cpu=True,
        disable_tqdm=True,
        bf16=False,
        logging_steps=1,
    )
    original_init = DECMLMTrainer.__init__

    def init_with_interrupt(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self.add_callback(_Interrupt())

    monkeypatch.setattr(DECMLMTrainer, "__init__", init_with_interrupt)
    with pytest.raises(KeyboardInterrupt):
        train_clusterer(
            "decmlm", dataset, output_dir, encoder=str(tiny_encoder_dir), training_overrides=overrides, evaluate=False
        )
    monkeypatch.setattr(DECMLMTrainer, "__init__", original_init)
    result = train_clusterer(
        "decmlm", dataset, output_dir, encoder=str(tiny_encoder_dir), training_overrides=overrides, evaluate=False
    )
    assert result.trainer.state.global_step == 4
    assert result.trainer.target_refreshes == 0  # no k-means and no refresh on resume: P comes from the checkpoint
    reloaded = DECMLMModel.from_pretrained(output_dir)
    np.testing.assert_array_equal(reloaded.predict(dataset["text"]), result.model.predict(dataset["text"]))


def test_cli_train_method_decmlm(tiny_encoder_dir, toy_corpus, tmp_path):
    from hf_textcluster.cli import main

    texts, _ = toy_corpus
    data = tmp_path / "texts.jsonl"
    data.write_text("\n".join(json.dumps({"body": t}) for t in texts))
    out_dir = tmp_path / "model"
    code = main(
        [
            "train",
            "--method",
            "decmlm",
            "--input",
            str(data),
            "--text-column",
            "body",
            "--num-clusters",
            "3",
            "--encoder",
            str(tiny_encoder_dir),
            "--output-dir",
            str(out_dir),
            "--config",
            "mlm_probability=0.2",
            "--augmentation",
            "word_deletion",  # DEC-MLM uses no views: ignored with a warning
            "--max-steps",
            "2",
            "--per-device-train-batch-size",
            "8",
            "--precision",
            "fp32",
            "--save-strategy",
            "no",
            "--disable-tqdm",
            "true",
        ]
    )
    assert code == 0
    run = json.loads((out_dir / "training_run.json").read_text())
    assert run["method"] == "decmlm" and "augmentation" not in run  # no views: not recorded
    config = json.loads((out_dir / "config.json").read_text())
    assert config["model_type"] == "decmlm" and config["mlm_probability"] == 0.2 and config["max_length"] == 32
    assert isinstance(DECMLMModel.from_pretrained(out_dir), DECMLMModel)


def test_recipes_load():
    from hf_textcluster.runs.recipes import load_recipe

    paper = load_recipe("decmlm", "paper")
    assert paper["config"]["max_length"] == 128 and paper["config"]["mlm_probability"] == 0.1
    assert paper["training"]["learning_rate"] == 3e-5 and paper["training"]["per_device_train_batch_size"] == 16
    assert paper["training"]["num_train_epochs"] == 10
    cpu = load_recipe("decmlm", "cpu")
    assert "bf16" not in cpu["training"] and cpu["config"]["max_length"] == 32  # precision follows the hardware
    for recipe in (paper, cpu):
        from hf_textcluster import DECMLMConfig

        DECMLMConfig(**recipe["config"])  # every recipe is a valid config
