"""``Clusterer``: a trained clusterer and everything that reads or edits it, on one object (BERTopic's way:
``merge_topics``, ``reduce_topics``, ``set_topic_labels`` and ``get_topic_info`` are methods of one object); the same
edits on a model folder, which the command line's edit commands call, are
:func:`~hf_textcluster.runs.saved_edits.edit_saved_model`.

The served model (``Clusterer.model``, a ``PreTrainedModel``) is what ships and serves; what edits it is package
code: the weight arithmetic of :mod:`hf_textcluster.editing`, names and the clusters' summary
(:mod:`hf_textcluster.representation`), the choice of a served partition (:mod:`hf_textcluster.choosing`). Every
edit changes the Clusterer's model in place and records itself; ``save()`` writes it back to its folder, keeping the
state it replaces in ``<folder>/previous/`` (``restore()`` swaps them back), or to another folder.

Example:
    >>> clusterer = Clusterer.load("runs/tickets")                          # doctest: +SKIP
    >>> clusterer.merge([[3, 7]]).rename({3: "refunds"}).save()              # doctest: +SKIP
    >>> clusterer.cluster_info()[["cluster", "name", "size"]]               # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import fields, replace

import numpy as np

from ..cache import write_whole
from ..choosing.serving import serve_partition
from ..editing.clusters import initialize_clusters
from ..editing.curation import merge_clusters, reduce_outliers, split_cluster, start_online, update
from ..editing.describing import (
    describe_edited_clusters,
    name_edited_clusters,
    recalibrate,
    reduce_groups,
    warn_if_unlike_calibration,
    warn_if_unlike_head,
)
from ..editing.rows import UpdateResult
from ..modeling.encoding_passes import DEFAULT_ENCODE_BATCH_SIZE
from ..modeling.input_checks import CANDIDATES, SERVE_CHOICES, check_num_clusters
from ..modeling.loading_checks import check_finite_weights
from ..modeling.serialization import folder_lock, recover_folder
from ..modeling.validation import check_local_path, validate_texts
from ..representation import DEFAULT_PROMPT, NAMES_FILE, name_clusters, rename_clusters
from ..representation.summary import SUMMARY_KEY, assign_embeddings, merge_summaries, read_cluster_summary
from ..reuse import embed, reusing_results
from .candidate_file import check_kept_candidate, kept_candidates, serve_kept_candidate
from .clusterer_outputs import ClustererOutputs
from .folder import RunFolder, load_clusterer, read_folder_text, read_online_state, save_back_target
from .record import RunRecord
from .request import TrainingRequest
from .saving import ASSIGNMENTS_FILE, ONLINE_STATE_FILE, model_card_file, restore_previous, save_model_folder

__all__ = ["EDITS", "Clusterer"]

# The edits of a saved model, by the name of their method (and command).
EDITS = ("merge", "split", "reduce", "reduce_outliers", "update", "rename", "name", "refine", "recluster", "calibrate")
# The edits that change which cluster a text is in: the scores measured at training no longer describe the model.
_PARTITION_EDITS = {"merge", "split", "reduce", "reduce_outliers", "update", "refine", "recluster"}
CALIBRATION_SAMPLE = 10_000  # the texts a calibration is fitted on, a seeded sample (as `train` does)


class Clusterer(ClustererOutputs):
    """A trained clusterer with its run folder and training texts: fit or load it, read its clusters, edit them,
    save it.

    Args:
        num_clusters: for :meth:`fit`: K, or ``"auto"`` (chosen from the embeddings); by default the number of
            classes of a labelled ``Dataset``, else ``"auto"`` (as ``train`` and ``train_clusterer``).
        method: for :meth:`fit`: ``"auto"`` (the default run) or a method name.
        **train_kwargs: for :meth:`fit`: the other fields of :class:`~hf_textcluster.runs.request.TrainingRequest`
            (the keywords of :func:`~hf_textcluster.runs.api.train_clusterer`; ``dataset`` and ``output_dir``: fit's
            defaults); a whole request: :meth:`from_request`.

    Attributes:
        model: the served model (a ``TextClusteringPreTrainedModel``), once fitted or loaded.
        path: the folder it was fitted into, loaded from or last saved to (a temporary folder after ``fit`` without
            one; None for a Hub model not saved yet).
        labels_, probabilities_: each training text's cluster id and confidence (see ``ClustererOutputs``).
        run: its run record (``training_run.json``), with the edits not saved yet appended to ``run.edits``.
        training_result_: the ``TrainingResult`` of the last :meth:`fit` (metrics, trainer, ...: what ``train`` prints).

    Example:
        >>> clusterer = Clusterer(num_clusters=3)                              # doctest: +SKIP
        >>> clusterer.fit_transform(texts)                                    # doctest: +SKIP
        array([1, 0, 2, ...])
        >>> clusterer.predict(["how do i join two tables in oracle"])         # doctest: +SKIP
        array([1])
        >>> clusterer.visualize_documents()                                   # doctest: +SKIP
        >>> clusterer.save("runs/tickets")                                    # doctest: +SKIP
    """

    def __init__(self, num_clusters: int | str | None = None, *, method: str = "auto", **train_kwargs):
        self.num_clusters, self.method, self.train_kwargs = num_clusters, method, train_kwargs
        self.path: str | None = None
        self.run = RunRecord()
        self._texts: list[str] | None = None  # the training texts, once known
        self._unsaved: list[str] = []  # the edits since the last save
        self._assignments: np.ndarray | None = None  # the training texts' clusters after an edit, when known
        self._files: dict[str, str] = {}  # file name -> text to write on save (the names' cache)
        self._candidates: tuple[list[str], np.ndarray] | None = None  # refine: texts and the served partition
        self._given_texts: list[str] | None = None  # the texts an edit was given: the card's keywords come from them
        self._embedded: tuple[list[str], np.ndarray] | None = None  # the training texts and their embeddings
        self._workdir: tempfile.TemporaryDirectory | None = None  # the run folder of a fit without output_dir

    # ----- fit, load, read ----------------------------------------------------------------------------------------
    @classmethod
    def from_request(cls, request: TrainingRequest) -> Clusterer:
        """A clusterer whose :meth:`fit` trains the run ``request`` describes (its fields as keywords)."""
        return cls(**{field.name: getattr(request, field.name) for field in fields(request)})

    def fit(self, texts=None, output_dir: str | os.PathLike | None = None, *, overwrite: bool = False) -> Clusterer:
        """Train the run of one :class:`~hf_textcluster.runs.request.TrainingRequest`, the constructor's keywords, on
        ``texts`` (a list of strings or a ``datasets.Dataset``; default: its ``dataset``) into ``output_dir`` (default:
        its own, else a temporary folder this clusterer owns, removed with it: :meth:`save` keeps the model), replacing
        a trained model there only with ``overwrite`` or when it is this clusterer's own. Then :attr:`labels_` and
        :attr:`probabilities_` hold the training texts' clusters and confidences. Returns self."""
        from .api import make_request, run_training

        options = {"num_clusters": self.num_clusters, **self.train_kwargs}
        own_dir = options.pop("output_dir", None)  # a request's folder, unless fit is given another
        output_dir = own_dir if output_dir is None else output_dir
        if texts is not None:  # these texts, not the file a request's dataset was read from
            options.update(input_file=None, dataset=texts)
        if output_dir is None:
            self._workdir = tempfile.TemporaryDirectory(prefix="hf-textcluster-fit-")
        output_dir = os.fspath(output_dir or self._workdir.name)
        own = self.path is not None and RunFolder(output_dir).is_folder(self.path)
        options["overwrite"] = overwrite or own or options.get("overwrite", False)
        request = make_request(self.method, options.pop("dataset", None), output_dir, **options)
        with reusing_results():  # the run's own encoding pass of the texts, for labels_ and the figures
            result = run_training(request)
            self._texts, self._embedded = list(result.trainer.train_dataset["text"]), None
            if getattr(result.trainer, "train_assignments", None) is not None:  # the run encoded them: reused
                encode = result.trainer.encode_options
                self._embedded = (self._texts, embed(result.model, self._texts, show_progress_bar=False, **encode))
        self.model, self.path, self.training_result_ = result.model, output_dir, result
        self.run = RunFolder(self.path).read_record() or RunRecord()
        self._unsaved, self._assignments, self._files, self._candidates = [], None, {}, None
        return self

    def fit_transform(self, texts, output_dir: str | os.PathLike | None = None, **kwargs) -> np.ndarray:
        """:meth:`fit`, then each training text's cluster id (:attr:`labels_`; BERTopic's ``fit_transform``)."""
        return self.fit(texts, output_dir, **kwargs).labels_

    @classmethod
    def load(cls, path: str | os.PathLike, **kwargs) -> Clusterer:
        """The clusterer saved in ``path`` (a model folder or a Hub id), with its run record, the online state an
        ``update`` kept and, when asked for, its training texts (found again through ``training_run.json``).
        ``kwargs`` go to ``from_pretrained``."""
        path = os.fspath(path)
        check_local_path(path, "path")
        clusterer = cls()
        clusterer.model = load_clusterer(path, **kwargs)
        if os.path.isdir(path):
            clusterer.path, clusterer.run = path, RunFolder(path).read_record() or RunRecord()
            clusterer.model.online_state_ = read_online_state(path)
        return clusterer

    # ----- edits: each changes the model here and records itself --------------------------------------------------
    def _edited(self, record: dict, assignments: np.ndarray | None = None) -> None:
        op = record["op"]
        if op == "refine":  # the served partition may be another space's: its embeddings are computed again
            self._embedded = None
        if op in _PARTITION_EDITS:  # the training texts' saved clusters describe the model if recomputed on them
            self._assignments = assignments
        self._unsaved.append(op)
        source = {"source": os.path.abspath(self.path)} if self.path else {}
        time_now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        record = {**record, "num_clusters": self.model.config.num_clusters, **source, "time": time_now}
        self.run.edits = [*(self.run.edits or []), record]

    def _describe(self, texts, edited, batch_size) -> np.ndarray | None:
        """Name the edited clusters and save the summary again on ``texts``; the clusters of the training texts."""
        clusters = describe_edited_clusters(self.model, texts, edited, batch_size)
        return clusters if texts is self._texts else None

    def merge(
        self,
        clusters: Sequence[Sequence[int]],
        texts: Sequence[str] | None = None,
        batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
    ) -> Clusterer:
        """Merge each group of ``clusters`` (e.g. ``[[3, 7], [1, 4, 9]]``) into one cluster (BERTopic's
        ``merge_topics``): :func:`~hf_textcluster.editing.merge_clusters`, then the merged clusters named after
        their keywords and the summary recomputed on ``texts`` (default: the training texts; without any, the
        calibration and the summary are merged). ``model.cluster_mapping_`` gives each old id's new id."""
        texts = self._texts_for("merge", texts, required=False)
        merged = merge_clusters(self.model, clusters, texts=texts, batch_size=batch_size)
        mapping = merged.cluster_mapping_
        assignments = None
        if texts is not None:
            self.model = merged
            assignments = self._describe(texts, sorted({int(mapping[k]) for g in clusters for k in g}), batch_size)
        else:
            summary = merge_summaries(read_cluster_summary(self.model.config), mapping, merged.config.num_clusters)
            setattr(merged.config, SUMMARY_KEY, summary)
            self.model = merged
        groups = [sorted(int(k) for k in group) for group in clusters]
        self._edited({"op": "merge", "clusters": groups, "mapping": [int(v) for v in mapping]}, assignments)
        return self

    def split(
        self,
        cluster: int,
        num_clusters: int = 2,
        texts: Sequence[str] | None = None,
        random_state: int | None = 0,
        batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
    ) -> Clusterer:
        """Split ``cluster`` into ``num_clusters`` clusters by k-means on its texts among ``texts`` (default: the
        training texts; required): :func:`~hf_textcluster.editing.split_cluster`. The first part keeps the id, the
        others get the ids after the last; the parts are named after their keywords."""
        texts = self._texts_for("split", texts)
        k = self.model.config.num_clusters
        self.model = split_cluster(
            self.model, cluster, n=num_clusters, texts=texts, random_state=random_state, batch_size=batch_size
        )
        parts = [int(cluster), *range(k, k + int(num_clusters) - 1)]
        assignments = self._describe(texts, parts, batch_size)
        self._edited({"op": "split", "clusters": [int(cluster)], "new_ids": parts}, assignments)
        return self

    def reduce(
        self, num_clusters: int, texts: Sequence[str] | None = None, batch_size: int = DEFAULT_ENCODE_BATCH_SIZE
    ) -> Clusterer:
        """Merge the closest clusters until ``num_clusters`` remain (BERTopic's ``reduce_topics``): again and again
        the two whose calibrated centres are closest (:func:`~hf_textcluster.editing.describing.closest_merges`), by
        :meth:`merge`. ``texts``: as for :meth:`merge` (required for a model that is not calibrated)."""
        texts = self._texts_for("reduce", texts, required=False)
        groups = reduce_groups(self.model, num_clusters, texts, batch_size)
        self.merge(groups, texts=texts, batch_size=batch_size)
        self.run.amend_last_edit(reduced_to=int(num_clusters))
        return self

    def reduce_outliers(self, texts: Sequence[str] | None = None, batch_size: int = DEFAULT_ENCODE_BATCH_SIZE):
        """Put every outlier (-1) in its nearest cluster and stop flagging outliers (BERTopic's ``reduce_outliers``):
        :func:`~hf_textcluster.editing.curation.reduce_outliers` on ``texts`` (default: the training texts)."""
        texts = self._texts_for("reduce_outliers", texts)
        clusters, moved = reduce_outliers(self.model, texts, batch_size)
        self._edited({"op": "reduce_outliers", "moved": moved}, clusters if texts is self._texts else None)
        return self

    def update(
        self,
        texts: Sequence[str],
        accept_new: bool = False,
        reference_texts: Sequence[str] | None = None,
        **update_kwargs,
    ) -> UpdateResult:
        """Take in new ``texts`` without retraining the encoder: :func:`~hf_textcluster.editing.update` (the
        clusters' centres move by a running mean, an emerging group is proposed, ``accept_new`` adds it, named
        after its keywords). The running means start, the first time, from ``reference_texts`` (default: the
        training texts; else this batch starts them). ``update_kwargs``: ``far_quantile``, ``min_new_size``,
        ``new_name``, ``random_state``, ``batch_size``. Returns the
        :class:`~hf_textcluster.editing.rows.UpdateResult`."""
        texts = validate_texts(texts)
        if getattr(self.model, "online_state_", None) is None:
            reference = self._texts_for("update", reference_texts, required=False)
            if reference is not None:
                start_online(self.model, reference)
        result = update(self.model, texts, accept_new=accept_new, **update_kwargs)
        if result.accepted:
            name_edited_clusters(self.model, texts, result.clusters, [result.new_cluster])
        new = [] if result.new_cluster is None else [result.new_cluster]
        self._edited({"op": "update", "clusters": new, **result.to_dict()})
        return result

    def rename(self, names: Mapping[int | str, str]) -> Clusterer:
        """Give clusters the ``names`` you choose (cluster id -> name; BERTopic's ``set_topic_labels``):
        :func:`~hf_textcluster.representation.rename_clusters`."""
        rename_clusters(self.model, names)
        self._edited({"op": "rename", "clusters": sorted(int(k) for k in names)})
        return self

    def name(
        self,
        generator,
        prompt: str = DEFAULT_PROMPT,
        texts: Sequence[str] | None = None,
        batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
    ) -> dict[int, str]:
        """Name the clusters with a language model (``generator``: a Hub id, a local folder, or a callable
        ``prompt -> text``) from their keywords and typical ``texts`` (default: the training texts):
        :func:`~hf_textcluster.representation.name_clusters`. The answers are cached in the folder's
        ``cluster_names.json`` (written on save). Returns where each name came from (``"generated"`` or
        ``"keywords"``)."""
        texts = self._texts_for("name", texts)
        with tempfile.TemporaryDirectory(prefix="hf-textcluster-names-") as folder:
            cache = os.path.join(folder, NAMES_FILE)
            earlier = self._files.get(NAMES_FILE) or read_folder_text(self.path, NAMES_FILE)
            if earlier is not None:  # the answers already generated travel with the model
                write_whole(cache, earlier)
            name_clusters(self.model, texts, batch_size=batch_size, generator=generator, prompt=prompt, cache=cache)
            self._files[NAMES_FILE] = read_folder_text(folder, NAMES_FILE)
        sources = json.loads(self._files[NAMES_FILE]).get("last", {}).get("sources", {})
        sources = {k: sources.get(str(k), "keywords") for k in range(self.model.config.num_clusters)}
        generated = sum(source == "generated" for source in sources.values())
        name = generator if isinstance(generator, str) else getattr(generator, "__name__", type(generator).__name__)
        self.run.names = {"generator": name, "generated": generated, "file": NAMES_FILE}
        self._edited({"op": "name", "generator": name, "generated": generated})
        return sources

    def refine(
        self,
        serve: str = "auto",
        candidates: Sequence[str] = CANDIDATES,
        texts: Sequence[str] | None = None,
        sample_size: int | None = CALIBRATION_SAMPLE,
        random_state: int = 0,
        batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
    ):
        """Serve the best of the model's partitions of ``texts`` (default: the training texts), each refined by
        iterative classification or not, chosen without labels, or the one named by ``serve`` (one of
        :data:`~hf_textcluster.modeling.input_checks.CANDIDATES`, or a candidate a ``train --method auto`` run
        kept beside the model): :func:`~hf_textcluster.choosing.serving.serve_partition`; then calibrated and
        named on ``texts``. Returns the :class:`~hf_textcluster.choosing.serving.ServingChoice`."""
        kept = serve not in SERVE_CHOICES  # a candidate a `train --method auto` run kept beside the model
        if kept:
            check_kept_candidate(self.path or "", serve)  # before any text is encoded
        texts = self._texts_for("refine", texts)
        try:  # the texts train refuses (fewer distinct texts than clusters) cannot be partitioned either
            check_num_clusters(self.model.config.num_clusters, len(texts), texts=texts)
        except ValueError as err:
            raise ValueError(f"`texts`: {err}") from None
        warn_if_unlike_calibration(self.model, texts, batch_size, random_state)
        embeddings = self.model.embed(texts, batch_size=batch_size, show_progress_bar=True)
        if kept:
            choice = serve_kept_candidate(
                self.model, self.path, texts, serve, embeddings=embeddings, random_state=random_state
            )
        else:
            choice = serve_partition(
                self.model, embeddings, serve=serve, candidates=candidates, random_state=random_state
            )
        recalibrate(self.model, texts, sample_size=sample_size, random_state=random_state, batch_size=batch_size)
        self.run.serving = choice.to_dict()
        self._candidates = (texts, np.asarray(choice.labels))
        assignments = self._with_outliers(texts, choice.labels, batch_size) if texts is self._texts else None
        self._edited({"op": "refine", "served": choice.served}, assignments)
        return choice

    def recluster(
        self,
        kmeans_init: str = "best",
        texts: Sequence[str] | None = None,
        sample_size: int | None = CALIBRATION_SAMPLE,
        random_state: int = 0,
        batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
    ) -> Clusterer:
        """Re-fit the clusters by k-means on the model's own (trained) embeddings of ``texts`` (default: the
        training texts; the benchmark's "k-means after"): :func:`~hf_textcluster.editing.initialize_clusters`, then
        calibrated and named on them. Warns when the new clusters agree with the trained head's on under half of
        the texts."""
        texts = self._texts_for("recluster", texts)
        embeddings = self.model.embed(texts, batch_size=batch_size, show_progress_bar=True)
        trained = self.model.config.centroids_initialized
        before = assign_embeddings(self.model, embeddings, outliers=False).clusters if trained else None
        initialize_clusters(self.model, embeddings=embeddings, random_state=random_state, kmeans_init=kmeans_init)
        if trained:
            warn_if_unlike_head(self.model, embeddings, before)
        recalibrate(self.model, texts, sample_size=sample_size, random_state=random_state, batch_size=batch_size)
        self._edited({"op": "recluster", "kmeans_init": kmeans_init})
        return self

    def calibrate(
        self,
        texts: Sequence[str] | None = None,
        sample_size: int | None = CALIBRATION_SAMPLE,
        random_state: int = 0,
        batch_size: int = DEFAULT_ENCODE_BATCH_SIZE,
    ) -> Clusterer:
        """Calibrate the confidence and outlier distances on ``texts`` (default: the training texts):
        ``model.calibrate`` on a seeded sample of ``sample_size``. Warns when most texts are outliers for the
        current calibration."""
        texts = self._texts_for("calibrate", texts)
        warn_if_unlike_calibration(self.model, texts, batch_size, random_state)
        sampling = {"sample_size": sample_size, "random_state": random_state, "batch_size": batch_size}
        self.model.calibrate(texts, show_progress_bar=True, **sampling)
        self._edited({"op": "calibrate", "texts": len(texts)})
        return self

    # ----- save and go back -------------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike | None = None, overwrite: bool = False) -> str:
        """Save the model, its run record (with the edits appended) and what the folder keeps beside it, to its own
        folder (default) or to ``path``. A save over a model keeps that model in ``<folder>/previous/``
        (:meth:`restore` goes back to it); a folder holding another trained model is replaced only with
        ``overwrite``. Returns the folder. Raises ValueError without ``path`` for a clusterer with no folder of its
        own (fitted without one, loaded from the Hub), FileExistsError for another model's folder without ``overwrite``.
        """
        source = self.path
        if path is not None and source is not None and RunFolder(path).is_folder(source):
            path = None  # its own folder: saved in place
        if path is None and (source is None or self._workdir is not None and source == self._workdir.name):
            raise ValueError(
                "`path` is required: this clusterer has no folder of its own (fitted without one, or "
                "loaded from the Hub); save(path) keeps it."
            )
        target = save_back_target(source or "", path, overwrite=overwrite, command="save").path
        in_place = source is not None and RunFolder(target).is_folder(source)
        run = replace(self.run, num_clusters=self.model.config.num_clusters)
        if _PARTITION_EDITS & set(self._unsaved) and run.metrics:  # measured on the trained partition
            run.metrics_before_edits, run.metrics = run.metrics_before_edits or run.metrics, {}
        self._write(target, source, in_place, run)
        self.path, self.run, self._unsaved, self._files, self._candidates = target, run, [], {}, None
        if self._workdir is not None and source == self._workdir.name:
            self._workdir = None  # the temporary run folder of fit is removed: the model lives in `target`
        return target

    def _write(self, target: str, source: str | None, in_place: bool, run: RunRecord) -> None:
        """The one save of a model folder (:func:`~hf_textcluster.runs.saving.save_model_folder`): the state it
        replaces kept in ``previous/``, the model and every file beside it, all at once; what it carries over from
        the folders is read holding the target's lock, after an interrupted save there was completed or undone."""
        check_finite_weights(self.model)  # refused before anything is written, the card included
        partition_edited = bool(_PARTITION_EDITS & set(self._unsaved))
        card = model_card_file(self.model, run, [target, source], self._given_texts or self._texts)
        with folder_lock(target):
            recover_folder(target, complete=True)
            assignments, candidates = self._assignments, None
            if assignments is None and not (partition_edited or in_place) and source is not None:
                assignments = RunFolder(source).read_assignments()
            if self._candidates is not None and source is not None:
                candidates = kept_candidates(source, *self._candidates)
            save_model_folder(
                target,
                model=self.model,
                remote_code=source is not None and RunFolder(source).ships_remote_code(),
                run=run,
                assignments=assignments,
                candidates=candidates,
                online_state=getattr(self.model, "online_state_", None),
                files={**self._files, **card},
                previous=True,
                # the folder's files that describe the model it replaces: left out unless written again
                stale=[ONLINE_STATE_FILE, *([ASSIGNMENTS_FILE] if partition_edited else [])],
            )
        self._assignments = self._given_texts = None

    def restore(self) -> Clusterer:
        """Go back to the model's previous state: swap the folder's model with ``<folder>/previous/`` (a second
        restore undoes the first; see :func:`~hf_textcluster.runs.saving.restore_previous`) and load it. Edits
        not saved are dropped."""
        if self.path is None:
            raise ValueError("restore needs a model folder: this clusterer has none (loaded from the Hub).")
        vars(self).update(vars(self.load(restore_previous(self.path))))
        return self
