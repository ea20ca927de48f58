"""Results computed once within a scope: the same inputs, the same result, without computing it again.

``train --method auto`` trains several signals from one pretrained encoder on the same texts. Each signal's k-means
start encodes the texts with the still untrained encoder and clusters them (k-means++ and a UMAP k-means), and the
pretrained encoder's candidates do both once more: on 20,000 texts that is two encoding passes, two UMAP reductions
and two k-means++ fits too many (about 2 minutes on 2 CPU cores). Inside :func:`reusing_results` each of these runs
once. A result is reused only under a key that covers everything it depends on (the arrays' bytes, the encoder's
weights, the seeds), and callers get a copy, so the run's partitions are those it computes without the scope. Outside
a scope nothing is kept.

Package-only (never shipped as remote code): :func:`embed` is how the package's training, choosing and runs encode
texts, so that a pass inside a block runs once; a model's own ``embed`` computes every time.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import numpy as np
import torch

from .modeling.encoding_passes import DEFAULT_ENCODE_BATCH_SIZE

T = TypeVar("T")
# The store of the innermost active scope (None: no scope, nothing is kept).
_STORE: contextvars.ContextVar[OrderedDict | None] = contextvars.ContextVar("hf_textcluster_reused", default=None)
# auto keeps about a dozen results before the last one it reuses (each space's embeddings, k-means++ fit and UMAP
# k-means); the largest are a corpus' embeddings (20,000 x 384 floats: 30 MB, a million texts: 1.5 GB). What is kept
# stays within both bounds; a result larger than MAX_BYTES is computed and not kept.
MAX_ENTRIES = 32
MAX_BYTES = 2 * 1024**3


@contextlib.contextmanager
def reusing_results() -> Iterator[None]:
    """Within the block, :func:`reuse` computes each result once (at most :data:`MAX_ENTRIES` results and
    :data:`MAX_BYTES` of arrays kept, the oldest dropped first); everything kept is released when it ends. Nested
    blocks share the outer block's results.

    Example:
        >>> with reusing_results():
        ...     a = reuse(lambda: ("square", 3), lambda: 3 * 3)
        ...     b = reuse(lambda: ("square", 3), lambda: 0)  # not computed: the same key
        >>> a, b
        (9, 9)
    """
    if _STORE.get() is not None:
        yield
        return
    token = _STORE.set(OrderedDict())
    try:
        yield
    finally:
        _STORE.reset(token)


def reuse(key: Callable[[], tuple], compute: Callable[[], T]) -> T:
    """``compute()``, or a copy of the result an earlier call with an equal key gave inside the same
    :func:`reusing_results` block. Outside a block: ``compute()`` (the key is not even made).

    Args:
        key: makes the parts of the key (strings, numbers, arrays, tensors; see :func:`digest`); it must cover
            everything the result depends on.
        compute: computes the result.

    Returns:
        The result (a deep copy of the kept one: callers may change it).

    Example:
        >>> reuse(lambda: ("anything",), lambda: 42)  # no block: computed
        42
    """
    store = _STORE.get()
    if store is None:
        return compute()
    name = digest(*key())
    if name in store:
        store.move_to_end(name)
        return copy.deepcopy(store[name][0])
    result = compute()
    size = _nbytes(result)
    if size <= MAX_BYTES:
        store[name] = (copy.deepcopy(result), size)
        while len(store) > MAX_ENTRIES or sum(kept for _, kept in store.values()) > MAX_BYTES:
            store.popitem(last=False)
    return result


def keep(key: Callable[[], tuple], result: Any) -> None:
    """Make ``result`` what :func:`reuse` with an equal key gives from now on inside the current block (replacing
    what it kept); outside a block, nothing. For a result another step decided: the partition K was read from."""
    store = _STORE.get()
    if store is not None:
        store.pop(digest(*key()), None)
        reuse(key, lambda: result)


def digest(*parts: Any) -> str:
    """A digest of ``parts``: arrays and tensors by dtype, shape and bytes, a module by its parameters and buffers
    (names, dtypes, shapes, bytes), anything else by its ``repr``.

    Example:
        >>> digest("embed", np.zeros(3)) == digest("embed", np.zeros(3)) != digest("embed", np.ones(3))
        True
    """
    h = hashlib.blake2b(digest_size=20)
    for part in parts:
        if isinstance(part, torch.nn.Module):
            for name, tensor in part.state_dict().items():
                h.update(name.encode())
                _update(h, tensor)
        elif isinstance(part, (np.ndarray, torch.Tensor)):
            _update(h, part)
        else:
            h.update(repr(part).encode())
        h.update(b"\x00")
    return h.hexdigest()


def _nbytes(value: Any) -> int:
    """The bytes of the arrays ``value`` holds (itself, in a tuple / list / dict, or as an object's attributes)."""
    if isinstance(value, (np.ndarray, torch.Tensor)):
        return value.nbytes
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v) for v in value)
    if isinstance(value, dict):
        return sum(_nbytes(v) for v in value.values())
    return sum(_nbytes(v) for v in getattr(value, "__dict__", {}).values())


def _update(h, array) -> None:
    if isinstance(array, torch.Tensor):
        tensor = array.detach().cpu().contiguous()
        h.update(f"{tensor.dtype}{tuple(tensor.shape)}".encode())
        array = tensor.reshape(-1).view(torch.uint8).numpy()  # any dtype (bf16 included) as its bytes
    else:
        h.update(f"{array.dtype.str}{array.shape}".encode())
        array = np.ascontiguousarray(array)
    h.update(memoryview(array).cast("B"))


def embed(
    model,
    texts,
    batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
    show_progress_bar: bool | None = None,
    precision: str | torch.dtype | None = "auto",
) -> np.ndarray:
    """``model.embed(texts, ...)``, computed once per (encoder weights, tokenizer, pooling, texts, batch, precision)
    within a :func:`reusing_results` block: what ``train --method auto``'s signals and its pretrained candidates
    encode with the same untrained encoder. Outside a block: ``model.embed`` itself.

    Example:
        >>> with reusing_results():  # doctest: +SKIP
        ...     a, b = embed(model, texts), embed(model, texts)  # one encoding pass
    """
    if _STORE.get() is None:
        return model.embed(texts, batch_size=batch_size, show_progress_bar=show_progress_bar, precision=precision)
    texts, resolved = model._serving_arguments(texts, batch_size, precision)  # the key's texts and precision
    return reuse(
        lambda: ("embed", *encoding_identity(model), "\x00".join(texts), batch_size, resolved),
        lambda: model.embed(texts, batch_size=batch_size, show_progress_bar=show_progress_bar, precision=resolved),
    )


def encoding_identity(model) -> tuple:
    """What the pooled embeddings of a text depend on besides the text: the encoder's weights, the tokenizer, the
    pooling and the length cut (the key of a reused encoding pass)."""
    tokenizer = model._require_tokenizer()
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:  # without the truncation and padding that a call leaves set on it
        state = json.loads(backend.to_str())
        vocabulary: Any = {k: v for k, v in state.items() if k not in ("truncation", "padding")}
    else:
        vocabulary = (type(tokenizer).__name__, sorted(tokenizer.get_vocab().items()))
    config = model.config
    return model.encoder, vocabulary, config.pooling, config.normalize_embeddings, config.max_length, str(model.device)
