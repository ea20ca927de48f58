"""The Hub layer: save and push with a model card and the remote code for users without this package, model cards."""

from .push import check_ready_to_push, push_model_dir, push_to_hub, save_pretrained

__all__ = ["check_ready_to_push", "push_model_dir", "push_to_hub", "save_pretrained"]
