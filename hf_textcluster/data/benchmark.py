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
* With ``augmentation=`` (``"sccl_contextual"``, ``"mist_contextual"`` or ``"aecl_eda"``), it joins the
  precomputed views ``<augmented_dir>/<family>/<name>.csv`` as ``text_aug1``/``text_aug2``; ``augmented_dir``
  defaults to ``<data_dir>/augmented``. How the views are joined is described in
  :mod:`hf_textcluster.data.precomputed`.

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
from dataclasses import dataclass
from pathlib import Path

import datasets
from datasets.fingerprint import Hasher

from ..modeling.validation import validate_texts
from .corpora import BENCHMARKS, CORPORA, CorpusSpec, resolve_benchmark_name
from .precomputed import JoinedRows, augmented_file, join_views, missing_file_error, resolve_augmentation
from .readers import parse_raw, read_text_label_csv

DATA_DIR_ENV = "HF_TEXTCLUSTER_DATA_DIR"
_VERSION = datasets.Version("1.0.0")


@dataclass
class ShortTextClusteringConfig(datasets.BuilderConfig):
    """Config of one corpus.

    Attributes:
        augmentation: ``None`` (columns ``text``, ``label``) or the family of precomputed views to join as
            ``text_aug1``/``text_aug2``: ``"sccl_contextual"``, ``"mist_contextual"`` or ``"aecl_eda"``.
        augmented_dir: the folder holding ``<family>/<name>.csv``; default ``<data_dir>/augmented``.
    """

    augmentation: str | None = None
    augmented_dir: str | None = None


def _input_files(name: str, data_dir, augmentation, augmented_dir) -> tuple[Path | None, Path | None]:
    """(primary CSV or None when downloading, augmented CSV or None) for these settings."""
    primary = Path(data_dir) / f"{name}.csv" if data_dir else None
    if augmentation is None:
        return primary, None
    root = augmented_dir or (Path(data_dir) / "augmented" if data_dir else None)
    if root is None:
        raise ValueError(
            f"augmentation={augmentation!r} needs the precomputed views: pass data_dir= (the views are read "
            f"from <data_dir>/augmented) or augmented_dir=, or set {DATA_DIR_ENV}."
        )
    return primary, augmented_file(augmentation, name, root)


def _repository(url: str) -> str:
    """The GitHub repository of a pinned raw URL (raw.githubusercontent.com or codeload.github.com)."""
    owner, name = url.split("://", 1)[1].split("/")[1:3]
    return f"https://github.com/{owner}/{name}"


def _fingerprint(files) -> str:
    """Hash of this sub-package's parsing code and of the (size, mtime) of the input files."""
    here = Path(__file__).parent
    code = [(here / module).read_bytes() for module in ("benchmark.py", "corpora.py", "precomputed.py", "readers.py")]
    stats = [(str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) for p in files if p is not None and p.exists()]
    return Hasher.hash((code, stats))


class ShortTextClusteringBenchmark(datasets.GeneratorBasedBuilder):
    """Builder of the short-text clustering benchmarks; one config per corpus (see :data:`BENCHMARKS`).

    Args:
        config_name: one of :data:`~hf_textcluster.data.BENCHMARKS` (case and ``-``/``_`` insensitive): the tuning
            corpora ``agnews, searchsnippets, stackoverflow, biomedical, googlenews_ts, googlenews_t, googlenews_s,
            tweet``, the confirmation corpora ``trec6, dbpedia, bbc`` and the confirmation-only ones.
        data_dir: folder with ``<name>.csv``; ``None`` downloads the raw public sources.
        augmentation, augmented_dir: see :class:`ShortTextClusteringConfig`.
        cache_dir: the ``datasets`` cache folder; any other ``datasets.DatasetBuilder`` argument is passed on.

    Raises:
        ValueError: unknown corpus or augmentation name, or augmentation without data_dir/augmented_dir.
        FileNotFoundError: (at ``download_and_prepare``) a file that ``data_dir``/``augmented_dir`` should hold is
            missing; the message names the exact path and the fix.
    """

    VERSION = _VERSION
    BUILDER_CONFIG_CLASS = ShortTextClusteringConfig
    BUILDER_CONFIGS = [
        ShortTextClusteringConfig(name=name, version=_VERSION, description=spec.description)
        for name, spec in CORPORA.items()
    ]
    DEFAULT_WRITER_BATCH_SIZE = 10_000

    def __init__(
        self,
        config_name: str | None = None,
        *,
        data_dir: str | os.PathLike | None = None,
        augmentation: str | None = None,
        augmented_dir: str | os.PathLike | None = None,
        dataset_name: str | None = None,
        hash: str | None = None,  # noqa: A002 (the name datasets uses)
        **kwargs,
    ):
        if config_name is None:
            raise ValueError(f"Pass config_name=, one of: {', '.join(BENCHMARKS)}.")
        config_name = resolve_benchmark_name(config_name)
        augmentation = resolve_augmentation(augmentation)
        data_dir = os.fspath(data_dir) if data_dir is not None else None
        augmented_dir = os.fspath(augmented_dir) if augmented_dir is not None else None
        if hash is None:
            hash = _fingerprint(_input_files(config_name, data_dir, augmentation, augmented_dir))
        if augmentation is not None:
            kwargs["augmentation"] = augmentation
        if augmented_dir is not None:
            kwargs["augmented_dir"] = augmented_dir
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
        features = {"text": datasets.Value("string"), "label": datasets.ClassLabel(names=list(self.spec.label_names))}
        if self.config.augmentation is not None:
            features.update(text_aug1=datasets.Value("string"), text_aug2=datasets.Value("string"))
        return datasets.DatasetInfo(
            description=self.spec.description,
            features=datasets.Features(features),
            homepage=" ; ".join(dict.fromkeys(_repository(url) for url in self.spec.urls.values())),
        )

    def _split_generators(self, dl_manager):
        # All reading, checking and joining happens here, not in _generate_examples, so that a bad file raises
        # its own error (datasets wraps errors raised while generating in a generic DatasetGenerationError).
        name, config, spec = self.config.name, self.config, self.spec
        primary, augmented = _input_files(name, config.data_dir, config.augmentation, config.augmented_dir)
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
        if augmented is None:
            table = JoinedRows([text for text, _ in rows], [label for _, label in rows])
        else:
            if not augmented.is_file():
                raise missing_file_error(config.augmentation, name, augmented)
            table = join_views(rows, augmented, config.augmentation, name)
            # Saved with the prepared dataset, so a cached copy still says where its text and views come from.
            self.info.description = f"{spec.description} Views: {config.augmentation} ({augmented}), " + (
                "row-aligned: primary text and labels."
                if table.row_aligned
                else "not row-aligned: `text` is the augmented file's own text, labels its partition in primary ids."
            )
        table.labels = [spec.label_index(label) for label in table.labels]
        return [datasets.SplitGenerator(name=datasets.Split.TRAIN, gen_kwargs={"table": table})]

    def _generate_examples(self, table):
        columns = {"text": table.texts, "label": table.labels}
        if table.views1 is not None:
            columns.update(text_aug1=table.views1, text_aug2=table.views2)
        yield from enumerate(dict(zip(columns, values)) for values in zip(*columns.values()))
