"""What a training run is asked for: every option of :func:`~hf_textcluster.runs.api.train_clusterer`, declared
once here and checked once, before any data is read."""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import InitVar, dataclass
from typing import Any, ClassVar

import datasets

from ..choosing.auto_k import ClusterCountRequest
from ..data.augmentation import AUGMENTERS
from ..modeling.validation import Interval, Options, validate_parameters
from ..models import METHODS
from ..representation.ctfidf import keyword_vectorizer
from .folder import RunFolder
from .signals import CACHED_SIGNALS, SIGNALS

AUGMENTATIONS = tuple(AUGMENTERS)


@dataclass(frozen=True)
class TrainingRequest:
    """The options of a training run: ``train_clusterer(method, dataset, output_dir, **options)`` and ``Clusterer``
    build one from their keywords, ``hf-textcluster train`` from its command line (and trains it with
    ``Clusterer.from_request(request).fit()``), and every step of the run reads it.

    Each option is checked against ``_parameter_constraints`` (and against the others: ``config_overrides`` and
    ``keep_signals`` / ``time_budget`` belong to different methods) when the request is made, so a bad one fails in one
    line before any data is read. ``num_clusters``, ``k_range`` and ``k_criterion`` become one
    :class:`~hf_textcluster.choosing.auto_k.ClusterCountRequest`, held in ``num_clusters``. ``auto`` trains each signal
    on a copy (``dataclasses.replace``) with its own method, folder and K.

    Args:
        dataset: a benchmark name (see :data:`~hf_textcluster.data.BENCHMARKS`) or a ``datasets.Dataset`` with a
            ``text`` column (and ``text_aug1`` / ``text_aug2`` for methods that train on augmented views; an
            optional ``label`` column is only scored against).
        output_dir: where checkpoints, the model and ``training_run.json`` go.
        method: a registered method name (``"sccl"``, ``"decmlm"``, ``"deccrl"``, ``"aecl"``, ``"clusterbert"``), or
            ``"auto"`` (the default): several training signals, every read-out of each and their consensus, one served
            by a label-free choice (:func:`~hf_textcluster.runs.auto.train_auto`, which returns an
            ``AutoTrainingResult``).
        encoder: a hub id or local path; ``None`` is the pip-shipped all-MiniLM-L6-v2.
        recipe: the recipe variant in the method's ``recipes.json``: ``"cpu"`` (default) or ``"paper"``.
        augmentation: ``"recipe"`` (the recipe's views: an augmenter, or precomputed ones a Dataset brings as
            ``text_aug1`` / ``text_aug2``), an augmenter name, or ``None``.
        num_clusters: K; defaults to the number of classes of a labelled dataset. ``"auto"`` chooses K from the
            training texts' embeddings (one encoding pass, reused for the k-means initialisation) with
            :func:`~hf_textcluster.choosing.auto_k.estimate_num_clusters`; a resumed run keeps the K it chose. A
            :class:`~hf_textcluster.choosing.auto_k.ClusterCountRequest` holds the whole request (then no
            ``k_range`` / ``k_criterion``).
        k_range: with ``"auto"``, ``(k_min, k_max)`` bounds the search (either may be None: 2, and
            min(200, 3 sqrt(N))).
        k_criterion: with ``"auto"``, the criterion (default
            :data:`~hf_textcluster.choosing.auto_k.DEFAULT_CRITERION`).
        data_dir: the folder of the benchmark CSVs (default ``$HF_TEXTCLUSTER_DATA_DIR``).
        seed: the training seed.
        config_overrides: model config fields over the recipe's, e.g. ``{"mlm_loss_weight": 0}``.
        training_overrides: ``ClusteringTrainingArguments`` fields over the recipe's, e.g. ``{"max_steps": 100}``.
        resume: continue from the last checkpoint in ``output_dir`` when there is one.
        overwrite: replace a trained model already in ``output_dir`` (without it, a folder holding a saved model is
            only written to when it resumes this run's own checkpoints).
        evaluate: score the trained model (labels needed).
        save: save the model into ``output_dir``.
        test_size: hold out that many texts (an int) or that share (a float), stratified by label and split by
            ``split_seed``: the model never trains on them and the evaluation is on them.
        split_seed: the seed of the held-out split.
        input_file: ``{"path": <absolute path>, "text_column": .., "label_column": ..}``, the user's file the Dataset
            was read from, recorded in ``training_run.json`` so ``card`` / ``push`` compute cluster keywords from it.
        keep_checkpoints: keep the ``checkpoint-*`` folders after a successful, saved run (by default they are
            removed then; a run that fails or is interrupted always keeps them, to resume from).
        verbose: say the schedule before training and show a progress bar with the loss terms (False: log them at
            INFO level and no bar, unless ``training_overrides`` sets ``disable_tqdm``).
        name_clusters: name the served clusters after their c-TF-IDF keywords on a sample of the training texts
            (``config.id2label``), save the clusters' summary with the model (``Clusterer.cluster_info()``) and the
            training texts' clusters beside it (``assignments.csv``). False leaves the default names
            (``cluster_<i>``) and saves neither, e.g. for a model whose served partition is chosen afterwards, as
            ``auto`` does with each signal.
        keep_signals: with ``"auto"``, keep each trained signal's model (``signals/<name>``, an encoder each) after a
            successful run; by default only the served model and every candidate's partition are kept (switching to
            another candidate fits a head for it on the served model's embeddings).
        time_budget: with ``"auto"``, stop training after this many seconds (a checkpoint saved, as after Ctrl-C):
            the model saved first stays, and running the same call again resumes training.
        signals: with ``"auto"``, what it trains: any distinct mix of
            :data:`~hf_textcluster.runs.signals.CACHED_SIGNALS` (objectives on the pretrained encoder's cached
            embeddings) and :data:`~hf_textcluster.runs.signals.SIGNALS` (the encoder fine-tuned); None:
            :data:`~hf_textcluster.runs.signals.DEFAULT_SIGNALS`.
        stop_words: the words the clusters' keywords leave out: ``"english"``, another language (``"french"``,
            ``"german"``, ...: the ``stop-words`` package's list), a list of words, or None. Saved in the model's
            config (``keyword_vectorizer``), so that every later command counts keywords the same way.
        vectorizer_model: a scikit-learn ``CountVectorizer`` the keywords' words are counted with instead
            (BERTopic's); its settings are saved, so they must be plain values (no callable).
        outliers: leave the texts far from every cluster at -1 (BERTopic's topic -1), in the saved clusters of the
            training texts and their summary, and have the model flag them when it predicts (``config.flag_outliers``).
            Far: a cosine distance to the cluster's calibrated centre beyond 0.99 of its calibration texts' (about 1%
            of the training texts). ``Clusterer.reduce_outliers`` assigns them to their nearest cluster.

    Example:
        >>> request = TrainingRequest("stackoverflow", "runs/so", num_clusters="auto", k_range=(2, 40))
        >>> request.num_clusters.is_auto, request.num_clusters.k_range
        (True, (2, 40))
    """

    dataset: str | datasets.Dataset
    output_dir: str
    method: str = "auto"
    encoder: str | None = None
    recipe: str = "cpu"
    augmentation: str | None = "recipe"
    num_clusters: int | str | ClusterCountRequest | None = None
    k_range: InitVar[tuple[int | None, int | None] | None] = None
    k_criterion: InitVar[str | None] = None
    data_dir: str | None = None
    seed: int = 0
    config_overrides: Mapping | None = None
    training_overrides: Mapping | None = None
    resume: bool = True
    evaluate: bool = True
    save: bool = True
    test_size: int | float | None = None
    split_seed: int = 0
    input_file: Mapping | None = None
    overwrite: bool = False
    keep_checkpoints: bool = False
    verbose: bool = True
    name_clusters: bool = True
    keep_signals: bool = False
    time_budget: float | None = None
    signals: Sequence[str] | None = None
    stop_words: str | Sequence[str] | None = "english"
    vectorizer_model: Any = None
    outliers: bool = False

    _parameter_constraints: ClassVar[dict] = {
        "method": Options("auto", *METHODS),
        "augmentation": [Options("recipe", *AUGMENTATIONS), None],
        "seed": Interval(int, 0, None),
        "split_seed": Interval(int, 0, None),
        "test_size": [Interval(float, 0, 1, closed="neither"), Interval(int, 1, None), None],
        "time_budget": [Interval(numbers.Real, 0, None, closed="neither"), None],
    }

    def __post_init__(self, k_range, k_criterion):
        validate_parameters(self, self._parameter_constraints)
        object.__setattr__(self, "num_clusters", ClusterCountRequest.parse(self.num_clusters, k_range, k_criterion))
        if self.method == "auto" and self.config_overrides:
            raise ValueError(
                "`config_overrides` (--config) configures one method, and the default method, auto, trains several, "
                "each with its own: pass method='sccl' (--method sccl, or another) to override its configuration."
            )
        if self.method != "auto" and (self.keep_signals or self.time_budget is not None or self.signals is not None):
            raise ValueError(
                "`keep_signals` (--keep-signals), `time_budget` (--time-budget) and `signals` (--signals) apply to the "
                f"default method, auto; drop them to train {self.method} alone."
            )
        keyword_vectorizer(self.stop_words, self.vectorizer_model)  # refused before any work
        if self.signals is not None:
            known = (*CACHED_SIGNALS, *SIGNALS)
            signals = tuple(self.signals)
            if not signals or any(s not in known for s in signals) or len(set(signals)) != len(signals):
                raise ValueError(
                    f"`signals` (--signals) must name distinct signals of {', '.join(known)}; got {list(signals)!r}."
                )
            object.__setattr__(self, "signals", signals)

    @property
    def keywords(self) -> dict:
        """The settings the clusters' keywords are counted with, saved in the model's config."""
        return keyword_vectorizer(self.stop_words, self.vectorizer_model)

    @property
    def dataset_name(self) -> str | None:
        """The benchmark's name, or None for a Dataset."""
        return self.dataset if isinstance(self.dataset, str) else None

    def record(self) -> dict:
        """What ``training_run.json`` records of the request: the data (a benchmark, or the user's file), the recipe,
        the seed and the training overrides."""
        return {
            "dataset": self.dataset_name,
            **({"input": dict(self.input_file)} if self.input_file and not self.dataset_name else {}),
            "recipe": self.recipe,
            "seed": self.seed,
            "training_overrides": dict(self.training_overrides or {}),
        }

    def check_output_dir(self, resuming: bool) -> None:
        """A run that saves replaces no trained model in ``output_dir`` without ``overwrite``, unless it is
        ``resuming`` its own run there (:meth:`~hf_textcluster.runs.folder.RunFolder.check_may_replace_model`)."""
        if self.save and not (self.resume and resuming):
            RunFolder(self.output_dir).check_may_replace_model(
                overwrite=self.overwrite, argument="output_dir (--output-dir)", command="train"
            )
