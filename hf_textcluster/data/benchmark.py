"""A ``datasets`` builder for the short-text clustering benchmarks (the in-house corpora and the confirmation-only
ones; see :mod:`hf_textcluster.data.corpora` for the sets).

datasets 4+/5 has no dataset scripts: the builder is a class of this package, used directly::

    builder = ShortTextClusteringBenchmark(config_name="stackoverflow", data_dir="../shared/data")
    builder.download_and_prepare()
    dataset = builder.as_dataset("train")       # columns: text, label (ClassLabel)

or, more simply, :func:`hf_textcluster.data.load_benchmark`.

* With ``data_dir``, the builder reads ``<data_dir>/<name>.csv`` (header ``text,label``).
* Without it, it downloads the raw public files named in SOURCES.md (raw.githubusercontent.com, pinned commits)
  through the download manager and parses them into the same rows.

The ``label`` column is a ``ClassLabel`` whose names are the real class names where the source gives them
(agnews, searchsnippets, stackoverflow, dbpedia, bbc, trec6's coarse codes, the intents' names) and the raw label ids
otherwise, in numeric order. Its integer values are
therefore 0-based positions in that list, not the raw ids (stackoverflow raw id 1 -> 0 = "wordpress"; tweet has
89 classes whose raw ids range over 1..110: the ``ClassLabel`` has 89 names).

The cache directory of a prepared dataset depends on the builder's code and on the size and modification time of
its input files, so editing either regenerates the dataset instead of reusing a stale copy.
"""

from __future__ import annotations

import os
from pathlib import Path

import datasets
from datasets.fingerprint import Hasher

from ..modeling.validation import validate_texts
from .corpora import BENCHMARKS, CORPORA, CorpusSpec, resolve_benchmark_name
from .readers import parse_raw, read_text_label_csv

DATA_DIR_ENV = "HF_TEXTCLUSTER_DATA_DIR"
_VERSION = datasets.Version("1.0.0")


def _input_file(name: str, data_dir) -> Path | None:
    """The corpus' CSV, or None when downloading."""
    return Path(data_dir) / f"{name}.csv" if data_dir else None


def _repository(url: str) -> str:
    """The GitHub repository of a pinned raw URL (raw.githubusercontent.com or codeload.github.com)."""
    owner, name = url.split("://", 1)[1].split("/")[1:3]
    return f"https://github.com/{owner}/{name}"


def _fingerprint(file: Path | None) -> str:
    """Hash of this sub-package's parsing code and of the (size, mtime) of the input file."""
    here = Path(__file__).parent
    code = [(here / module).read_bytes() for module in ("benchmark.py", "corpora.py", "readers.py")]
    stats = [(str(file.resolve()), file.stat().st_size, file.stat().st_mtime_ns)] if file and file.exists() else []
    return Hasher.hash((code, stats))


class ShortTextClusteringBenchmark(datasets.GeneratorBasedBuilder):
    """Builder of the short-text clustering benchmarks; one config per corpus (see :data:`BENCHMARKS`).

    Args:
        config_name: one of :data:`~hf_textcluster.data.BENCHMARKS` (case and ``-``/``_`` insensitive): the tuning
            corpora ``agnews, searchsnippets, stackoverflow, biomedical, googlenews_ts, googlenews_t, googlenews_s,
            tweet``, the confirmation corpora ``trec6, dbpedia, bbc`` and the confirmation-only ones.
        data_dir: folder with ``<name>.csv``; ``None`` downloads the raw public sources.
        cache_dir: the ``datasets`` cache folder; any other ``datasets.DatasetBuilder`` argument is passed on.

    Raises:
        ValueError: unknown corpus name.
        FileNotFoundError: (at ``download_and_prepare``) ``data_dir`` does not hold the corpus' file; the message
            names the exact path and the fix.
    """

    VERSION = _VERSION
    BUILDER_CONFIGS = [
        datasets.BuilderConfig(name=name, version=_VERSION, description=spec.description)
        for name, spec in CORPORA.items()
    ]
    DEFAULT_WRITER_BATCH_SIZE = 10_000

    def __init__(
        self,
        config_name: str | None = None,
        *,
        data_dir: str | os.PathLike | None = None,
        dataset_name: str | None = None,
        hash: str | None = None,  # noqa: A002 (the name datasets uses)
        **kwargs,
    ):
        if config_name is None:
            raise ValueError(f"Pass config_name=, one of: {', '.join(BENCHMARKS)}.")
        config_name = resolve_benchmark_name(config_name)
        data_dir = os.fspath(data_dir) if data_dir is not None else None
        if hash is None:
            hash = _fingerprint(_input_file(config_name, data_dir))
        super().__init__(
            config_name=config_name,
            data_dir=data_dir,
            dataset_name=dataset_name or "short_text_clustering_benchmark",
            hash=hash,
            **kwargs,
        )

    @property
    def spec(self) -> CorpusSpec:
        return CORPORA[self.config.name]

    def _info(self) -> datasets.DatasetInfo:
        labels = datasets.ClassLabel(names=list(self.spec.label_names))
        return datasets.DatasetInfo(
            description=self.spec.description,
            features=datasets.Features({"text": datasets.Value("string"), "label": labels}),
            homepage=" ; ".join(dict.fromkeys(_repository(url) for url in self.spec.urls.values())),
        )

    def _split_generators(self, dl_manager):
        # All reading, checking and joining happens here, not in _generate_examples, so that a bad file raises
        # its own error (datasets wraps errors raised while generating in a generic DatasetGenerationError).
        name, config, spec = self.config.name, self.config, self.spec
        primary = _input_file(name, config.data_dir)
        if primary is not None:
            if not primary.is_file():
                raise FileNotFoundError(
                    f"Benchmark file not found: {primary.resolve()} (data_dir={config.data_dir!r}). Point "
                    f"--data-dir / data_dir= or the {DATA_DIR_ENV} environment variable to the folder that holds "
                    f"{name}.csv, or pass data_dir=None to download the raw public sources."
                )
            rows, source = read_text_label_csv(primary), str(primary)
        else:
            rows, source = parse_raw(spec, dl_manager.download(dict(spec.urls))), " + ".join(spec.urls.values())
        validate_texts([text for text, _ in rows], argument_name=f"texts of {source}")
        rows = [(text, spec.label_index(label)) for text, label in rows]
        # one tuple, not a list: datasets treats list arguments as shards
        return [datasets.SplitGenerator(name=datasets.Split.TRAIN, gen_kwargs={"rows": tuple(rows)})]

    def _generate_examples(self, rows):
        yield from enumerate({"text": text, "label": label} for text, label in rows)
