"""``hf-textcluster push``: upload a trained model directory to the Hub with a generated model card."""

import argparse
import sys

from huggingface_hub.errors import HfHubHTTPError

from ..hub.push import push_model_dir
from ._args import add_card_args, card_kwargs, encoding_on

HELP = "Upload a trained model directory to the Hub with a generated model card."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_card_args(parser)
    parser.add_argument(
        "--repo-id", required=True, help="Target Hub repository, e.g. org/sccl-stackoverflow (created if missing)."
    )
    parser.add_argument("--private", action="store_true", help="Create the repository private.")
    parser.add_argument("--token", help="Hub token (default: the logged-in token / $HF_TOKEN).")
    parser.add_argument("--revision", help="Branch to push to (default: main).")
    parser.add_argument("--create-pr", action="store_true", help="Open a pull request instead of committing.")
    parser.add_argument(
        "--commit-message", help="The commit's message (default: 'Upload <model class> (<K> clusters)')."
    )
    parser.add_argument("--no-card", action="store_true", help="Upload no README.md.")
    parser.add_argument("--label-clusters", action="store_true", help="Name clusters after their keywords (id2label).")


def run(args: argparse.Namespace, extra: list[str]) -> int:
    try:
        with encoding_on(args) as device:  # the card's keywords: each text's cluster
            commit = push_model_dir(
                args.model,
                args.repo_id,
                label_clusters=args.label_clusters,
                model_card=not args.no_card,
                private=args.private or None,
                token=args.token,
                revision=args.revision,
                create_pr=args.create_pr,
                commit_message=args.commit_message,
                **card_kwargs(args, device),
            )
    except (RuntimeError, OSError, HfHubHTTPError) as err:  # untrained model, Hub unreachable, rejected upload
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"Pushed {args.model} to {args.repo_id}: {commit.commit_url}")
    return 0
