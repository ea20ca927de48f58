"""``make demo``: train a method briefly on a StackOverflow sample with the pip-shipped MiniLM and show it beside
plain k-means on the same embeddings (the run's own k-means initialisation). Sized to end within 5 minutes on a
2-core CPU without native bf16 (fp32); faster where bf16 is native or on a GPU."""

from __future__ import annotations

import time
from collections import Counter

import numpy as np

from ..data import AUGMENTATION_FAMILIES, load_benchmark
from ..models import get_method
from ..training.metrics import clustering_scores

DEMO_DATASET = "stackoverflow"
DEMO_NUM_TEXTS = 4000
DEMO_STEPS = 60


def _row(name: str, scores: dict, seconds: float | None = None) -> str:
    took = f"   ({seconds:.0f}s)" if seconds is not None else ""
    return (f"  {name:<40} ACC {100 * scores['acc']:5.1f}   NMI {100 * scores['nmi']:5.1f}   "
            f"ARI {100 * scores['ari']:5.1f}{took}")


def run_demo(
    method: str = "sccl",
    data_dir: str | None = None,
    output_dir: str | None = None,
    max_steps: int | None = None,
    num_texts: int | None = None,
    seed: int = 0,
) -> int:
    from sklearn.cluster import KMeans

    from ..training.recipes import load_recipe
    from ..training.runs import train_clusterer

    total_start = time.perf_counter()
    spec = get_method(method)
    steps = max_steps or DEMO_STEPS
    output_dir = output_dir or f"runs/demo-{method}-{DEMO_DATASET}"
    family = load_recipe(method, "cpu", DEMO_DATASET).get("augmentation") if spec.uses_augmented_views else None
    dataset = load_benchmark(DEMO_DATASET, data_dir=data_dir, augmentation=family if family in AUGMENTATION_FAMILIES else None)
    num_texts = min(num_texts or DEMO_NUM_TEXTS, len(dataset))
    dataset = dataset.shuffle(seed=seed).select(range(num_texts))
    texts, labels = list(dataset["text"]), np.asarray(dataset["label"])
    label_names = dataset.features["label"].names
    print(f"Clustering {num_texts:,} StackOverflow question titles (a random sample of the corpus) into "
          f"{len(label_names)} clusters with {spec.display_name}; labels are used only to score.\n")

    start = time.perf_counter()
    result = train_clusterer(
        method, dataset, output_dir, recipe="cpu", seed=seed,
        training_overrides={"max_steps": steps, "save_strategy": "no", "logging_steps": 10},
        resume=False, evaluate=False,
    )
    model, trainer = result.model, result.trainer
    train_seconds = time.perf_counter() - start

    start = time.perf_counter()
    embeddings = model.embed(texts, show_progress_bar=False, precision=trainer.precision)
    import torch

    with torch.no_grad():
        probs = model.cluster_probabilities(torch.from_numpy(embeddings)).numpy()
    head = probs.argmax(-1)
    kmeans_trained = KMeans(len(label_names), n_init=10, random_state=seed).fit_predict(embeddings)
    eval_seconds = time.perf_counter() - start

    print(f"\nResults on the {num_texts:,} texts (higher is better):")
    print(_row("MiniLM embeddings + k-means (before)", clustering_scores(labels, trainer.initial_kmeans_labels)))
    print(_row(f"{spec.display_name} ({steps} steps x {trainer.args.per_device_train_batch_size}): cluster head",
               clustering_scores(labels, head), train_seconds))
    print(_row(f"{spec.display_name}: k-means on its embeddings", clustering_scores(labels, kmeans_trained), eval_seconds))

    print(f"\nA few {spec.display_name} clusters (the true label most of its texts have, and its three most confident "
          "members):")
    for cluster in [c for c, _ in Counter(head.tolist()).most_common()][:5]:
        members = np.flatnonzero(head == cluster)
        majority, count = Counter(labels[members].tolist()).most_common(1)[0]
        print(f"\n  cluster {cluster}: {len(members)} texts, {100 * count / len(members):.0f}% '{label_names[majority]}'")
        for i in members[np.argsort(-probs[members, cluster])[:3]]:
            print(f"    - {texts[i]}")
    print(f"\nPrecision: {trainer.precision_description()}. Demo total: {time.perf_counter() - total_start:.0f}s.")
    print(f"The trained model is in {output_dir}; try:\n  hf-textcluster predict --model {output_dir} --input my_texts.txt")
    return 0
