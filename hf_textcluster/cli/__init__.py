"""``hf-textcluster``: train | predict | calibrate | recluster | plot | evaluate | demo | push | card.

Every command that reads a benchmark takes ``--data-dir`` (default: ``$HF_TEXTCLUSTER_DATA_DIR``, else the corpora's
public download URLs). ``train`` passes any ``TrainingArguments`` flag through (``--max_steps 100``,
``--per_device_train_batch_size 32``, ...).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

DEMO_DATASET = "stackoverflow"


def _add_data_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        default=os.environ.get("HF_TEXTCLUSTER_DATA_DIR"),
        help="Folder with <dataset>.csv (default: $HF_TEXTCLUSTER_DATA_DIR; otherwise the public sources).",
    )


def _format_scores(metrics: dict, keys=("acc", "nmi", "ari")) -> str:
    return "  ".join(f"{k.upper()} {100 * metrics[k]:.1f}" for k in keys if k in metrics)


def _parse_pass_through(pairs: list[str]) -> dict:
    """``--max_steps 10 --bf16`` style TrainingArguments flags, parsed by HfArgumentParser into typed values."""
    from transformers import HfArgumentParser

    from ..training.trainer import ClusteringTrainingArguments

    if not pairs:
        return {}
    # `--bf16` alone means True, as for the other boolean flags (its default is None: chosen by the hardware)
    pairs = [p for i, arg in enumerate(pairs)
             for p in ([arg, "True"] if arg == "--bf16" and (i + 1 == len(pairs) or pairs[i + 1].startswith("--"))
                       else [arg])]
    parser = HfArgumentParser(ClusteringTrainingArguments)
    (parsed,) = parser.parse_args_into_dataclasses(args=["--output_dir", "unused", *pairs])
    given = {arg.lstrip("-").split("=")[0].replace("-", "_") for arg in pairs if arg.startswith("--")}
    return {name: getattr(parsed, name) for name in given if hasattr(parsed, name)}


def cmd_train(args, extra: list[str]) -> int:
    from ..models import get_method
    from ..training.runs import train_clusterer

    if args.dataset and args.input:
        raise ValueError("Pass either --dataset (a benchmark) or --input (your file), not both.")
    overrides = _parse_pass_through(extra)
    config_overrides = {}
    for item in args.config or []:
        key, _, value = item.partition("=")
        config_overrides[key] = json.loads(value) if value[:1] in "0123456789-[{tfn" else value
    result = train_clusterer(
        args.method,
        args.dataset if args.dataset else _user_dataset(args),
        args.output_dir,
        encoder=args.encoder,
        recipe=args.recipe,
        augmentation=args.augmentation,
        num_clusters=args.num_clusters,
        k_range=args.k_range,
        k_criterion=args.k_criterion,
        data_dir=args.data_dir,
        seed=args.seed,
        config_overrides=config_overrides,
        training_overrides=overrides,
        resume=not args.no_resume,
        test_size=args.test_size,
        input_file=_input_source(args),
    )
    m = result.metrics
    if not result.trainer.is_world_process_zero():  # under several processes, the main one reports
        return 0
    print(f"\nSaved {get_method(args.method).display_name} to {result.output_dir} (trained {result.train_seconds:.0f}s, "
          f"precision {result.trainer.precision_description()})")
    if result.k_selection is not None:
        print(_describe_k_selection(result.k_selection))
    if result.test_dataset is not None:
        print(f"Scored on the {len(result.test_dataset)} held-out texts (never trained on).")
    if "eval_acc" in m:
        if args.label_column:
            print(f"Scores against the labels of column {args.label_column!r} (used only for scoring, never trained on):")
        scores = {k[5:]: v for k, v in m.items() if k.startswith("eval_")}
        print(f"cluster head         : {_format_scores(scores)}")
        print(f"k-means on embeddings: {_format_scores({k[7:]: v for k, v in scores.items() if k.startswith('kmeans_')})}")
        _print_latent_kmeans(scores)
    return 0


def _print_latent_kmeans(metrics: dict) -> None:
    """A head in a space of its own (DEC-CRL's FC_e, AECL's projector): k-means there, what DEC-CRL's recluster serves."""
    if "latent_kmeans_acc" in metrics:
        scores = {k[len("latent_kmeans_"):]: v for k, v in metrics.items() if k.startswith("latent_kmeans_")}
        print(f"k-means in the head's space: {_format_scores(scores)}")


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {value!r}")
    return number


