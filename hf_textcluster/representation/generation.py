"""Cluster names written by a language model (optional): any ``transformers`` text-generation (decoder-only) or
text2text (encoder-decoder) model, a Hub id or a local folder, is asked for a short name from each cluster's keywords
and typical members; its answer is cleaned (one line, no markup, length-bounded) and a cluster whose answer fails or
is unusable keeps its keyword name. Answers are cached in a JSON file keyed by the generator, the prompt and the
cluster's content, so naming the same clusters again generates nothing.

No language model is a dependency of the package: pass one you have (``transformers`` loads it), or any callable
``prompt -> text``. The default names stay c-TF-IDF keywords (:class:`ClassTfidfRepresentation`).

    from hf_textcluster.representation import GeneratedNamesRepresentation
    namer = GeneratedNamesRepresentation("google/flan-t5-small", cache="runs/sccl-so/cluster_names.json")
    names = namer.names(texts, clusters, num_clusters, typicality=probabilities)
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from ..cache import write_whole
from ..modeling.validation import check_local_path
from ._base import BaseRepresentation, check_clusters, unique_names
from .ctfidf import ClassTfidfRepresentation
from .summary import typical_texts

# The prompt: {keywords} (comma-separated, best first) and {documents} (one typical member a line, "- " first).
DEFAULT_PROMPT = (
    "Here are keywords and typical texts of one group of short texts.\n"
    "Keywords: {keywords}\n"
    "Texts:\n{documents}\n"
    "Give the group a short name of two to five words.\n"
    "Name:"
)
NAMES_FILE = "cluster_names.json"
MAX_NAME_CHARS = 60
MAX_MEMBER_CHARS = 200
CACHE_FORMAT = 1
# Markup and table syntax never reach a name (it is shown in HTML, markdown tables and the pipeline's output).
_TAGS = re.compile(r"<[^>]*>")
_MARKUP = re.compile(r"[*`#|<>\[\]{}~\\]")
_PREFIX = re.compile(r"^\s*(?:[-•]+|\d+[.)])?\s*(?:(?:group|cluster|topic)?\s*(?:name|label|title)\s*[:=-])?\s*", re.I)
_EDGES = " \t\"'“”‘’.,;:!-–—"


def clean_name(text: str | None, max_chars: int = MAX_NAME_CHARS) -> str | None:
    """A generated answer as a cluster name: its first non-empty line, without tags, markdown or a leading
    ``Name:``, quotes and trailing punctuation, whitespace collapsed, cut at a word to ``max_chars``. None when
    nothing with a letter is left (the caller keeps the keyword name).

    Args:
        text: what the model generated (without the prompt).
        max_chars: the longest name kept.

    Returns:
        The cleaned name, or None.

    Example:
        >>> clean_name("  **Name:** \\"Oracle SQL joins\\".\\nBecause the texts ...")
        'Oracle SQL joins'
        >>> clean_name("### 123 ...") is None
        True
    """
    if not text:
        return None
    for line in str(text).splitlines():
        line = _MARKUP.sub(" ", _TAGS.sub(" ", line))
        line = _PREFIX.sub("", " ".join(line.split()))
        line = " ".join(line.split()).strip(_EDGES)
        if line:
            break
    else:
        return None
    if len(line) > max_chars:
        cut = line[: max_chars + 1].rsplit(" ", 1)[0] if " " in line[:max_chars] else line[:max_chars]
        line = cut.strip(_EDGES)
    return line if any(ch.isalpha() for ch in line) else None


class GeneratorLoadError(ValueError):
    """The generation model itself cannot be loaded: one error for the whole naming, not a fallback per cluster."""


class _TransformersGenerator:
    """Greedy generation with a causal or sequence-to-sequence language model (loaded on first use). A tokenizer with a
    chat template (an instruction-tuned model) gets the prompt as one user message; any other, the prompt as is."""

    def __init__(self, name_or_path: str, max_new_tokens: int, device: str | None):
        self.name_or_path = name_or_path
        self.max_new_tokens = max_new_tokens
        self.device = device

    @functools.cached_property
    def _loaded(self):
        """``(tokenizer, model, whether it is sequence-to-sequence)``, loaded on first use."""
        from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

        try:
            config = AutoConfig.from_pretrained(self.name_or_path)
            tokenizer = AutoTokenizer.from_pretrained(self.name_or_path)
            auto = AutoModelForSeq2SeqLM if getattr(config, "is_encoder_decoder", False) else AutoModelForCausalLM
            model = auto.from_pretrained(self.name_or_path)
        except (OSError, ValueError) as err:
            raise GeneratorLoadError(
                f"`generator` {self.name_or_path!r} could not be loaded as a text-generation or text2text model "
                f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}); give a Hub id or a local "
                "folder of one (with HF_HUB_OFFLINE=1 only a local folder or the Hub cache works)."
            ) from err
        if self.device:
            model.to(self.device)
        model.eval()
        return tokenizer, model, bool(getattr(config, "is_encoder_decoder", False))

    def encode(self, prompt: str):
        """The model's inputs for ``prompt`` (through the chat template where the tokenizer has one)."""
        tokenizer, model, seq2seq = self._loaded
        if getattr(tokenizer, "chat_template", None) and not seq2seq:
            text = tokenizer.apply_chat_template(
                [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
            )
            return tokenizer(text, return_tensors="pt", add_special_tokens=False).to(model.device)
        return tokenizer(prompt, return_tensors="pt").to(model.device)

    def __call__(self, prompt: str) -> str:
        import torch

        inputs = self.encode(prompt)
        tokenizer, model, seq2seq = self._loaded
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        with torch.inference_mode():
            output = model.generate(
                **inputs, max_new_tokens=self.max_new_tokens, do_sample=False, num_beams=1, pad_token_id=pad
            )
        new_tokens = output[0] if seq2seq else output[0, inputs["input_ids"].shape[1] :]
        return tokenizer.decode(new_tokens, skip_special_tokens=True)


class GeneratedNamesRepresentation(BaseRepresentation):
    """Cluster names written by a language model from each cluster's keywords and typical members.

    The keywords come from ``keywords`` (c-TF-IDF by default, which :meth:`extract` returns); each cluster's prompt is
    ``prompt`` with ``{keywords}`` and ``{documents}`` filled in; the model's answer is cleaned by :func:`clean_name`.
    A cluster whose generation raises, or whose answer is unusable, keeps its keyword name (``"oracle · sql ·
    table"``); :attr:`sources` says which clusters got which. Names are unique (a repeated one gets ``" (k)"``).

    Args:
        generator: a Hub id or local folder of a ``transformers`` causal LM (GPT-2, Llama, Qwen, ...) or
            sequence-to-sequence LM (T5, FLAN-T5, BART, ...), generated greedily; or any callable ``prompt -> str``.
        prompt: the template (:data:`DEFAULT_PROMPT`); must contain ``{keywords}`` and may contain ``{documents}``.
        keywords: the representation whose keywords go into the prompt (default: ``ClassTfidfRepresentation()``).
        num_keywords: keywords per prompt.
        num_members: typical members per prompt.
        max_new_tokens: the longest answer generated.
        max_chars: the longest name kept.
        cache: a JSON file of earlier answers (read and written; ``None``: no cache), e.g.
            ``<model>/cluster_names.json``.
        device: where the generator runs (default: CPU).

    Raises:
        ValueError: a prompt without ``{keywords}``, a generator that is neither a string nor a callable.
        FileNotFoundError: ``generator`` is a local path (``./model``, ``/models/x``) that does not exist.

    Example:
        >>> namer = GeneratedNamesRepresentation(lambda prompt: "Oracle SQL")
        >>> namer.names(["sql join", "sql table", "git push"], [0, 0, 1], 2)[0]
        'Oracle SQL'
    """

    def __init__(
        self,
        generator: str | os.PathLike | Callable[[str], str],
        *,
        prompt: str = DEFAULT_PROMPT,
        keywords: BaseRepresentation | None = None,
        num_keywords: int = 8,
        num_members: int = 3,
        max_new_tokens: int = 16,
        max_chars: int = MAX_NAME_CHARS,
        cache: str | os.PathLike | None = None,
        device: str | None = None,
    ):
        if not isinstance(prompt, str) or "{keywords}" not in prompt:
            raise ValueError("`prompt` must be a string containing {keywords} (and optionally {documents}).")
        try:
            prompt.format(keywords="", documents="")
        except (KeyError, IndexError, ValueError) as err:
            raise ValueError(
                f"`prompt` may only use the fields {{keywords}} and {{documents}} (double other braces), got: {err}."
            ) from None
        if isinstance(generator, (str, os.PathLike)):
            self.generator_id = os.fspath(generator)
            if not self.generator_id:
                raise ValueError("`generator` is empty: give a Hub id or a local folder of a generation model.")
            check_local_path(self.generator_id, "generator")
            self._generate = _TransformersGenerator(self.generator_id, max_new_tokens, device)
        elif callable(generator):
            self.generator_id = getattr(generator, "__qualname__", type(generator).__name__)
            self._generate = generator
        else:
            raise ValueError(
                f"`generator` must be a Hub id, a local folder or a callable prompt -> text, got {type(generator)}."
            )
        for name, value in (("num_keywords", num_keywords), ("num_members", num_members)):
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"`{name}` must be a whole number >= 0, got {value!r}.")
        self.prompt = prompt
        self.keywords = keywords or ClassTfidfRepresentation(top_n=max(num_keywords, 1))
        self.num_keywords = num_keywords
        self.num_members = num_members
        self.max_new_tokens = max_new_tokens
        self.max_chars = max_chars
        self.cache = Path(cache) if cache is not None else None
        self.sources: dict[int, str] = {}

    def extract(self, texts: Sequence[str], clusters: Sequence[int], num_clusters: int) -> dict[int, list[str]]:
        """The keywords of each cluster (those of ``keywords``, what the prompts show)."""
        return self.keywords.extract(texts, clusters, num_clusters)

    def prompts(
        self,
        texts: Sequence[str],
        clusters: Sequence[int],
        num_clusters: int,
        typicality: Sequence[float] | None = None,
        keywords: Mapping[int, Sequence[str]] | None = None,
    ) -> dict[int, str]:
        """The prompt of every cluster that holds texts (see :meth:`names` for the arguments)."""
        texts, clusters = check_clusters(texts, clusters)
        scores = None if typicality is None else np.asarray(typicality, dtype=np.float64)
        if scores is not None and scores.shape != (len(texts),):
            raise ValueError(f"`typicality` must hold one value per text ({len(texts)}), got shape {scores.shape}.")
        keywords = keywords if keywords is not None else self.extract(texts, clusters, num_clusters)
        prompts = {}
        one_line = lambda text: " ".join(str(text).split())[:MAX_MEMBER_CHARS]  # noqa: E731
        for k in range(num_clusters):
            members = typical_texts(texts, np.flatnonzero(clusters == k), scores, self.num_members, one_line)
            if not members:
                continue
            prompts[k] = self.prompt.format(
                keywords=", ".join(list(keywords.get(k, []))[: self.num_keywords]) or "(none)",
                documents="\n".join(f"- {m}" for m in members),
            )
        return prompts

    def _key(self, prompt: str) -> str:
        content = json.dumps([self.generator_id, self.max_new_tokens, prompt], ensure_ascii=False)
        return hashlib.sha256(content.encode("utf-8")).hexdigest()

    def _read_cache(self) -> dict:
        data = None
        if self.cache is not None and self.cache.is_file():
            try:
                data = json.loads(self.cache.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                warnings.warn(f"{self.cache} is not a readable names cache: generating again.", stacklevel=3)
        if not isinstance(data, dict) or not isinstance(data.get("answers"), dict):
            return {"format": CACHE_FORMAT, "answers": {}}
        return data

    def names(
        self,
        texts: Sequence[str],
        clusters: Sequence[int],
        num_clusters: int,
        typicality: Sequence[float] | None = None,
        keywords: Mapping[int, Sequence[str]] | None = None,
    ) -> dict[int, str]:
        """A short name for every cluster ``0 .. num_clusters - 1``.

        Args:
            texts: the clustered texts.
            clusters: one cluster id per text.
            num_clusters: K (an empty cluster keeps its keyword name, ``cluster_<k>``).
            typicality: one score per text, higher = more typical of its cluster (e.g. its assignment probability);
                the most typical members go into the prompt. Default: the first members in text order.
            keywords: the keywords to show (default: :meth:`extract` on ``texts``).

        Returns:
            ``{cluster: name}``; :attr:`sources` maps each cluster to ``"generated"`` or ``"keywords"``.
        """
        clusters = np.asarray(clusters, dtype=int)
        keywords = keywords if keywords is not None else self.extract(texts, clusters, num_clusters)
        fallback = self.labels({k: list(keywords.get(k, [])) for k in range(num_clusters)})
        prompts = self.prompts(texts, clusters, num_clusters, typicality, keywords)
        cache = self._read_cache()
        answers = cache["answers"]
        names, self.sources = {}, {}
        failures = []
        for k in range(num_clusters):
            name = None
            if k in prompts:
                key = self._key(prompts[k])
                if key not in answers:
                    try:
                        answers[key] = str(self._generate(prompts[k]))
                    except GeneratorLoadError:
                        raise  # the generator itself is wrong: one clear error, not K fallbacks
                    except (RuntimeError, ValueError, IndexError, TypeError) as err:
                        failures.append(f"cluster {k}: {type(err).__name__}: {err}")
                if key in answers:
                    name = clean_name(answers[key], self.max_chars)
            self.sources[k] = "generated" if name else "keywords"
            names[k] = name or fallback[k]
        if failures:
            warnings.warn(
                f"Generation failed for {len(failures)} cluster(s), which keep their keyword names: {failures[0]}",
                stacklevel=2,
            )
        names = unique_names(names)
        cache["format"] = CACHE_FORMAT  # its "answers" are ``answers``, updated in place
        cache["last"] = {
            "generator": self.generator_id,
            "prompt": self.prompt,
            "names": {str(k): v for k, v in names.items()},
            "sources": {str(k): v for k, v in self.sources.items()},
        }
        if self.cache is not None:
            self.cache.parent.mkdir(parents=True, exist_ok=True)
            # whole or not at all: an interrupted run leaves the previous cache
            write_whole(self.cache, json.dumps(cache, indent=1, sort_keys=True, ensure_ascii=False))
        return names
