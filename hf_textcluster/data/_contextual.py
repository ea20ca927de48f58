"""nlpaug's contextual word substitution, made to work with transformers 5 (see
:class:`hf_textcluster.data.nlpaug_augmenters.ContextualWordSubstitution` for what is patched and why).

nlpaug is imported lazily: importing :mod:`hf_textcluster.data` does not import it.
"""

from __future__ import annotations


def detect_model_type(tokenizer) -> str:
    """nlpaug's family name for a tokenizer: ``"bert"`` (WordPiece, ``##`` sub-words) or ``"roberta"`` (byte-level
    BPE, ``Ġ`` word starts)."""
    if getattr(tokenizer, "mask_token", None) is None:
        raise ValueError(
            f"The tokenizer {type(tokenizer).__name__} has no mask token: contextual substitution needs a masked "
            "language model (e.g. bert-base-uncased, roberta-base)."
        )
    vocab = tokenizer.get_vocab()
    if any(token.startswith("##") for token in vocab):
        return "bert"
    if any(token.startswith("\u0120") for token in vocab):
        return "roberta"
    raise ValueError(
        f"Unsupported tokenizer {type(tokenizer).__name__}: nlpaug's contextual substitution handles WordPiece "
        "('##' sub-words, BERT-style) and byte-level BPE ('Ġ', RoBERTa-style) vocabularies only. Pass "
        "model_type='bert' or 'roberta' to force one."
    )


def _patched(base):
    """A subclass of an nlpaug language-model wrapper that works with transformers 5 tokenizers."""

    class Patched(base):
        def __init__(self, model_path, **kwargs):
            super().__init__(model_path, **kwargs)
            tokenizer = self.tokenizer
            # Ask the tokenizer for its special tokens instead of nlpaug's per-family constants.
            self.MASK_TOKEN = tokenizer.mask_token
            self.PAD_TOKEN = tokenizer.pad_token or self.PAD_TOKEN
            self.UNKNOWN_TOKEN = tokenizer.unk_token or self.UNKNOWN_TOKEN
            self.mask_id = tokenizer.mask_token_id
            self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
            self._special_tokens = set(tokenizer.all_special_tokens)

        # transformers 5 tokenizers have no _convert_token_to_id / _convert_id_to_token.
        def token2id(self, token):
            return self.tokenizer.convert_tokens_to_ids(token)

        def id2token(self, _id):
            token = self.tokenizer.convert_ids_to_tokens(int(_id))
            return "" if token is None else token  # ids past the tokenizer's vocabulary; nlpaug skips ""

        def get_mask_token(self):
            return self.MASK_TOKEN

        def get_unknown_token(self):
            return self.UNKNOWN_TOKEN

        def is_skip_candidate(self, candidate):
            return candidate in self._special_tokens or super().is_skip_candidate(candidate)

    Patched.__name__ = Patched.__qualname__ = f"Patched{base.__name__}"
    return Patched


def build_contextual_augmenter(model_path: str, model_type: str | None, **options):
    """An ``nlpaug`` ``ContextualWordEmbsAug(action="substitute")`` whose language model is patched; ``options``: its
    ``aug_p``, ``aug_min``, ``aug_max``, ``top_k``, ``device`` and ``batch_size``."""
    import nlpaug.augmenter.word as naw
    from nlpaug.model.lang_models import Bert, Roberta
    from transformers import AutoTokenizer

    if model_type is None:
        model_type = detect_model_type(AutoTokenizer.from_pretrained(model_path))
    wrapper = _patched(Bert if model_type == "bert" else Roberta)

    class ContextualWordEmbsAug(naw.ContextualWordEmbsAug):
        # Keeps nlpaug's class name: nlpaug's augment() batches a list of texts only for classes *named*
        # "ContextualWordEmbsAug"; any other name augments the texts one by one through a code path that breaks.
        # get_model bypasses nlpaug's global model cache (keyed by the last path component only).
        def get_model(self, model_path, model_type, device="cpu", force_reload=False, batch_size=32, top_k=None,
                      silence=True, use_custom_api=True):  # fmt: skip
            return wrapper(model_path, device=device, top_k=top_k, silence=silence, batch_size=batch_size)

    return ContextualWordEmbsAug(model_path=model_path, model_type=model_type, action="substitute", **options)
