"""``train_clusterer``: a training run of one method, or ``auto`` (several signals and a label-free choice)."""

from __future__ import annotations

import difflib
import inspect

import datasets

from ..data import load_texts
from .auto import AutoTrainingResult, train_auto
from .request import TrainingRequest
from .train import TrainingResult, train_method

# What ``train_clusterer`` takes besides its three arguments: the request's fields.
OPTIONS = list(inspect.signature(TrainingRequest).parameters)[3:]


def train_clusterer(
    method: str, dataset: str | datasets.Dataset | list[str], output_dir: str, **options
) -> TrainingResult | AutoTrainingResult:
    """Train ``method`` on a benchmark (by name) or a Dataset, save it to ``output_dir`` and evaluate it.

    How long it trains follows the recipe's schedule (:mod:`~hf_textcluster.runs.schedule`): the ``cpu`` recipes
    train 10 epochs of the training texts within 30 to 300 steps, the ``paper`` recipes their own numbers, and a
    ``max_steps`` (or ``num_train_epochs``) in ``training_overrides`` wins. Checkpoints go to ``output_dir`` as the
    Trainer writes them; with ``resume`` an interrupted run continues from the last one, and a run that ends well
    removes them unless ``keep_checkpoints``. The run is recorded in ``<output_dir>/training_run.json`` (method,
    data, recipe, overrides, precision, metrics, schedule), which ``hf-textcluster card`` / ``push`` read.

    Args:
        method: a registered method name (``"sccl"``, ...), or ``"auto"``, the default of ``hf-textcluster train``.
        dataset: a benchmark name, a ``datasets.Dataset`` with a ``text`` column, or a list of texts.
        output_dir: where checkpoints, the model and ``training_run.json`` go.
        **options: the other fields of :class:`~hf_textcluster.runs.request.TrainingRequest`, where each is described
            (``encoder``, ``num_clusters``, ``training_overrides``, ...).

    Returns:
        A :class:`~hf_textcluster.runs.train.TrainingResult` (model, trainer, metrics, output_dir, train_seconds,
        test_dataset, k_selection); for ``"auto"`` an :class:`~hf_textcluster.runs.auto.AutoTrainingResult`.

    Raises:
        TypeError: an option that is not a field of ``TrainingRequest`` (the error names the closest one).
        ValueError: an option out of its constraints, or options that do not go together (``config_overrides`` with
            ``"auto"``, ``k_range`` without ``num_clusters="auto"``); an unknown config key or training argument;
            ``num_clusters`` missing for texts without labels; an ``output_dir`` holding another run's checkpoints.

    Example:
        >>> from hf_textcluster import train_clusterer
        >>> from hf_textcluster.data import add_augmented_views, load_text_file
        >>> train = add_augmented_views(load_text_file("tickets.csv"), "word_deletion")  # doctest: +SKIP
        >>> result = train_clusterer("sccl", train, "runs/tickets", num_clusters=12)       # doctest: +SKIP
    """
    return run_training(make_request(method, dataset, output_dir, **options))


def make_request(method: str, dataset, output_dir: str, **options) -> TrainingRequest:
    """The :class:`~hf_textcluster.runs.request.TrainingRequest` of :func:`train_clusterer`'s arguments (and of
    ``Clusterer``'s keywords; a list of texts becomes a Dataset); an option that is no field of it is refused naming
    the closest one."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        close = difflib.get_close_matches(unknown[0], OPTIONS, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"the options are {', '.join(OPTIONS)}."
        raise TypeError(f"unknown training option {unknown[0]!r}; {hint}")
    texts = dataset if isinstance(dataset, (str, datasets.Dataset)) else load_texts(dataset)
    return TrainingRequest(texts, output_dir, method=method, **options)


def run_training(request: TrainingRequest) -> TrainingResult | AutoTrainingResult:
    """The run ``request`` asks for: ``auto``, or one method. :func:`train_clusterer` and ``Clusterer.fit`` (which
    ``hf-textcluster train`` and the demo call) build the request and call this."""
    return train_auto(request) if request.method == "auto" else train_method(request)
