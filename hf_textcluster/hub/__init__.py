"""The Hub layer: push with a model card, remote code for users without this package, model cards."""

from .push import add_to_saved_model, check_ready_to_push, push_model_dir, push_to_hub

__all__ = ["add_to_saved_model", "check_ready_to_push", "push_model_dir", "push_to_hub"]
