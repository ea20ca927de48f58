"""DEC-CRL: each loss term against a direct re-computation (Eq. 2-4, 7-9, 13-15), the CRL module's shapes (Eq. 10-11),
the vocabulary and topics surviving save / load, and the choices the paper leaves open."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from transformers import AutoModel, TrainerCallback

from hf_textcluster import ClusteringTrainingArguments, DECCRLConfig, DECCRLModel, DECCRLTrainer
from hf_textcluster.editing import initialize_clusters
from hf_textcluster.hub.model_card import generate_model_card
from hf_textcluster.models.building import from_encoder_pretrained
from hf_textcluster.models.deccrl.losses_deccrl import (
    cross_view_contrastive_loss,
    etm_reconstruction_loss,
    gaussian_kl_loss,
    latent_reconstruction_loss,
    word_log_likelihoods,
)
from hf_textcluster.representation import name_clusters
from hf_textcluster.representation.topics import cluster_top_words, cluster_topics
from hf_textcluster.training.losses import dec_kl_loss, dec_target_distribution


def _trainer(tiny_encoder_dir, dataset, tmp_path, **config):
    torch.manual_seed(0)
    model = from_encoder_pretrained(
        DECCRLModel,
        str(tiny_encoder_dir),
        num_clusters=3,
        latent_dim=8,
        num_topics=2,
        inference_hidden_dim=16,
        **config,
    )
    args = ClusteringTrainingArguments(
        output_dir=str(tmp_path / "run"),
        per_device_train_batch_size=16,
        max_steps=2,
        report_to="none",
        disable_tqdm=True,
        use_cpu=True,
        save_strategy="no",
        bf16=False,
        logging_steps=1,
    )
    return DECCRLTrainer(model=model, args=args, train_dataset=dataset)


# ----- the loss functions, by their equations ------------------------------------------------------------------------
def test_cross_view_contrastive_loss_is_eq_2_to_4():
    torch.manual_seed(0)
    v1, v2, tau = torch.randn(4, 5), torch.randn(4, 5), 0.5

    def sim(a, b):
        return float(torch.dot(a, b) / (a.norm() * b.norm()))

    total = 0.0
    for i in range(4):
        for a, b in ((v1, v2), (v2, v1)):
            numerator = math.exp(sim(a[i], b[i]) / tau)
            denominator = sum(math.exp(sim(a[i], b[m]) / tau) for m in range(4) if m != i)
            total += -math.log(numerator / denominator)
    assert cross_view_contrastive_loss(v1, v2, tau).item() == pytest.approx(total / 4, rel=1e-5)
    with pytest.raises(ValueError, match="at least 2"):
        cross_view_contrastive_loss(v1[:1], v2[:1])


def test_etm_reconstruction_and_gaussian_kl_are_eq_15():
    torch.manual_seed(0)
    bow = torch.tensor([[2.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    probs = torch.softmax(torch.randn(2, 3), dim=-1)
    expected = -(2 * math.log(float(probs[0, 0])) + math.log(float(probs[0, 2]))) / 2  # the empty text: 0
    assert etm_reconstruction_loss(bow, probs.log()).item() == pytest.approx(expected, rel=1e-6)
    mu, logvar = torch.randn(2, 3), torch.randn(2, 3)
    kl = [
        sum(0.5 * (math.exp(float(logvar[i, j])) + float(mu[i, j]) ** 2 - 1 - float(logvar[i, j])) for j in range(3))
        for i in range(2)
    ]
    assert gaussian_kl_loss(mu, logvar).item() == pytest.approx(sum(kl) / 2, rel=1e-5)


def test_topic_decoder_is_eq_10_and_11(tiny_encoder_dir):
    config = dict(latent_dim=4, num_topics=2, vocabulary=["a", "b", "c"])
    model = from_encoder_pretrained(DECCRLModel, str(tiny_encoder_dir), num_clusters=3, **config)
    decoder, centroids = model.topic_decoder, model.cluster_head.centroids
    beta = model.topic_word_distributions()
    assert beta.shape == (3, 2, 3) and torch.allclose(beta.sum(-1), torch.ones(3, 2))
    k, t = 1, 0
    alpha = decoder.fc_g(torch.cat([centroids[k], decoder.topic_vectors[t]]))  # Eq. 10
    torch.testing.assert_close(beta[k, t], torch.softmax(decoder.word_embeddings @ alpha, dim=0))  # Eq. 11


def test_compute_loss_is_eq_16(tiny_encoder_dir, views_dataset, tmp_path):
    trainer = _trainer(
        tiny_encoder_dir, views_dataset, tmp_path, cluster_loss_weight=0.7, reconstruction_loss_weight=0.3
    )
    model = trainer.model
    trainer.initialize_clusters()
    batch = trainer.data_collator([views_dataset[i] for i in range(8)])
    model.eval()  # no dropout and ε = 0 (x̂ = μ), so the direct re-computation sees the same numbers
    loss = trainer.compute_loss(model, batch)
    e = [model.encode(batch[f"{p}input_ids"], batch[f"{p}attention_mask"]) for p in ("", "aug1_", "aug2_")]
    h, h1, h2 = (model.fc_e(x) for x in e)
    cl = cross_view_contrastive_loss(model.contrast_head(h1), model.contrast_head(h2), 0.5)
    o = model.cluster_head(h)
    cluster = dec_kl_loss(dec_target_distribution(o), o)
    mu, logvar = model.topic_inference(batch["bow"])
    theta = torch.softmax(mu, dim=-1)
    beta = model.topic_word_distributions()[o.argmax(-1)]  # M x T x V: each text's own cluster (argmax)
    log_p = torch.log(torch.einsum("mt,mtv->mv", theta, beta))
    reconstruction = -(batch["bow"] * log_p).sum(1).mean()
    expected = cl + 0.7 * cluster + 0.3 * (reconstruction + gaussian_kl_loss(mu, logvar))
    torch.testing.assert_close(loss, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("choice", ["expectation", "sample"])
def test_the_other_cluster_choices_of_eq_13(choice, tiny_encoder_dir, views_dataset, tmp_path):
    trainer = _trainer(tiny_encoder_dir, views_dataset, tmp_path, crl_cluster=choice)
    trainer.initialize_clusters()
    model = trainer.model.eval()
    bow = trainer.data_collator([views_dataset[i] for i in range(6)])["bow"]
    o = torch.softmax(torch.randn(6, 3), dim=-1)
    reconstruction, _ = trainer.reconstruction_terms(model, bow, o)
    log_p, _, _ = word_log_likelihoods(model, bow)  # M x K x V
    per_cluster = -(bow.unsqueeze(1) * log_p).sum(-1)  # M x K
    s = torch.softmax(o, dim=-1)
    if choice == "expectation":
        torch.testing.assert_close(reconstruction, (s * per_cluster).sum(1).mean())
    else:  # a sampled cluster's loss lies between the best and the worst cluster's
        assert per_cluster.min(1).values.mean() - 1e-5 <= reconstruction <= per_cluster.max(1).values.mean() + 1e-5


def test_a_seeded_run_does_not_depend_on_what_else_drew_from_torch(tiny_encoder_dir, views_dataset, tmp_path):
    """Dropout, ε of Eq. 14, the sampled clusters of Eq. 13 and the topic model's initialisation come from the run's
    seed: a run whose global generator was drawn from before training and between steps (as another device's noise
    stream would be) trains the same model and gives the same clusters."""

    class DrawFromTorch(TrainerCallback):
        def on_step_begin(self, *args, **kwargs):
            torch.rand(7)

    runs = []
    for disturbed in (False, True):
        trainer = _trainer(tiny_encoder_dir, views_dataset, tmp_path / str(disturbed), crl_cluster="sample")
        if disturbed:
            trainer.add_callback(DrawFromTorch())
            torch.rand(11)
        trainer.train()
        runs.append(trainer.model.eval())
    texts = views_dataset["text"]
    np.testing.assert_array_equal(runs[1].predict_proba(texts), runs[0].predict_proba(texts))
    for (name, expected), actual in zip(runs[0].state_dict().items(), runs[1].state_dict().values()):
        torch.testing.assert_close(actual, expected, rtol=0, atol=0, msg=name)


def test_sampled_clusters_follow_s(tiny_encoder_dir, views_dataset, tmp_path):
    trainer = _trainer(tiny_encoder_dir, views_dataset, tmp_path)
    trainer.step_generator = torch.Generator().manual_seed(0)
    s = torch.tensor([[0.0, 1.0, 0.0], [0.2, 0.3, 0.5]])
    clusters = torch.stack([trainer.sample_clusters(s) for _ in range(4000)])
    assert (clusters[:, 0] == 1).all()
    shares = torch.bincount(clusters[:, 1], minlength=3) / 4000
    torch.testing.assert_close(shares, s[1], atol=0.03, rtol=0)


def test_without_crl_skips_the_topic_model(tiny_encoder_dir, views_dataset, tmp_path):
    trainer = _trainer(tiny_encoder_dir, views_dataset, tmp_path, reconstruction_loss_weight=0)
    trainer.train()
    logged = {k for entry in trainer.state.log_history for k in entry if k.startswith("loss_")}
    assert logged == {"loss_cross_view_cl", "loss_cluster_kl"}


# ----- vocabulary, word embeddings, topics ---------------------------------------------------------------------------
def test_vocabulary_and_word2vec_embeddings_are_fitted_once(tiny_encoder_dir, views_dataset, tmp_path):
    trainer = _trainer(tiny_encoder_dir, views_dataset, tmp_path)
    model = trainer.model
    assert model.config.vocabulary is None
    trainer.train()
    vocabulary = model.config.vocabulary
    assert vocabulary and "oracle" in vocabulary and "the" not in vocabulary  # stop words removed
    rho = model.topic_decoder.word_embeddings
    assert rho.shape == (len(vocabulary), 16) and not rho.requires_grad and rho.abs().sum() > 0
    assert model.topic_inference.hidden[0].in_features == len(vocabulary)
    before = rho.detach().clone()
    trainer.train()  # a second run keeps the vocabulary and ρ
    assert model.config.vocabulary is vocabulary and torch.equal(model.topic_decoder.word_embeddings, before)


@pytest.mark.slow  # Word2Vec in fresh interpreters
def test_word2vec_embeddings_do_not_depend_on_the_process(toy_corpus):
    import subprocess
    import sys

    code = (
        "from hf_textcluster.models.deccrl.trainer_deccrl import train_word_embeddings as t;"
        "import sys; print(float(t(sys.argv[1:], ['oracle', 'sql'], 8, seed=0).sum()))"
    )
    runs = {
        subprocess.run(
            [sys.executable, "-c", code, *toy_corpus[0][:30]],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(runs) == 1, runs


def test_topics_survive_save_and_load(tiny_encoder_dir, views_dataset, tmp_path):
    trainer = _trainer(tiny_encoder_dir, views_dataset, tmp_path)
    trainer.train()
    model = trainer.model
    topics = cluster_topics(model, top_n=3)
    assert set(topics) == {0, 1, 2} and all(len(t) == 2 and all(len(w) == 3 for w in t) for t in topics.values())
    assert all(w in model.config.vocabulary for t in topics.values() for words in t for w in words)
    names = name_clusters(model).names  # no texts: the learned words name the clusters
    top_words = cluster_top_words(model, top_n=3)
    assert all(names[k].startswith(" · ".join(words)) for k, words in top_words.items())  # "(k)" if two clash
    assert len(set(names.values())) == 3
    beta = model.topic_word_distributions().mean(1)  # the even topic mix of each cluster
    assert all(
        beta[k, model.config.vocabulary.index(w)] >= beta[k].topk(3).values[-1] - 1e-7
        for k, words in top_words.items()
        for w in words
    )
    model.save_pretrained(tmp_path / "saved")
    loaded = AutoModel.from_pretrained(tmp_path / "saved")
    assert isinstance(loaded, DECCRLModel) and loaded.config.vocabulary == model.config.vocabulary
    assert cluster_topics(loaded, top_n=3) == topics and loaded.config.id2label == names
    texts = views_dataset["text"]
    np.testing.assert_array_equal(loaded.predict(texts), model.predict(texts))
    card = generate_model_card(loaded, metrics={"acc": 0.5, "nmi": 0.5})
    assert "| topic 1 | topic 2 |" in card
    four = cluster_topics(loaded, top_n=4)  # the card shows four words per topic, as the paper's Table 4
    assert all(f"| {k} | {names[k]} | {', '.join(four[k][0])} | {', '.join(four[k][1])} |" in card for k in four)


def test_pca_latent_init_projects_on_the_top_principal_directions(tiny_encoder_dir, views_dataset, tmp_path):
    trainer = _trainer(tiny_encoder_dir, views_dataset, tmp_path, latent_init="pca")
    model = trainer.model
    embeddings = trainer.embed_train_texts()
    trainer.initialize_clusters(embeddings=embeddings)
    h = model.cluster_features(torch.from_numpy(embeddings)).detach().numpy()
    centred = embeddings - embeddings.mean(axis=0)
    expected = centred @ np.linalg.svd(centred, full_matrices=False)[2][:8].T  # L = 8 directions
    signs = np.sign((h * expected).sum(axis=0))  # a principal direction's sign is arbitrary
    np.testing.assert_allclose(h * signs, expected, atol=1e-4)
    fc_e = model.fc_e.weight.detach().clone()
    trainer.initialize_clusters(embeddings=embeddings[::-1].copy())  # clusters set: FC_e is not re-fitted
    assert torch.equal(model.fc_e.weight, fc_e)


def test_evaluation_scores_k_means_in_the_latent_space_as_recluster_serves_it(tiny_encoder_dir, toy_corpus):
    from hf_textcluster.evaluation.metrics import clustering_scores
    from hf_textcluster.training.evaluation import evaluate_clusterer

    texts, labels = toy_corpus
    torch.manual_seed(0)
    model = from_encoder_pretrained(DECCRLModel, str(tiny_encoder_dir), num_clusters=3, latent_dim=8)
    initialize_clusters(model, texts, random_state=1)
    metrics = evaluate_clusterer(model, texts, labels, random_state=0)
    assert metrics["acc"] == pytest.approx(clustering_scores(labels, model.predict(texts))["acc"])
    initialize_clusters(model, texts, random_state=0)  # what `hf-textcluster recluster` does
    reclustered = clustering_scores(labels, model.predict(texts))
    assert {k: metrics[f"latent_kmeans_{k}"] for k in reclustered} == pytest.approx(reclustered)


def test_cli_evaluate_prints_k_means_in_the_latent_space(tiny_encoder_dir, toy_corpus, tmp_path, capsys):
    import csv

    from hf_textcluster.cli import main
    from hf_textcluster.evaluation.metrics import clustering_scores

    texts, labels = toy_corpus
    model = from_encoder_pretrained(DECCRLModel, str(tiny_encoder_dir), num_clusters=3, latent_dim=8)
    initialize_clusters(model, texts)
    model.save_pretrained(tmp_path / "model")
    with open(tmp_path / "texts.csv", "w", newline="") as f:
        csv.writer(f).writerows([("text", "label"), *zip(texts, labels)])
    assert (
        main(
            [
                "evaluate",
                "--model",
                str(tmp_path / "model"),
                "--input",
                str(tmp_path / "texts.csv"),
                "--label-column",
                "label",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "k-means on embeddings: ACC" in out
    initialize_clusters(model, texts, random_state=0)  # recluster: the head's space partition
    acc = 100 * clustering_scores(labels, model.predict(texts))["acc"]
    assert f"k-means in the head's space: ACC {acc:.1f}" in out


def test_config_validation():
    with pytest.raises(ValueError, match="reconstruction_module"):
        DECCRLConfig(reconstruction_module="vae")
    with pytest.raises(ValueError, match="crl_cluster"):
        DECCRLConfig(crl_cluster="mean")
    with pytest.raises(ValueError, match="latent_init"):
        DECCRLConfig(latent_init="svd")
    with pytest.raises(ValueError, match="vocabulary"):
        DECCRLConfig(vocabulary=["a", "a"])
    with pytest.raises(ValueError, match="reconstruction_loss_weight"):
        DECCRLConfig(reconstruction_loss_weight=-1)
    assert DECCRLConfig().crl_cluster == "argmax" and DECCRLConfig().num_topics == 5


def test_topics_before_training_is_a_clear_error(tiny_encoder_dir):
    model = from_encoder_pretrained(DECCRLModel, str(tiny_encoder_dir), num_clusters=3)
    with pytest.raises(RuntimeError, match="never initialised"):
        cluster_topics(model)


# ----- the "w/o CRL w LSR" ablation ----------------------------------------------------------------------------------
def test_latent_reconstruction_loss_is_a_mean_squared_error():
    h, h_hat = torch.tensor([[1.0, 2.0], [0.0, -1.0]]), torch.tensor([[0.0, 2.0], [1.0, 1.0]])
    assert latent_reconstruction_loss(h, h_hat).item() == pytest.approx((1 + 0 + 1 + 4) / 4)


def test_lsr_ablation_replaces_the_topic_model(tiny_encoder_dir, views_dataset, tmp_path):
    trainer = _trainer(
        tiny_encoder_dir, views_dataset, tmp_path, reconstruction_module="lsr", reconstruction_loss_weight=0.5
    )
    model = trainer.model
    assert not hasattr(model, "topic_decoder") and model.latent_autoencoder.encoder[-1].out_features == 4  # L/2
    trainer.initialize_clusters()
    batch = trainer.data_collator([views_dataset[i] for i in range(8)])
    assert "bow" not in batch
    model.eval()
    loss = trainer.compute_loss(model, batch)
    e = [model.encode(batch[f"{p}input_ids"], batch[f"{p}attention_mask"]) for p in ("", "aug1_", "aug2_")]
    h, h1, h2 = (model.fc_e(x) for x in e)
    o = model.cluster_head(h)
    expected = (
        cross_view_contrastive_loss(model.contrast_head(h1), model.contrast_head(h2), 0.5)
        + dec_kl_loss(dec_target_distribution(o), o)
        + 0.5 * ((model.latent_autoencoder(h) - h) ** 2).mean()
    )
    torch.testing.assert_close(loss, expected, rtol=1e-5, atol=1e-5)
    trainer.train()
    assert model.config.vocabulary is None
    with pytest.raises(RuntimeError, match="no topics"):
        cluster_topics(model)
    model.save_pretrained(tmp_path / "lsr")
    loaded = AutoModel.from_pretrained(tmp_path / "lsr")
    assert loaded.config.reconstruction_module == "lsr" and hasattr(loaded, "latent_autoencoder")
    with pytest.raises(ValueError, match="`texts` is required"):
        name_clusters(loaded)