def _num_clusters_or_auto(value: str) -> int | str:
    """``--num-clusters``: a whole number, or ``auto`` (chosen from the embeddings, see ``--k-range``)."""
    if value.strip().lower() == "auto":
        return "auto"
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of clusters (20) or 'auto', got {value!r}")


def _k_range(value: str) -> tuple[int | None, int | None]:
    """``--k-range 2:60`` -> (2, 60); either side may be left out (``:60``, ``5:``) for its default."""
    low, sep, high = value.partition(":")
    try:
        if not sep:
            raise ValueError
        return (int(low) if low.strip() else None, int(high) if high.strip() else None)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected K_MIN:K_MAX, e.g. 2:60 (or :60, 5:), got {value!r}")


def _describe_k_selection(selection: dict) -> str:
    k_min, k_max = selection["k_range"]
    return (f"K = {selection['num_clusters']}, chosen without labels by {selection['criterion']} among K in "
            f"{k_min}..{k_max} ({selection['sample_size']:,} of {selection['num_texts']:,} texts, "
            f"{selection['seconds']:.1f}s)")


def _add_model_input_args(parser, model_help: str) -> None:
    """A trained model applied to a file of texts: predict, calibrate, recluster and plot."""
    from ..modeling.modeling_utils import DEFAULT_ENCODE_BATCH_SIZE

    parser.add_argument("--model", required=True, help=model_help)
    parser.add_argument("--input", required=True, help="Texts: .txt (one per line), csv, jsonl or parquet.")
    parser.add_argument("--text-column", default="text")
    parser.add_argument("--batch-size", type=_positive_int, default=DEFAULT_ENCODE_BATCH_SIZE)


def _add_k_selection_args(parser: argparse.ArgumentParser) -> None:
    from ..training.auto_k import CRITERIA, DEFAULT_CRITERION

    parser.add_argument("--k-range", type=_k_range, metavar="K_MIN:K_MAX",
                        help="With --num-clusters auto: the range searched (default 2:min(200, 3 sqrt(N))).")
    parser.add_argument("--k-criterion", choices=CRITERIA,
                        help=f"With --num-clusters auto: how K is chosen (default: {DEFAULT_CRITERION}).")


def _positive_int_or_auto(value: str) -> int | str:
    return "auto" if value.strip().lower() == "auto" else _positive_int(value)


def _count_or_fraction(value: str) -> int | float:
    try:
        return float(value) if "." in value else int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of texts (1600) or a fraction (0.2), got {value!r}")


def _user_dataset(args):
    from ..data import load_text_file

    if not args.input:
        raise SystemExit("error: pass --dataset <benchmark> or --input <file> (csv/jsonl/parquet/txt).")
    if args.num_clusters is None and not args.label_column:
        raise SystemExit("error: --num-clusters is required when training on your own file (without --label-column): "
                         "a number, or 'auto' to choose it from the embeddings.")
    return load_text_file(args.input, text_column=args.text_column, label_column=args.label_column)


def _input_source(args) -> dict | None:
    """Where a run's texts came from, for ``training_run.json`` (the card reads its cluster keywords from the file)."""
    if not args.input:
        return None
    return {"path": os.path.abspath(args.input), "text_column": args.text_column, "label_column": args.label_column}


