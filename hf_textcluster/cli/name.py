"""``hf-textcluster name``: a language model names a trained model's clusters from their keywords and typical texts
(any ``transformers`` text-generation or text2text model, a Hub id or a local folder); the names become the model's
``id2label`` (what the pipeline returns as ``"label"``), a cluster whose answer fails or is unusable keeps its keyword
name, and the answers are cached beside the model (``cluster_names.json``)."""

from __future__ import annotations

import argparse
import json
import os
import shutil

from ..modeling.validation import check_local_path
from ..representation import DEFAULT_PROMPT, NAMES_FILE, GeneratedNamesRepresentation, label_clusters
from ..runs.folder import RunFolder, read_training_run
from ._args import add_model_input_args, add_save_back_args, read_file_option, update_saved_model

HELP = (
    "Name a trained model's clusters with a language model (any text-generation or text2text model) "
    "from their keywords and typical texts; saved as its id2label."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_input_args(parser, "A trained model directory (saved back in place unless --output-dir).")
    parser.add_argument(
        "--generator",
        required=True,
        help="A Hub id or local folder of a transformers text-generation (GPT-2, Llama, Qwen...) or text2text "
        "(T5, FLAN-T5, BART...) model.",
    )
    parser.add_argument(
        "--prompt-file",
        help="A text file holding the prompt template, with {keywords} and optionally {documents} "
        "(default: the documented prompt).",
    )
    add_save_back_args(parser, "named ")


def run(args: argparse.Namespace, extra: list[str]) -> int:
    # everything that can be refused is refused before the model (or the generator) is loaded
    check_local_path(args.generator, "--generator")
    prompt = read_file_option(args.prompt_file, "--prompt-file") if args.prompt_file else DEFAULT_PROMPT
    GeneratedNamesRepresentation(args.generator, prompt=prompt)  # a bad prompt fails here, in one line
    output_dir = args.output_dir or args.model
    cache = os.path.join(output_dir, NAMES_FILE)
    sources = {}

    def update(model, texts):
        earlier = os.path.join(args.model, NAMES_FILE)
        if os.path.isfile(earlier) and not os.path.exists(cache):
            os.makedirs(output_dir, exist_ok=True)
            shutil.copy2(earlier, cache)  # the answers already generated travel with the model
        label_clusters(model, texts, batch_size=args.batch_size, generator=args.generator, prompt=prompt, cache=cache)
        with open(cache, encoding="utf-8") as f:
            sources.update(json.load(f).get("last", {}).get("sources", {}))

    def write_files(folder):
        # training_run.json's "names": where the names came from, what the model card says (a folder without a
        # training run record, a model not trained by `train`, gets none); saved with the model
        record = read_training_run(output_dir) or read_training_run(args.model)
        if record is not None:
            generated = sum(source == "generated" for source in sources.values())
            record["names"] = {"generator": args.generator, "generated": generated, "file": NAMES_FILE}
            RunFolder(folder).write_training_run(record)

    model, _, output_dir = update_saved_model(args, "name", update, write_files)
    generated = sum(source == "generated" for source in sources.values())
    for k, label in sorted(model.config.id2label.items()):
        print(f"{k:>4}  {sources.get(str(k), 'keywords'):<9}  {label}")
    print(
        f"Named {generated} of {model.config.num_clusters} clusters with {args.generator} (the others keep their "
        f"keyword names); saved in {output_dir} (answers cached in {cache})."
    )
    return 0
