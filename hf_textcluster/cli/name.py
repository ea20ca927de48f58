"""``hf-textcluster name``: a language model names a trained model's clusters from their keywords and typical texts
(any ``transformers`` text-generation or text2text model, a Hub id or a local folder); the names become the model's
``id2label`` (what the pipeline returns as ``"label"``), a cluster whose answer fails or is unusable keeps its keyword
name, and the answers are cached beside the model (``cluster_names.json``)."""

import argparse

from ..modeling.validation import check_local_path
from ..representation import DEFAULT_PROMPT, NAMES_FILE, GeneratedNamesRepresentation
from ._args import add_edit_args, read_file_option, run_edit

HELP = (
    "Name a trained model's clusters with a language model (any text-generation or text2text model) "
    "from their keywords and typical texts; saved as its id2label, in place unless --output-dir."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
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
    add_edit_args(parser)


def run(args: argparse.Namespace, extra: list[str]) -> int:
    # everything that can be refused is refused before the model (or the generator) is loaded
    check_local_path(args.generator, "--generator")
    prompt = read_file_option(args.prompt_file, "--prompt-file") if args.prompt_file else DEFAULT_PROMPT
    GeneratedNamesRepresentation(args.generator, prompt=prompt)  # a bad prompt fails here, in one line
    clusterer, sources, where = run_edit(args, "name", generator=args.generator, prompt=prompt)
    for k, label in sorted(clusterer.model.config.id2label.items()):
        print(f"{k:>4}  {sources[k]:<9}  {label}")
    generated = sum(source == "generated" for source in sources.values())
    print(
        f"Named {generated} of {clusterer.model.config.num_clusters} clusters with {args.generator} (the others keep "
        f"their keyword names); {where} (answers cached in {clusterer.path}/{NAMES_FILE})."
    )
    return 0