def cmd_predict(args, extra) -> int:
    from transformers import AutoModel, pipeline

    import hf_textcluster  # noqa: F401

    from ..apps.streaming import check_output, predict_file
    from ..modeling.modeling_utils import TextClusteringPreTrainedModel
    from ..modeling.validation import check_local_path

    check_local_path(args.model, "--model")
    if args.output:
        check_output(args.input, args.output)
    model = AutoModel.from_pretrained(args.model)  # loaded here: its errors are one clear line, not the pipeline's
    if not isinstance(model, TextClusteringPreTrainedModel):
        raise ValueError(f"--model {args.model} is a {type(model).__name__} (model_type {model.config.model_type!r}), "
                         "not an hf_textcluster clusterer: train one with `hf-textcluster train`.")
    clusterer = pipeline("text-clustering", model=model, tokenizer=model.tokenizer, device=args.device)
    options = {"batch_size": args.batch_size, **({"top_k": args.top_k} if args.top_k else {})}
    if args.flag_outliers:
        options["flag_outliers"] = True
    if args.outlier_quantile is not None:
        options["outlier_quantile"] = args.outlier_quantile
    if args.precision != "auto":  # only then: part of the options a half-written --output is resumed with
        options["precision"] = args.precision
    try:
        stats = predict_file(clusterer, args.input, args.output, text_column=args.text_column,
                             chunk_size=args.chunk_size, overwrite=args.overwrite, **options)
    except ValueError as err:  # the pipeline names its Python options; say the flags
        message = str(err).replace("`flag_outliers=True`", "--flag-outliers")
        raise ValueError(message.replace("`flag_outliers`", "--flag-outliers").replace(
            "`outlier_quantile`", "--outlier-quantile").replace("`top_k`", "--top-k")) from err
    if args.output:
        print(f"{stats['texts']:,} texts -> {args.output} ({stats['texts_per_second']} texts/s"
              f"{', resumed after %s' % format(stats['resumed_after'], ',') if stats['resumed_after'] else ''}).",
              file=sys.stderr)
    return 0


def _update_saved_model(args, command: str, update) -> tuple:
    """Load ``--model``, ``update(model, texts)`` with the texts of ``--input``, save it (in place unless
    ``--output-dir``; nothing on disk changes before the update has finished): (model, seconds, output folder)."""
    from ..data import load_text_file
    from ..hub.model_card import load_clusterer
    from ..modeling.validation import check_local_path

    check_local_path(args.model, "--model")
    output_dir = args.output_dir or args.model
    if not os.path.isdir(args.model) and not args.output_dir:
        raise ValueError(f"--model {args.model} is not a local folder: {command} saves the model back, so pass "
                         "--output-dir <folder> for a Hub model.")
    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
        raise ValueError(f"--output-dir {output_dir} is a file, not a folder.")
    texts = list(load_text_file(args.input, text_column=args.text_column)["text"])
    model = load_clusterer(args.model)
    start = time.perf_counter()
    update(model, texts)
    seconds = time.perf_counter() - start
    # A folder that ships remote code keeps it: its config.json's auto_map would otherwise be dropped on saving.
    config_file = os.path.join(args.model, "config.json")
    remote_code = None
    if os.path.isfile(config_file):
        with open(config_file, encoding="utf-8") as f:
            remote_code = "auto_map" in json.load(f) or None
    model.save_pretrained(output_dir, remote_code=remote_code)
    return model, seconds, output_dir


def _calibrate(model, texts, args) -> None:
    model.calibrate(texts, sample_size=args.sample_size, random_state=args.seed, batch_size=args.batch_size,
                    show_progress_bar=True)


