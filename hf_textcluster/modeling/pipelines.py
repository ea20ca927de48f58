"""The ``text-clustering`` pipeline: texts -> ``{"cluster", "label", "score"}`` from any hf_textcluster model."""

from __future__ import annotations

import numpy as np
import torch
from transformers import Pipeline

from .calibration import DEFAULT_OUTLIER_QUANTILE, check_outlier_quantile
from .encoding_passes import DEFAULT_ENCODE_BATCH_SIZE
from .modeling_utils import TextClusteringPreTrainedModel
from .precision import check_precision, resolve_precision
from .validation import check_scalar, clip_text, validate_texts


def _is_text_column(inputs) -> bool:
    """A ``datasets`` column (``dataset["text"]``), a pandas Series or a numpy array of strings."""
    return isinstance(inputs, np.ndarray) or type(inputs).__name__ in ("Column", "Series")


class TextClusteringPipeline(Pipeline):
    """``clusterer(texts)``: per text ``{"cluster", "label", "score", "confidence"}`` (the most likely cluster, its
    ``id2label`` name, the method's own q, the calibrated confidence or None). ``top_k=k``: the k most likely.
    ``flag_outliers=True`` (calibrated; not with ``top_k``; default: the config's ``flag_outliers``): a text farther
    from its cluster's centre than ``outlier_quantile`` (0.99) of its calibration texts is ``"cluster": -1, "label":
    "outlier"`` with ``"nearest_cluster"`` / ``"nearest_label"``. Lists run in length-sorted batches (128), answered
    in input order; ``precision`` (at construction or per call) is ``predict``'s.
    """

    model: TextClusteringPreTrainedModel  # checked in __init__ (its `cluster_batch`)

    # Pipeline's stages take **kwargs; these name the options they take, hence the `override` ignores.
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("batch_size", DEFAULT_ENCODE_BATCH_SIZE)
        super().__init__(*args, **kwargs)
        if self.tokenizer is None:
            self.tokenizer = getattr(self.model, "tokenizer", None)
        if self.tokenizer is None:
            raise ValueError("The text-clustering pipeline needs a tokenizer: pass `tokenizer=` to `pipeline(...)`.")
        if not hasattr(self.model, "cluster_batch"):
            raise ValueError(
                f"{type(self.model).__name__} is not an hf_textcluster clusterer; the text-clustering pipeline needs "
                "a model such as SCCLModel (load it with AutoModel after `import hf_textcluster`)."
            )
        self.model.check_can_serve()

    def _sanitize_parameters(
        self, top_k=None, max_length=None, flag_outliers=None, outlier_quantile=None, precision=None, **kwargs
    ):
        # besides transformers' own call options, anything is a misspelt option that would otherwise be ignored
        unknown = sorted(set(kwargs) - {"batch_size", "num_workers", "device", "binary_output", "torch_dtype", "dtype"})
        if unknown:
            raise TypeError(
                f"Unknown text-clustering option(s) {unknown}; the options are `top_k`, `max_length`, "
                "`batch_size`, `flag_outliers`, `outlier_quantile`, `precision`."
            )
        preprocess_params = {}
        if max_length is not None:
            check_scalar(max_length, "max_length", int, min_val=2, hint="tokens, special ones included")
            preprocess_params["max_length"] = max_length
        postprocess_params = {}
        if top_k is not None:
            num_clusters = self.model.config.num_clusters
            check_scalar(top_k, "top_k", int, min_val=1, max_val=num_clusters)
            postprocess_params["top_k"] = top_k
        if flag_outliers is not None and not isinstance(flag_outliers, bool):
            raise ValueError(f"`flag_outliers` must be True or False, got {flag_outliers!r}.")
        if outlier_quantile is not None and not (flag_outliers or flag_outliers is None and self.model.flags_outliers):
            raise ValueError("`outlier_quantile` applies with `flag_outliers=True`; pass both (or neither).")
        if flag_outliers:
            if top_k is not None:
                raise ValueError(
                    "`flag_outliers` decides about the best cluster only; it cannot be combined with "
                    "`top_k` (call the pipeline once with each)."
                )
            self.model.check_can_serve(needs_calibration="`flag_outliers`")
        if flag_outliers is not None:  # else the model's default, in postprocess
            postprocess_params["flag_outliers"] = flag_outliers
        if outlier_quantile is not None:
            postprocess_params["outlier_quantile"] = check_outlier_quantile(outlier_quantile)
        forward_params = {}
        if precision is not None:
            # checked now (int8 off the CPU fails at construction), resolved per call as `predict` does
            resolve_precision(precision, self.model.device, inference=True)
            forward_params["precision"] = check_precision(precision, inference=True)
        return preprocess_params, forward_params, postprocess_params

    def __call__(self, inputs, **kwargs):  # type: ignore[override]
        if isinstance(inputs, str):
            validate_texts([inputs], argument_name="inputs")
            return super().__call__([inputs], **kwargs)[0]
        if isinstance(inputs, (list, tuple)) or _is_text_column(inputs):
            texts = validate_texts(list(inputs), argument_name="inputs")  # once, naming the bad row
            # in length order, as `predict` batches (hence its exact results), and answered in the input order
            order = np.argsort([-len(t) for t in texts], kind="stable")
            results = super().__call__([texts[i] for i in order], **kwargs)
            return [results[i] for i in np.argsort(order, kind="stable")]
        return super().__call__(inputs, **kwargs)  # datasets / generators stream through unchanged

    def preprocess(self, text, max_length=None):  # type: ignore[override]
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"Every input must be a non-empty string, got {text!r}.")
        max_length = max_length or self.model.config.max_length
        tokenizer = self.tokenizer
        assert tokenizer is not None  # checked in __init__
        return tokenizer(clip_text(text, max_length), truncation=True, max_length=max_length, return_tensors="pt")

    def _forward(self, model_inputs, precision="auto"):  # type: ignore[override]
        # The model's serving call: the precision covers the encoder only, the heads run in fp32 (as in `predict`).
        outputs = self.model.cluster_batch(model_inputs, precision)
        probs = outputs.cluster_probs
        result = {"cluster_probs": probs}
        if outputs.distance is not None and probs is not None:  # a calibrated model
            result.update(distance=outputs.distance, confidence=outputs.confidence)
        return result

    def postprocess(self, model_outputs, top_k=None, flag_outliers=None, outlier_quantile=DEFAULT_OUTLIER_QUANTILE):  # type: ignore[override]
        probs = model_outputs["cluster_probs"][0].float()
        id2label: dict = self.model.config.id2label or {}
        k = top_k or 1
        scores, clusters = torch.topk(probs, k)
        results = [
            {"cluster": int(c), "label": id2label.get(int(c), f"cluster_{int(c)}"), "score": float(s)}
            for s, c in zip(scores, clusters)
        ]
        result = results[0]
        confidence = model_outputs.get("confidence")
        result["confidence"] = None if confidence is None else float(confidence[0])
        if top_k is not None:
            return results
        if self.model.flags_outliers if flag_outliers is None else flag_outliers:
            threshold = self.model.calibration.thresholds(outlier_quantile)[int(result["cluster"])]
            if float(model_outputs["distance"][0]) > float(threshold):  # the keys in the same order, then the nearest
                nearest = {"nearest_cluster": result["cluster"], "nearest_label": result["label"]}
                result = {**result, "cluster": -1, "label": "outlier", **nearest}
        return result
