"""What a training run shows while it runs: a progress bar with the method's loss terms by name, and one line with
the estimated training time once a few real steps have been timed on this machine.

The Trainer's own callbacks print each log as a raw dict (``{'loss': '1.23', 'grad_norm': ...}``); these replace
them (see :func:`install_progress_callbacks`). The logs themselves are unchanged (``trainer.state.log_history``).
"""

from __future__ import annotations

import time

from transformers import TrainerCallback
from transformers.trainer_callback import PrinterCallback, ProgressCallback
from transformers.utils import logging

logger = logging.get_logger(__name__)

# Steps timed for the estimate, after the first one (which also pays for warm-up: allocations, first tokenizations).
TIMED_STEPS = 3


def format_duration(seconds: float) -> str:
    """``"45 s"``, ``"3 min"``, ``"1 h 20 min"``: rounded as an estimate deserves."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 90 else f"{minutes // 60} h {minutes % 60:02d} min"


def loss_terms(logs: dict) -> dict[str, float]:
    """The loss and the method's loss terms of a training log (``loss_<term>`` keys, as
    ``ClusteringTrainer.record_loss_terms`` logs them), by name: ``{"loss": 1.2, "contrastive": 0.9, ...}``."""
    terms = {"loss": logs["loss"]} if isinstance(logs.get("loss"), (int, float)) else {}
    terms.update(
        {key[len("loss_") :]: value for key, value in logs.items() if key.startswith("loss_") and key != "loss_"}
    )
    return terms


class _EstimatesTime(TrainerCallback):
    """Times steps 2 .. 1 + TIMED_STEPS of a run (or of its resumed part) and estimates the rest once."""

    start_step, started, estimate = 0, None, None

    def on_train_begin(self, args, state, control, **kwargs):
        super().on_train_begin(args, state, control, **kwargs)
        self.start_step, self.started, self.estimate = state.global_step, None, None

    def estimate_line(self, state) -> str | None:
        """The line with the estimated time of the whole run, once (then None)."""
        done = state.global_step - self.start_step
        if done == 1:
            self.started = time.perf_counter()
        elif done == 1 + TIMED_STEPS and self.started is not None and self.estimate is None:
            self.estimate = (time.perf_counter() - self.started) / TIMED_STEPS
            total = self.estimate * (max(0, state.max_steps - state.global_step) + done)
            return (
                f"Estimated training time on this machine: about {format_duration(total)} for "
                f"{state.max_steps - self.start_step} steps ({self.estimate:.2f} s a step, timed on steps "
                f"{self.start_step + 2}-{self.start_step + 1 + TIMED_STEPS}; an estimate: other work on the machine "
                "changes it, and the end of training adds one or two encoding passes over the training texts)."
            )
        return None


class LossTermsProgressCallback(_EstimatesTime, ProgressCallback):
    """The Trainer's tqdm bar, with the loss and the method's loss terms by name as its postfix instead of raw log
    dicts, and one line with the estimated training time after the first few steps."""

    def on_step_end(self, args, state, control, **kwargs):
        super().on_step_end(args, state, control, **kwargs)
        line = self.estimate_line(state)
        if line is not None and state.is_world_process_zero and self.training_bar is not None:
            self.training_bar.write(line)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or self.training_bar is None:
            return
        terms = loss_terms(logs or {})
        if terms:
            self.training_bar.set_postfix({name: f"{value:.3g}" for name, value in terms.items()}, refresh=True)


class LossTermsLogCallback(_EstimatesTime):
    """Without a bar (``disable_tqdm``): the loss terms by name and the estimate as INFO log lines, so that a quiet
    run (``train_clusterer(verbose=False)``, tests) prints nothing unless its logging level asks for it."""

    def on_step_end(self, args, state, control, **kwargs):
        line = self.estimate_line(state)
        if line is not None and state.is_world_process_zero:
            logger.info(line)

    def on_log(self, args, state, control, logs=None, **kwargs):
        terms = loss_terms(logs or {})
        if terms and state.is_world_process_zero:
            shown = ", ".join(f"{name} {value:.4g}" for name, value in terms.items())
            logger.info(f"step {state.global_step}/{state.max_steps}: {shown}")


def install_progress_callbacks(trainer) -> None:
    """Replace the Trainer's raw-dict printers: its bar by :class:`LossTermsProgressCallback`, or (``disable_tqdm``) its
    printer by :class:`LossTermsLogCallback` (INFO lines)."""
    if trainer.pop_callback(ProgressCallback) is not None:
        trainer.add_callback(LossTermsProgressCallback())
    elif trainer.pop_callback(PrinterCallback) is not None:
        trainer.add_callback(LossTermsLogCallback())
    # (a notebook's own progress callback is left as it is)