def cmd_calibrate(args, extra) -> int:
    """Calibrate a trained model's confidence and outlier distances on ``--input`` and save it (in place by default):
    models trained before calibration existed get it without retraining."""
    model, seconds, output_dir = _update_saved_model(args, "calibrate", lambda m, texts: _calibrate(m, texts, args))
    print(f"Calibrated {args.model} on {model.config.num_calibration_texts:,} texts of {args.input} in {seconds:.1f}s; "
          f"saved to {output_dir}. `predict` now gives each text a confidence, and --flag-outliers works.")
    return 0


def cmd_recluster(args, extra) -> int:
    """Re-fit a trained model's clusters by k-means on its own (trained) embeddings of ``--input``, calibrate them and
    save: ``predict`` then gives each text its nearest k-means centre (the benchmark's "k-means after" column)."""
    def update(model, texts):
        model.initialize_clusters(texts, random_state=args.seed, batch_size=args.batch_size, show_progress_bar=True,
                                  kmeans_init=args.kmeans_init)
        _calibrate(model, texts, args)

    model, seconds, output_dir = _update_saved_model(args, "recluster", update)
    print(f"Re-clustered {args.model} by k-means (K = {model.config.num_clusters}) on its embeddings of the "
          f"{args.input} texts and calibrated it in {seconds:.1f}s; saved to {output_dir}.")
    return 0


def cmd_plot(args, extra) -> int:
    from ..apps.plotting import check_image_path, is_placeholder_names, plot_clustering_overview, sample_indices
    from ..data import load_text_file
    from ..hub.model_card import load_clusterer
    from ..modeling.validation import check_local_path

    check_image_path(args.output)  # before any work: matplotlib missing, an unknown format or no such folder
    if args.method == "umap":
        try:
            import umap  # noqa: F401
        except ImportError as err:
            raise ImportError('--method umap needs umap-learn: pip install "hf_textcluster[plot]" (or pass '
                              "--method tsne).") from err
    check_local_path(args.model, "--model")
    if os.path.abspath(args.output) == os.path.abspath(args.input):
        raise ValueError(f"--output {args.output} is the --input file: it would replace your texts. Write elsewhere.")
    dataset = load_text_file(args.input, text_column=args.text_column, label_column=args.label_column)
    texts = list(dataset["text"])
    if len(texts) < 4:
        raise ValueError(f"{args.input} holds {len(texts)} text(s): a map needs at least 4.")
    model = load_clusterer(args.model)
    # every text's cluster for the sizes; the map shows a seeded sample of them
    clusters = model.predict(texts, batch_size=args.batch_size)
    rows = sample_indices(len(texts), args.sample_size, args.seed)
    embeddings = model.embed([texts[i] for i in rows], batch_size=args.batch_size)
    labels = label_names = None
    if args.label_column:
        all_labels = dataset["label"]
        labels = [all_labels[int(i)] for i in rows]
        label_names = dataset.features["label"].names
    names = None if is_placeholder_names(model.config.id2label) else model.config.id2label
    k = model.config.num_clusters
    shown = f"{len(rows):,} of {len(texts):,}" if len(rows) < len(texts) else f"{len(texts):,}"
    plot_clustering_overview(
        embeddings, clusters[rows], labels, num_clusters=k, cluster_names=names, label_names=label_names,
        all_clusters=clusters, method=args.method, random_state=args.seed, path=args.output,
        title=f"{os.path.basename(os.path.normpath(args.model))} on {os.path.basename(args.input)}: {shown} texts mapped",
    )
    used = len(set(clusters.tolist()))
    print(f"Wrote {args.output}: {args.method} map of {shown} texts coloured by cluster"
          f"{' and by ' + repr(args.label_column) if args.label_column else ''}, and the sizes of the {k} clusters "
          f"({used} used).")
    return 0


