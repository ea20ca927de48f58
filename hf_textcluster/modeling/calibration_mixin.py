"""A clusterer's calibrated confidence and outliers: :class:`CalibrationMixin` (``calibrate``,
``predict_with_confidence``, ``calibrated_confidence``, ``check_can_serve``), mixed into
:class:`~hf_textcluster.modeling.modeling_utils.TextClusteringPreTrainedModel`.

The buffers and the arithmetic (centres, distance quantiles, margins) are
:class:`~hf_textcluster.modeling.calibration.ClusterCalibration`; here is what a model offers with them. Part of the
inference code that every pushed repository carries: imports only torch, numpy and transformers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch

from .calibration import DEFAULT_OUTLIER_QUANTILE, ClusterCalibration, check_outlier_quantile
from .configuration_utils import TextClusteringConfig
from .encoding_passes import DEFAULT_ENCODE_BATCH_SIZE
from .validation import check_scalar

if TYPE_CHECKING:  # a mixin of the model base: type checkers read it as the PreTrainedModel it is mixed into
    from transformers import PreTrainedModel as _ModelBase

    from .modeling_utils import TextClusteringPreTrainedModel
else:
    _ModelBase = object


class CalibrationMixin(_ModelBase):
    """Calibrate a clusterer on its training texts, then serve each text's calibrated confidence and outlier flag."""

    config: TextClusteringConfig
    calibration: ClusterCalibration

    if TYPE_CHECKING:  # what the model base provides (TextClusteringPreTrainedModel)

        def _check_clusters_initialized(self) -> None: ...
        def _serving_arguments(self, texts, batch_size, precision) -> tuple[list[str], str]: ...
        def _encode_texts(self, texts, batch_size, show_progress_bar, precision, fields) -> Any: ...
        def cluster_probabilities(self, embeddings: torch.Tensor) -> torch.Tensor: ...

    @property
    def is_calibrated(self) -> bool:
        """Whether ``calibrate`` was run (the trainer does it at the end of training)."""
        return bool(getattr(self.config, "num_calibration_texts", 0))

    def calibrated_confidence(self, embeddings: torch.Tensor, probs: torch.Tensor) -> torch.Tensor:
        """The calibrated confidence (N,) in [0, 1] of texts with pooled ``embeddings`` (N x d) and served soft
        assignment ``probs`` (N x K): the share of calibration texts whose centre margin (how much nearer their own
        cluster's centre than the next one, see :mod:`~hf_textcluster.modeling.calibration`) is <= theirs. A model
        calibrated by an older version ranks its soft assignment's margin instead (``config.confidence_measure``).

        Raises:
            ValueError: the model is not calibrated (see ``calibrate``).
        """
        self._require_calibration("`calibrated_confidence`")
        measure = getattr(self.config, "confidence_measure", "assignment_margin")
        return self.calibration.confidence(embeddings, probs, measure=measure)

    def _require_calibration(self, what: str = "`predict_with_confidence`") -> None:
        if not self.is_calibrated:
            raise ValueError(
                f"{what} needs a calibrated model, and this {type(self).__name__} is not calibrated (models trained "
                "before hf_textcluster calibrated them at the end of training). Call `model.calibrate(texts)` with "
                "(a sample of) its training texts and save it, or run `hf-textcluster calibrate --model DIR --input "
                "FILE`."
            )

    def check_can_serve(self, needs_calibration: str | None = None) -> None:
        """Raise the error a prediction would, before any text: the clusters were never initialised (RuntimeError),
        or, when ``needs_calibration`` names the option that needs it (e.g. ``"`flag_outliers`"``), the model is not
        calibrated (ValueError). The pipeline checks this at construction and per call."""
        self._check_clusters_initialized()
        if needs_calibration:
            self._require_calibration(needs_calibration)

    def calibrate(
        self,
        texts: Sequence[str],
        sample_size: int | None = 10_000,
        random_state: int | None = 0,
        batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
        show_progress_bar: bool | None = None,
        precision: str | torch.dtype | None = "auto",
        *,
        embeddings: np.ndarray | torch.Tensor | None = None,
    ) -> TextClusteringPreTrainedModel:
        """Calibrate the confidence and the outlier distances on a seeded sample of ``texts`` (use the training texts).

        One encoding pass, or none when ``embeddings`` are given. Stores the result in the model's ``calibration``
        buffers (saved with the weights) and ``config.num_calibration_texts``.

        Afterwards ``predict_with_confidence`` and the pipeline's ``confidence`` / ``flag_outliers`` work: a text's
        confidence is the share of these calibration texts whose centre margin is <= its own (how much nearer its
        cluster's centre than the nearest other centre, relative to both distances; see ``calibrated_confidence``),
        so it spreads over [0, 1] whatever partition the model serves; a text is an outlier when it is farther (cosine
        distance of its pooled embedding) from its cluster's centre than ``outlier_quantile`` of that cluster's
        calibration texts. A cluster with fewer than
        ``calibration.MIN_CLUSTER_SIZE`` (20) calibration texts uses the distances of all calibration texts instead.

        Args:
            texts: the texts to calibrate on (non-blank strings).
            sample_size: at most this many of them, a seeded sample (``None``: all).
            random_state: the sample's seed.
            batch_size: texts per encoder call.
            show_progress_bar: a tqdm bar; ``None`` shows one for large inputs only.
            precision: as for ``embed``.
            embeddings: ``embed(texts)`` (N x hidden, the same order), when the caller has them already: the
                sample's rows are taken from them instead of encoding the texts again (the heads run on them as on
                a pass's own embeddings, in fp32).

        Returns:
            The model itself (save it with ``save_pretrained`` to keep the calibration).

        Raises:
            ValueError: fewer than 2 texts, a bad ``sample_size``, or ``embeddings`` of another shape than
                N x hidden.

        Example:
            >>> model.calibrate(training_texts).save_pretrained("runs/old-model")  # doctest: +SKIP
        """
        self._check_clusters_initialized()
        texts, precision = self._serving_arguments(texts, batch_size, precision)
        check_scalar(sample_size, "sample_size", int, min_val=2, allow_none=True, hint="None: all texts")
        if len(texts) < 2:
            raise ValueError(f"Calibration needs at least 2 texts, got {len(texts)}.")
        given = None if embeddings is None else self._check_given_embeddings(embeddings, len(texts))
        rows = np.arange(len(texts))
        if sample_size is not None and len(texts) > sample_size:
            rows = np.sort(np.random.default_rng(random_state).choice(len(texts), size=sample_size, replace=False))
            texts = [texts[int(i)] for i in rows]
        if given is None:
            outputs = self._encode_texts(
                texts, batch_size, show_progress_bar, precision, ("embeddings", "cluster_probs")
            )
            sample, probs = outputs.embeddings, outputs.cluster_probs
        else:
            sample = given[torch.from_numpy(rows)]
            with torch.no_grad():
                probs = self.cluster_probabilities(sample.to(self.device)).float().cpu()
        self.calibration.fit(sample, probs)
        self.config.num_calibration_texts = len(texts)
        self.config.confidence_measure = "centre_margin"
        return cast("TextClusteringPreTrainedModel", self)  # the mixin is only ever part of one

    def _check_given_embeddings(self, embeddings: np.ndarray | torch.Tensor, num_texts: int) -> torch.Tensor:
        """``embeddings`` passed to ``calibrate`` as an fp32 CPU tensor, checked against the texts and the encoder."""
        array = embeddings.detach().cpu() if isinstance(embeddings, torch.Tensor) else np.asarray(embeddings)
        given = torch.as_tensor(array)
        hidden = self.calibration.centres.shape[1]
        if given.ndim != 2 or given.shape != (num_texts, hidden):
            raise ValueError(
                f"`embeddings` must be `model.embed(texts)`, {num_texts} x {hidden}; got shape {tuple(given.shape)}. "
                "Pass the embeddings of the same texts, or leave `embeddings` out to encode them."
            )
        return given.float()

    def predict_with_confidence(
        self,
        texts: Sequence[str],
        outlier_quantile: float = DEFAULT_OUTLIER_QUANTILE,
        batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
        show_progress_bar: bool | None = None,
        precision: str | torch.dtype | None = "auto",
    ) -> dict[str, np.ndarray]:
        """Each text's assignment with its calibrated confidence and outlier flag (a calibrated model only; see
        ``calibrate``), as arrays of length N (``pandas.DataFrame(result)`` makes a table):

        - ``cluster``: the most likely cluster (never -1 here: ``is_outlier`` says whether it is far);
        - ``probability``: its soft-assignment probability (the method's own q; the pipeline's ``score``);
        - ``confidence``: the share of calibration texts whose centre margin (nearer its cluster's centre than the
          nearest other one, relative to both distances) is <= this text's, in [0, 1];
        - ``distance``: the cosine distance of the text's pooled embedding to its cluster's calibrated centre;
        - ``is_outlier``: ``distance`` beyond the ``outlier_quantile`` of the cluster's calibration texts' distances.

        Args:
            texts: the texts (non-blank strings).
            outlier_quantile: the quantile of a cluster's calibration distances beyond which a text is an outlier.
            batch_size: texts per encoder call.
            show_progress_bar: a tqdm bar; ``None`` shows one for large inputs only.
            precision: as for ``embed``.

        Returns:
            A dict of the five arrays above, each of length N.

        Raises:
            ValueError: the model is not calibrated (see ``calibrate``).

        Example:
            >>> import pandas as pd
            >>> pd.DataFrame(model.predict_with_confidence(["how do i join two tables"]))  # doctest: +SKIP
        """
        self._require_calibration()
        outlier_quantile = check_outlier_quantile(outlier_quantile)
        self._check_clusters_initialized()
        texts, precision = self._serving_arguments(texts, batch_size, precision)
        outputs = self._encode_texts(
            texts, batch_size, show_progress_bar, precision, ("cluster_probs", "distance", "confidence")
        )
        probs, distances = outputs.cluster_probs, outputs.distance
        probability, clusters = probs.max(dim=-1)
        return {
            "cluster": clusters.numpy(),
            "probability": probability.numpy(),
            "confidence": outputs.confidence.numpy(),
            "distance": distances.numpy(),
            "is_outlier": (distances > self.calibration.thresholds(outlier_quantile).cpu()[clusters]).numpy(),
        }
