"""``make demo``: train SCCL briefly on StackOverflow with the pip-shipped MiniLM and show it beside plain k-means."""

from __future__ import annotations

import time
from collections import Counter

import numpy as np

from .data import load_benchmark
from .metrics import clustering_scores

DEMO_DATASET = "stackoverflow"
DEMO_STEPS = 150


def _row(name: str, scores: dict, seconds: float) -> str:
    return f"  {name:<34} ACC {100 * scores['acc']:5.1f}   NMI {100 * scores['nmi']:5.1f}   ARI {100 * scores['ari']:5.1f}   ({seconds:.0f}s)"


def run_demo(data_dir: str | None = None, output_dir: str = "runs/demo-sccl-stackoverflow", max_steps: int | None = None) -> int:
    from sklearn.cluster import KMeans

    from .training import train_clusterer

    dataset = load_benchmark(DEMO_DATASET, data_dir=data_dir)
    texts, labels = dataset["text"], np.asarray(dataset["label"])
    label_names = dataset.features["label"].names
    print(f"Clustering {len(texts):,} StackOverflow question titles into {len(label_names)} clusters (labels only score).\n")

    start = time.perf_counter()
    result = train_clusterer(
        "sccl",
        DEMO_DATASET,
        output_dir,
        data_dir=data_dir,
        recipe="cpu",
        training_overrides={"max_steps": max_steps or DEMO_STEPS, "save_strategy": "no", "logging_steps": 25},
        resume=False,
        evaluate=False,
    )
    model = result.model
    train_seconds = time.perf_counter() - start
    import torch

    start = time.perf_counter()
    embeddings = model.embed(texts, batch_size=128, show_progress_bar=True, autocast_dtype=torch.bfloat16)
    probs = model.cluster_probabilities(torch.from_numpy(embeddings)).detach().numpy()
    head = probs.argmax(-1)
    kmeans_trained = KMeans(len(label_names), n_init=10, random_state=0).fit_predict(embeddings)
    eval_seconds = time.perf_counter() - start

    from .baselines import EmbeddingKMeans

    start = time.perf_counter()
    baseline = EmbeddingKMeans(len(label_names), random_state=0, show_progress_bar=True).fit_predict(texts)
    baseline_seconds = time.perf_counter() - start

    print("\nResults on all texts (higher is better):")
    print(_row("MiniLM embeddings + k-means", clustering_scores(labels, baseline), baseline_seconds))
    print(_row(f"SCCL ({max_steps or DEMO_STEPS} steps): cluster head", clustering_scores(labels, head), train_seconds))
    print(_row("SCCL: k-means on its embeddings", clustering_scores(labels, kmeans_trained), eval_seconds))

    print("\nA few SCCL clusters (the true label most of its texts have, and its three most confident members):")
    for cluster in [c for c, _ in Counter(head.tolist()).most_common()][:5]:
        members = np.flatnonzero(head == cluster)
        majority, count = Counter(labels[members].tolist()).most_common(1)[0]
        print(f"\n  cluster {cluster}: {len(members)} texts, {100 * count / len(members):.0f}% '{label_names[majority]}'")
        for i in members[np.argsort(-probs[members, cluster])[:3]]:
            print(f"    - {texts[i]}")
    print(f"\nThe trained model is in {output_dir}; try:\n  hf-textcluster predict --model {output_dir} --input my_texts.txt")
    return 0