def _evaluation_dataset(args):
    """The labelled texts to score on: a benchmark (``--dataset``) or the user's file (``--input`` + ``--label-column``)."""
    from ..data import load_benchmark, load_text_file

    if bool(args.dataset) == bool(args.input):
        raise ValueError("Pass exactly one of --dataset <benchmark> or --input <your labelled file> (csv / jsonl / "
                         "parquet), " + ("not both." if args.dataset else "to say which texts to score on."))
    if args.dataset:
        if args.label_column or args.text_column:
            raise ValueError("--text-column / --label-column apply to --input (your file), not to --dataset.")
        return load_benchmark(args.dataset, data_dir=args.data_dir), args.dataset
    if not args.label_column:
        raise ValueError(f"evaluate --input needs --label-column <the column of {args.input} with the known classes>: "
                         "ACC / NMI compare the clusters with those labels (to cluster unlabelled texts, use predict).")
    dataset = load_text_file(args.input, text_column=args.text_column or "text", label_column=args.label_column)
    return dataset, args.input


def cmd_evaluate(args, extra) -> int:
    from ..training.baselines import BASELINES, make_baseline
    from ..training.metrics import clustering_scores

    if not args.model and args.method not in BASELINES:  # before reading any data
        raise ValueError(f"--method must be one of {', '.join(BASELINES)} (or pass --model <dir>), got {args.method!r}.")
    auto = args.num_clusters == "auto"
    if auto and (args.model or args.method != "embeddings-kmeans"):
        raise ValueError("--num-clusters auto chooses K from encoder embeddings: it works with --method "
                         "embeddings-kmeans" + (" (a trained model's K is fixed: drop --num-clusters)." if args.model
                                                else f", not {args.method}."))
    if not auto and (args.k_range or args.k_criterion):
        raise ValueError("--k-range / --k-criterion apply to --num-clusters auto.")
    dataset, source = _evaluation_dataset(args)
    texts, labels = dataset["text"], dataset["label"]
    num_classes = dataset.features["label"].num_classes
    num_clusters = args.num_clusters or num_classes
    start = time.perf_counter()
    if args.model:
        from ..hub.model_card import load_clusterer
        from ..modeling.validation import check_local_path
        from ..training.trainer import evaluate_clusterer

        check_local_path(args.model, "--model")
        model = load_clusterer(args.model)
        if args.num_clusters and args.num_clusters != model.config.num_clusters:
            raise ValueError(f"--num-clusters {args.num_clusters}: the model {args.model} has "
                             f"{model.config.num_clusters} clusters (fixed when it was trained); drop --num-clusters.")
        num_clusters = model.config.num_clusters
        metrics = evaluate_clusterer(model, texts, labels, random_state=args.seed, show_progress_bar=True)
        name = args.model
    else:
        kwargs = {"encoder": args.encoder} if args.method == "embeddings-kmeans" and args.encoder else {}
        if auto:
            kwargs.update(k_range=args.k_range, k_criterion=args.k_criterion)
        baseline = make_baseline(args.method, num_clusters, random_state=args.seed, **kwargs)
        predictions = baseline.fit_predict(texts)
        metrics = clustering_scores(labels, predictions)
        name = args.method
        if auto:
            num_clusters = baseline.auto_k_.num_clusters
    seconds = time.perf_counter() - start
    print(f"{name} on {source} (N={len(texts)}, K={num_clusters}, {num_classes} classes, seed={args.seed})")
    if auto:
        print(_describe_k_selection(baseline.auto_k_.to_dict()) + f"; the labels have {num_classes} classes")
    print(f"{_format_scores(metrics, ('acc', 'nmi', 'ari', 'purity'))}  time {seconds:.1f}s")
    if "kmeans_acc" in metrics:
        print(f"k-means on embeddings: {_format_scores({k[7:]: v for k, v in metrics.items() if k.startswith('kmeans_')})}")
        _print_latent_kmeans(metrics)
    return 0


def cmd_demo(args, extra) -> int:
    from ..apps.demo import run_demo

    return run_demo(
        method=args.method, data_dir=args.data_dir, output_dir=args.output_dir, max_steps=args.max_steps,
        num_texts=args.num_texts,
    )


