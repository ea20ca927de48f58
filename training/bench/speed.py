"""Speed ratios measured side by side in one process: a training step against the bare encoder, the pipeline against
SentenceTransformer.encode, inference precisions on a trained model, k-means on fp32 / bf16 embeddings."""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

from hf_textcluster.models.building import from_encoder_pretrained

from .common import cpu_kind, default_data_dir, run_header
from .store import put_row, save_store


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``speed``: the parts and how often each is timed."""
    parser.add_argument("--data-dir", default=default_data_dir())
    parser.add_argument("--speed-repeats", type=int, default=6)
    parser.add_argument("--pipeline-repeats", type=int, default=2)
    parser.add_argument(
        "--device",
        default="cpu",
        help="cpu, or cuda: the pipeline against SentenceTransformer.encode on the GPU (--parts pipeline only).",
    )
    parser.add_argument("--encoder", default=None, help="The encoder folder or Hub id (default: the shipped MiniLM).")
    parser.add_argument(
        "--parts",
        nargs="+",
        default=["steps", "pipeline", "inference", "kmeans"],
        choices=["steps", "pipeline", "inference", "kmeans"],
    )


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def speed_variant(device: str = "cpu", encoder: str | None = None) -> str:
    """Rows measured on a GPU are their own variant (the GPU and a non-default encoder named). Rows measured with
    oneDNN capped (an AVX2-only CPU emulated) are kept apart from native ones, and native rows
    per CPU kind ("": the first kind measured, a Xeon with AMX), so that a run on another kind adds a section
    instead of replacing the rows of the first."""
    if device != "cpu":
        import torch

        from .common import encoder_variant

        name = encoder_variant(encoder)
        return f"GPU {torch.cuda.get_device_name(0)}" + (f", {name}" if name else "")
    isa = os.environ.get("ONEDNN_MAX_CPU_ISA")
    if isa:
        return f"oneDNN capped to {isa}"
    from hf_textcluster.modeling.hardware import cpu_capability

    capability = cpu_capability()
    return "" if cpu_kind(capability) == "bf16 AMX" else f"Native, {capability}"


def run(args, store: dict, run_id: str) -> None:
    """Measure the parts asked for; a re-run replaces the rows of those parts on this CPU kind."""
    import torch

    import hf_textcluster  # noqa: F401
    from hf_textcluster import SCCLModel
    from hf_textcluster.editing.clusters import init_clusters_from_kmeans
    from hf_textcluster.modeling.precision import native_bf16, resolve_precision

    from .precomputed import load_with_views

    parts = set(args.parts)
    if args.device != "cpu" and parts != {"pipeline"}:
        raise SystemExit("error: --device cuda measures the pipeline only: add --parts pipeline.")
    variant = speed_variant(args.device, args.encoder)
    emulated = not native_bf16("cpu")  # bf16 emulated (~30x slower per step): timed less, skipped where redundant
    auto = resolve_precision("auto", args.device)
    dataset = load_with_views("stackoverflow", "sccl_contextual", data_dir=args.data_dir)
    texts, labels = list(dataset["text"]), dataset["label"]
    model = from_encoder_pretrained(SCCLModel, args.encoder, num_clusters=20)
    # seeded random centroids: every part times the model's passes, not its clusters
    init_clusters_from_kmeans(
        model, torch.randn(20, model.config.encoder.hidden_size, generator=torch.Generator().manual_seed(0))
    )
    rows = [
        {
            "part": "precision",
            "measure": "precision chosen by `auto` on this CPU",
            "value": auto,
            "detail": f"native bf16: {native_bf16(args.device)}",
        }
    ]

    # (1) a training step vs the bare encoder's forward + backward on the same three views, per precision / padding.
    step_rows = _speed_steps(args, dataset, model, emulated) if "steps" in parts else []
    rows += [{"part": "steps", **row} for row in step_rows]

    # (2) pipeline("text-clustering") vs SentenceTransformer.encode on the same 20,000 texts, same batch (128):
    # both in fp32, and the pipeline at its default (auto) precision.
    if "pipeline" in parts:
        rows += [{"part": "pipeline", **row} for row in _speed_pipeline(args, texts, model, auto)]

    # (3) inference paths on a trained model (an SCCL run of 60 steps x 64 on 4,000 titles, fp32 training):
    # throughput on all 20,000 texts and how the head's clusters change.
    if "inference" in parts:
        rows += [{"part": "inference", **row} for row in _speed_inference(dataset, texts, labels, emulated)]

    # (4) k-means on the encoder's embeddings computed in fp32 vs under bf16 autocast (skipped when emulated).
    if "kmeans" in parts:
        rows += [{"part": "kmeans", **row} for row in _speed_kmeans(texts, labels, emulated)]
    offsets = {"precision": 0, "steps": 10, "pipeline": 40, "inference": 50, "kmeans": 60}
    counts: dict[str, int] = {}
    for row in rows:
        part = row.pop("part")
        seed = offsets[part] + counts.get(part, 0)
        counts[part] = counts.get(part, 0) + 1
        put_row(
            store,
            {
                "section": "speed",
                "method": "sccl",
                "dataset": "stackoverflow",
                "seed": seed,
                "run": run_id,
                "variant": variant,
                "part": part,
                **row,
            },
        )
        print(f"{row['measure']}: {row['value']} ({row['detail']})", flush=True)
    # a re-run replaces the rows of the parts it measured
    store["rows"] = [
        r
        for r in store["rows"]
        if not (
            r["section"] == "speed"
            and r.get("variant", "") == variant
            and r["run"] != run_id
            and r.get("part", "steps") in counts
        )
    ]
    save_store(store)


def _speed_steps(args, dataset, model, emulated) -> list[dict]:
    import torch

    from hf_textcluster import SCCLTrainer
    from hf_textcluster.training.arguments import ClusteringTrainingArguments
    from hf_textcluster.training.collator import TextViewsCollator

    rows = []
    trainer = SCCLTrainer(
        model=model,
        args=ClusteringTrainingArguments(output_dir=tempfile.mkdtemp(), report_to="none", bf16=False),
        train_dataset=dataset,
    )
    batches = {}
    rng = np.random.default_rng(0)
    indices = [rng.choice(len(dataset), 64, replace=False).tolist() for _ in range(args.speed_repeats)]
    for pad in (False, True):
        collator = TextViewsCollator(model.tokenizer, 32, SCCLTrainer.views, pad_to_max_length=pad)
        batches[pad] = [collator([dataset[i] for i in idx]) for idx in indices]

    def bare_step(batch, dtype):
        with torch.autocast("cpu", dtype=dtype, enabled=dtype is not None):
            ids = torch.cat([batch[f"{p}input_ids"] for p in ("", "aug1_", "aug2_")])
            mask = torch.cat([batch[f"{p}attention_mask"] for p in ("", "aug1_", "aug2_")])
            loss = model.encoder(input_ids=ids, attention_mask=mask).last_hidden_state.float().mean()
        loss.backward()
        model.zero_grad(set_to_none=True)

    def sccl_step(batch, dtype):
        with torch.autocast("cpu", dtype=dtype, enabled=dtype is not None):
            loss = trainer.compute_loss(model, batch)
        loss.backward()
        model.zero_grad(set_to_none=True)

    model.train()
    timings = {}
    # Emulated bf16 is ~30x slower per step: there it is timed once, with dynamic padding only.
    settings = [("fp32", None, pad) for pad in (False, True)]
    settings += [("bf16", torch.bfloat16, pad) for pad in ((False,) if emulated else (False, True))]
    for dtype_name, dtype, pad in settings:
        timed = batches[pad][1:2] if (emulated and dtype is not None) else batches[pad][1:]
        for kind, step in (("bare", bare_step), ("sccl", sccl_step)):
            step(batches[pad][0], dtype)  # warm-up
            timings[(dtype_name, pad, kind)] = statistics.median(
                median_time(lambda b=b, step=step, dtype=dtype: step(b, dtype), 1) for b in timed
            )
    for dtype_name, _, pad in settings:
        ratio = timings[(dtype_name, pad, "sccl")] / timings[(dtype_name, pad, "bare")]
        rows.append(
            {
                "measure": f"SCCL step / bare encoder fwd+bwd, 3 views x 64, {dtype_name}, "
                f"{'pad to 32' if pad else 'dynamic padding'}",
                "value": round(ratio, 3),
                "detail": f"{timings[(dtype_name, pad, 'sccl')]:.2f}s vs {timings[(dtype_name, pad, 'bare')]:.2f}s",
            }
        )
    base = timings[("fp32", True, "sccl")]
    for dtype_name, _, pad in settings:
        rows.append(
            {
                "measure": f"SCCL step speed-up vs fp32 + pad to 32: {dtype_name}, "
                f"{'pad to 32' if pad else 'dynamic padding'}",
                "value": round(base / timings[(dtype_name, pad, "sccl")], 2),
                "detail": f"{timings[(dtype_name, pad, 'sccl')]:.2f}s per step",
            }
        )

    return rows


def _speed_pipeline(args, texts, model, auto) -> list[dict]:

    from sentence_transformers import SentenceTransformer
    from transformers import pipeline

    from hf_textcluster.encoders import resolve_encoder

    rows = []
    model.eval()
    with tempfile.TemporaryDirectory() as model_dir:
        model.save_pretrained(model_dir)
        encoder = SentenceTransformer(resolve_encoder(args.encoder).name_or_path, device=args.device)
        encoder.max_seq_length = 32
        clusterers = {}
        for precision in ("fp32", "auto"):
            clusterers[precision] = pipeline(
                "text-clustering", model=model_dir, device=args.device, precision=precision
            )
        encoder.encode(texts[:256], batch_size=128)
        times = {"st": [], "fp32": [], "auto": []}
        for _ in range(args.pipeline_repeats):
            start = time.perf_counter()
            encoder.encode(texts, batch_size=128)
            times["st"].append(time.perf_counter() - start)
            for precision, clusterer in clusterers.items():
                clusterer(texts[:256], batch_size=128)  # warm-up
                start = time.perf_counter()
                clusterer(texts, batch_size=128)
                times[precision].append(time.perf_counter() - start)
        st = min(times["st"])
        for precision in ("fp32", "auto"):
            pipe = min(times[precision])
            rows.append(
                {
                    "measure": f"pipeline('text-clustering') throughput / SentenceTransformer.encode (fp32), "
                    f"20,000 texts, batch 128, pipeline {precision}" + (f" (= {auto})" if precision == "auto" else ""),
                    "value": round(st / pipe, 3),
                    "detail": f"{len(texts) / pipe:.0f} vs {len(texts) / st:.0f} texts/s (best of "
                    f"{args.pipeline_repeats})",
                }
            )

    return rows


# The SCCL run predict is timed on ("demo run" in the measures' names): texts of StackOverflow and steps of 64.
INFERENCE_RUN_SIZE = (4000, 60)


def _speed_inference(dataset, texts, labels, emulated) -> list[dict]:
    from hf_textcluster.evaluation.metrics import clustering_scores
    from hf_textcluster.runs.api import train_clusterer

    rows = []
    num_texts, steps = INFERENCE_RUN_SIZE
    sample = dataset.shuffle(seed=0).select(range(num_texts))
    with tempfile.TemporaryDirectory() as run_dir:
        trained = train_clusterer(
            "sccl",
            sample,
            run_dir,
            recipe="cpu",
            resume=False,
            evaluate=False,
            save=False,
            training_overrides={"max_steps": steps, "save_strategy": "no", "disable_tqdm": True, "bf16": False},
        ).model.eval()
    # predict's own precisions; the int8 one quantizes in its warm-up call (the quantized copy is cached)
    paths = [("fp32", "fp32"), ("int8 dynamic quantization of the encoder's Linear layers", "int8")]
    if not emulated:
        paths.insert(1, ("bf16 autocast", "bf16"))
    reference = None
    for name, precision in paths:
        trained.predict(texts[:256], precision=precision)  # warm-up
        start = time.perf_counter()
        predictions = trained.predict(texts, precision=precision)
        seconds = time.perf_counter() - start
        scores = clustering_scores(labels, predictions)
        if reference is None:
            reference = (predictions, seconds, scores)
        rows.append(
            {
                "measure": f"predict on a trained SCCL model (demo run), {name}: speed-up vs fp32 / head ACC change",
                "value": f"{reference[1] / seconds:.2f}x / {100 * (scores['acc'] - reference[2]['acc']):+.2f}",
                "detail": f"{len(texts) / seconds:.0f} texts/s, head ACC {100 * scores['acc']:.1f}, "
                f"{100 * (predictions == reference[0]).mean():.1f}% of texts in the fp32 cluster",
            }
        )
    # int8 scales activations per batch: how often does a text's cluster depend on its batch companions?
    sample_texts = texts[:2000]
    for precision in ("fp32", "int8"):
        alone = trained.predict(sample_texts, batch_size=1, precision=precision)
        together = trained.predict(sample_texts, precision=precision)
        rows.append(
            {
                "measure": f"predict at {precision}: texts whose cluster differs between batch 1 and batch 128",
                "value": f"{100 * (alone != together).mean():.2f}%",
                "detail": "first 2,000 texts of stackoverflow, the same trained SCCL model",
            }
        )

    return rows


def _speed_kmeans(texts, labels, emulated) -> list[dict]:
    from hf_textcluster import SCCLModel
    from hf_textcluster.evaluation.metrics import clustering_scores

    rows = []
    from sklearn.cluster import KMeans

    fresh = from_encoder_pretrained(SCCLModel, None, num_clusters=20)
    for dtype_name in ("fp32",) if emulated else ("fp32", "bf16"):
        start = time.perf_counter()
        emb = fresh.embed(texts, precision=dtype_name)
        seconds = time.perf_counter() - start
        scores = clustering_scores(labels, KMeans(20, n_init=10, random_state=0).fit_predict(emb))
        rows.append(
            {
                "measure": f"k-means on MiniLM embeddings of stackoverflow, inference in {dtype_name}: ACC / NMI",
                "value": f"{100 * scores['acc']:.1f} / {100 * scores['nmi']:.1f}",
                "detail": f"embedding 20,000 texts took {seconds:.1f}s",
            }
        )
    return rows


def render(store: dict, rows: list[dict]) -> list[str]:
    """One table per CPU kind (native, or oneDNN capped)."""
    out = []
    speed_rows = rows
    if speed_rows:
        out += [
            "## Speed (ratios measured side by side in one process)",
            "",
            "The machine line names the CPU and its vector capability. *oneDNN capped to AVX2*: the same CPU run with",
            "`ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2`, which emulates a CPU without native bf16 (bf16 "
            "becomes",
            "as slow as on an AVX2-only EPYC); `auto` then chooses fp32.",
            "",
        ]
        for variant in sorted({r.get("variant", "") for r in speed_rows}):
            vrows = sorted([r for r in speed_rows if r.get("variant", "") == variant], key=lambda r: r["seed"])
            out += [f"### {variant or 'Native, AVX512 + AVX512-BF16 + AMX'}", ""] + run_header(store, vrows) + [""]
            out += ["| measure | value | detail |", "|---|---|---|"]
            out += [f"| {r['measure']} | {r['value']} | {r['detail']} |" for r in vrows]
            out.append("")
    return out