def _card_kwargs(args) -> dict:
    kwargs = {"license": args.license}
    if args.dataset_name:
        kwargs["dataset_name"] = args.dataset_name
    if args.base_model:
        kwargs["base_model"] = args.base_model
    return kwargs


def cmd_push(args, extra) -> int:
    from huggingface_hub.errors import HfHubHTTPError

    from ..hub.push import push_model_dir

    try:
        commit = _push(args, push_model_dir)
    except (RuntimeError, OSError, HfHubHTTPError) as err:  # untrained model, Hub unreachable, rejected upload
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"Pushed {args.model_dir} to {args.repo_id}: {commit.commit_url}")
    return 0


def _push(args, push_model_dir):
    return push_model_dir(
        args.model_dir,
        args.repo_id,
        data_dir=args.data_dir,
        max_texts=args.max_texts,
        label_clusters=args.label_clusters,
        model_card=not args.no_card,
        remote_code=not args.no_remote_code,
        private=args.private or None,
        token=args.token,
        revision=args.revision,
        create_pr=args.create_pr,
        commit_message=args.commit_message,
        **_card_kwargs(args),
    )


def cmd_card(args, extra) -> int:
    from ..hub.model_card import write_model_card

    card = write_model_card(
        args.model_dir, args.output or "-", data_dir=args.data_dir, max_texts=args.max_texts,
        repo_id=args.repo_id, remote_code=not args.no_remote_code, **_card_kwargs(args),
    )
    if not args.output:
        sys.stdout.write(card)
    return 0


def _add_card_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--license", default="apache-2.0", help="Card license (default: apache-2.0).")
    parser.add_argument("--dataset-name", help="Card dataset (default: the run's benchmark).")
    parser.add_argument("--base-model", help="Card base_model hub id (default: the run's encoder when on the Hub).")
    parser.add_argument("--max-texts", type=int, default=5000, help="Training texts sampled for cluster keywords.")
    parser.add_argument("--no-remote-code", action="store_true", help="Do not ship the inference code for trust_remote_code.")
    _add_data_args(parser)


def build_parser() -> argparse.ArgumentParser:
    from ..apps.streaming import DEFAULT_CHUNK_SIZE
    from ..modeling.modeling_utils import DEFAULT_ENCODE_BATCH_SIZE
    from ..modeling.precision import INFERENCE_PRECISIONS
    from ..models import METHODS
    from ..training.runs import AUGMENTATIONS

    parser = argparse.ArgumentParser(prog="hf-textcluster", description=__doc__.split("\n")[0])
    parser.add_argument("--debug", action="store_true", help="Show the full traceback of an error.")
    sub = parser.add_subparsers(dest="command", required=True)

    train = sub.add_parser("train", help="Train a clusterer (extra --flags go to TrainingArguments).")
    train.add_argument("--method", required=True, choices=sorted(METHODS))
    train.add_argument("--dataset", help="A benchmark corpus name (or use --input).")
    train.add_argument("--input", help="Your own texts: csv / jsonl / parquet / txt.")
    train.add_argument("--text-column", default="text")
    train.add_argument("--label-column", help="Known classes of your file: only scored against (ACC / NMI), never "
                                              "trained on.")
    train.add_argument("--output-dir", required=True)
    train.add_argument("--encoder", help="Hub id or local path (default: the pip-shipped all-MiniLM-L6-v2).")
    train.add_argument("--recipe", default="cpu", help="Recipe variant: 'cpu' (default) or 'paper'.")
    train.add_argument("--augmentation", default="recipe", choices=["recipe", *AUGMENTATIONS])
    train.add_argument("--num-clusters", type=_num_clusters_or_auto, metavar="K|auto",
                       help="K, or 'auto' to choose it from the embeddings of the training texts (see --k-range); "
                            "default with --label-column: the number of classes.")
    _add_k_selection_args(train)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--config", action="append", metavar="KEY=VALUE", help="Model config override, e.g. eta=5.")
    train.add_argument("--no-resume", action="store_true", help="Ignore checkpoints already in --output-dir.")
    train.add_argument("--test-size", type=_count_or_fraction, metavar="N|F",
                       help="Hold out N texts (or a fraction F < 1), stratified by label; evaluate on them only.")
    _add_data_args(train)
    train.set_defaults(func=cmd_train)

    predict = sub.add_parser("predict", help="Cluster texts with a trained model (JSON lines out).")
    _add_model_input_args(predict, "A trained model directory or hub id.")
    predict.add_argument("--output", help="Write JSON lines here instead of stdout.")
    predict.add_argument("--top-k", type=_positive_int, help="Also return the K most likely clusters per text.")
    predict.add_argument("--device", default="cpu")
    predict.add_argument("--chunk-size", type=_positive_int, default=DEFAULT_CHUNK_SIZE,
                         help="Texts read, clustered and written at a time (memory holds one chunk).")
    predict.add_argument("--overwrite", action="store_true",
                         help="Replace an existing --output (by default a half-written one is resumed, a finished "
                              "one is kept).")
    predict.add_argument("--flag-outliers", action="store_true",
                         help="Give a text farther from its cluster's centre than --outlier-quantile of that cluster's "
                              "training texts cluster -1 ('outlier') and its nearest cluster (a calibrated model).")
    predict.add_argument("--outlier-quantile", type=float, metavar="Q",
                         help="With --flag-outliers: the share of each cluster's training texts that are not outliers "
                              "(default 0.99).")
    predict.add_argument("--precision", choices=INFERENCE_PRECISIONS, default="auto",
                         help="The encoder's precision: auto (bf16 where the CPU runs it natively, else fp32), or int8 "
                              "(dynamic quantization, CPU: faster on every CPU kind measured, ~96%% of texts in the "
                              "fp32 cluster).")
    predict.set_defaults(func=cmd_predict)

    calibrate = sub.add_parser("calibrate", help="Calibrate a trained model's confidence and outlier distances on "
                                                 "your texts (its training texts) and save it.")
    recluster = sub.add_parser("recluster", help="Re-fit a trained model's clusters by k-means on its trained "
                                                 "embeddings of your texts (its training texts), calibrate and save "
                                                 "it: the benchmark's 'k-means after' as the served model.")
    for command, func in ((calibrate, cmd_calibrate), (recluster, cmd_recluster)):
        _add_model_input_args(command, "A trained model directory (saved back in place).")
        command.add_argument("--output-dir", help="Save the model here instead of over --model.")
        command.add_argument("--sample-size", type=_positive_int, default=10_000,
                             help="Calibrate on a seeded sample of this many texts (default 10000).")
        command.add_argument("--seed", type=int, default=0, help="Seed of the sample (and of k-means).")
        command.set_defaults(func=func)
    recluster.add_argument("--kmeans-init", default="k-means++", choices=["k-means++", "umap"],
                           help="How k-means starts: k-means++ (default) or umap (from k-means on a UMAP reduction: "
                                "better with many clusters; needs umap-learn).")

    plot = sub.add_parser("plot", help="A PNG of a trained model's clusters on your texts: a 2-D map coloured by "
                                        "cluster (and by label) and the cluster sizes (needs the plot extra).")
    _add_model_input_args(plot, "A trained model directory or hub id.")
    plot.add_argument("--label-column", help="Known classes of --input: a second map coloured by them.")
    plot.add_argument("--method", default="umap", choices=["umap", "tsne", "pca"],
                      help="2-D projection: umap (default; umap-learn), tsne or pca (scikit-learn).")
    plot.add_argument("--output", default="map.png", help="The picture (default: map.png; .png, .pdf, .svg, ...).")
    plot.add_argument("--sample-size", type=_positive_int, default=5000,
                      help="At most this many texts in the map, a seeded sample (the sizes count every text).")
    plot.add_argument("--seed", type=int, default=0, help="Seed of the sample and the projection.")
    plot.set_defaults(func=cmd_plot)

    evaluate = sub.add_parser("evaluate", help="ACC / NMI / ARI of a baseline or a trained model on a benchmark or "
                                                "your own labelled file.")
    evaluate.add_argument("--method", default="embeddings-kmeans", help="bow-kmeans, tfidf-kmeans, embeddings-kmeans.")
    evaluate.add_argument("--model", help="Evaluate a trained model directory instead of a baseline.")
    evaluate.add_argument("--dataset", help="A benchmark corpus name (or use --input).")
    evaluate.add_argument("--input", help="Your own labelled texts: csv / jsonl / parquet (with --label-column).")
    evaluate.add_argument("--text-column", help="Column of --input holding the texts (default: text).")
    evaluate.add_argument("--label-column", help="Column of --input holding the known classes (required with --input).")
    evaluate.add_argument("--encoder", help="Encoder of embeddings-kmeans (default: all-MiniLM-L6-v2).")
    evaluate.add_argument("--num-clusters", type=_positive_int_or_auto, metavar="K|auto",
                          help="K of a baseline (default: the number of classes); 'auto' (embeddings-kmeans): "
                               "chosen from the embeddings, without the labels.")
    _add_k_selection_args(evaluate)
    evaluate.add_argument("--seed", type=int, default=0)
    _add_data_args(evaluate)
    evaluate.set_defaults(func=cmd_evaluate)

    demo = sub.add_parser("demo", help=f"Train a method briefly on {DEMO_DATASET} beside plain k-means (minutes).")
    demo.add_argument("--method", default="sccl", choices=sorted(METHODS))
    demo.add_argument("--output-dir", help="Where the trained model goes (default: runs/demo-<method>-<dataset>).")
    demo.add_argument("--max-steps", type=int, default=None)
    demo.add_argument("--num-texts", type=int, default=None, help="Texts sampled from the corpus (default: the demo's).")
    _add_data_args(demo)
    demo.set_defaults(func=cmd_demo)

    push = sub.add_parser("push", help="Upload a trained model directory to the Hub with a generated model card.")
    push.add_argument("model_dir", help="A directory written by `train` (weights, tokenizer, training_run.json).")
    push.add_argument("repo_id", help="Target repository, e.g. org/sccl-stackoverflow (created if missing).")
    push.add_argument("--private", action="store_true")
    push.add_argument("--token", help="Hub token (default: the logged-in token / $HF_TOKEN).")
    push.add_argument("--revision", help="Branch to push to (default: main).")
    push.add_argument("--create-pr", action="store_true")
    push.add_argument("--commit-message")
    push.add_argument("--no-card", action="store_true", help="Upload no README.md.")
    push.add_argument("--label-clusters", action="store_true", help="Name clusters after their keywords (id2label).")
    _add_card_args(push)
    push.set_defaults(func=cmd_push)

    card = sub.add_parser("card", help="Write the model card of a trained directory (no upload).")
    card.add_argument("model_dir")
    card.add_argument("--output", help="Write here (e.g. docs/example_model_card.md) instead of stdout.")
    card.add_argument("--repo-id", help="Hub id used in the card's usage snippets.")
    _add_card_args(card)
    card.set_defaults(func=cmd_card)
    return parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "train":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return args.func(args, extra)
    except (ValueError, TypeError, FileNotFoundError, ImportError, FloatingPointError) as err:
        if args.debug:
            raise
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:
        print(f"interrupted{': ' + str(err) if str(err) else ''}", file=sys.stderr)
        return 130
    except Exception as err:  # anything else (disk full, a corrupted file, no CUDA): one line, not a traceback
        if args.debug:
            raise
        print(f"error: {type(err).__name__}: {err} (run with --debug for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
