"""The first hour in a notebook, by BERTopic's names: `fit_transform` without a folder, `labels_` and
`probabilities_`, a cell run twice, `save(path)`, plotly figures that render offline, keywords in the texts'
language."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from hf_textcluster import Clusterer
from hf_textcluster.cli import parse_command_line
from hf_textcluster.representation.ctfidf import (
    KEYWORDS_KEY,
    ClassTfidfRepresentation,
    keyword_representation,
    keyword_vectorizer,
)
from hf_textcluster.runs.request import TrainingRequest

TRAIN = {"per_device_train_batch_size": 16, "bf16": False, "disable_tqdm": True, "max_steps": 2}
FRENCH = [
    "le chat mange la souris dans la cuisine",
    "la souris mange le fromage de la cuisine",
    "le chien aboie dans la rue le soir",
    "la voiture roule dans la rue le matin",
]
GERMAN = [
    "der hund und die katze spielen im garten",
    "die katze jagt die maus im garten",
    "der zug fährt durch die stadt",
    "die straße der stadt ist voll",
]


def _clusterer(encoder_dir, **kwargs) -> Clusterer:
    return Clusterer(3, method="sccl", encoder=str(encoder_dir), evaluate=False, training_overrides=TRAIN, **kwargs)


def test_fit_transform_without_a_folder_then_save(tiny_encoder_dir, toy_corpus, tmp_path):
    texts = toy_corpus[0]
    clusterer = _clusterer(tiny_encoder_dir)
    labels = clusterer.fit_transform(texts)
    assert isinstance(labels, np.ndarray) and labels.shape == (len(texts),)
    np.testing.assert_array_equal(labels, clusterer.predict(texts))
    np.testing.assert_array_equal(clusterer.labels_, labels)
    confidence = clusterer.probabilities_
    assert confidence.shape == (len(texts),) and ((confidence >= 0) & (confidence <= 1)).all()
    workdir = clusterer.path
    with pytest.raises(ValueError, match=r"`path` is required: .*save\(path\)"):
        clusterer.save()  # a temporary folder is no place to keep a model
    clusterer.merge([[0, 1]])  # edits from Python live in memory until saved
    assert clusterer.labels_.max() < 2 and set(clusterer.labels_) <= {0, 1}
    kept = clusterer.save(tmp_path / "kept")
    assert clusterer.path == kept and not os.path.exists(workdir)  # the temporary folder went with the save
    assert Clusterer.load(kept).model.config.num_clusters == 2
    again = clusterer.fit_transform(texts)  # the same cell run again on the same object
    assert again.shape == (len(texts),) and clusterer.model.config.num_clusters == 3


def test_a_fit_into_a_model_folder_replaces_only_its_own_or_with_overwrite(tiny_encoder_dir, toy_corpus, tmp_path):
    texts, folder = toy_corpus[0], tmp_path / "run"
    first = _clusterer(tiny_encoder_dir).fit(texts, folder)
    first.fit(texts, folder)  # its own folder: replaced without asking
    with pytest.raises(FileExistsError, match="overwrite"):  # another clusterer's model: one line naming the fix
        _clusterer(tiny_encoder_dir).fit(texts, folder)
    assert _clusterer(tiny_encoder_dir).fit(texts, folder, overwrite=True).path == str(folder)


def test_visualize_returns_plotly_figures_that_render_offline(tiny_encoder_dir, toy_corpus):
    go = pytest.importorskip("plotly.graph_objects")
    texts = toy_corpus[0]
    clusterer = _clusterer(tiny_encoder_dir)
    clusters = clusterer.fit_transform(texts)
    used = len(set(clusters.tolist()))
    documents = clusterer.visualize_documents(map_method="pca", sample_size=50)
    assert isinstance(documents, go.Figure) and 1 <= len(documents.data) <= used
    assert sum(len(trace.x) for trace in documents.data) == 50  # the seeded sample, one trace per cluster
    assert {trace.name.split(":")[0] for trace in documents.data} <= {str(k) for k in range(3)}
    bars = clusterer.visualize_barchart(n_words=3)
    assert isinstance(bars, go.Figure) and len(bars.data) == used and all(len(t.y) <= 3 for t in bars.data)
    if used > 1:
        assert isinstance(clusterer.visualize_hierarchy(), go.Figure)
        assert len(clusterer.visualize_clusters().data[0].x) == used
    page = documents.to_html(include_plotlyjs=True)
    assert 'src="https://cdn.plot.ly' not in page and "Plotly.newPlot" in page  # plotly.js inlined: no server


def test_keywords_leave_out_the_stop_words_of_the_texts_language():
    def words(representation, texts):
        return {w for ks in representation.extract(texts, [0, 0, 1, 1], 2).values() for w in ks}

    assert {"le", "la"} & words(ClassTfidfRepresentation(top_n=4), FRENCH)  # English stop words keep them
    assert not {"le", "la", "dans"} & words(ClassTfidfRepresentation(top_n=4, stop_words="french"), FRENCH)
    assert {"der", "die"} & words(ClassTfidfRepresentation(top_n=4), GERMAN)
    assert not {"der", "die", "und"} & words(ClassTfidfRepresentation(top_n=4, stop_words="german"), GERMAN)


def test_a_vectorizer_is_saved_as_plain_settings_or_refused_in_one_line():
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

    params = keyword_vectorizer(vectorizer_model=CountVectorizer(stop_words=["chat"], ngram_range=(1, 2)))
    assert params == {"ngram_range": [1, 2], "stop_words": ["chat"]}
    keywords = ClassTfidfRepresentation(top_n=20, vectorizer_model=params).extract(FRENCH, [0, 0, 1, 1], 2)
    assert "chat" not in keywords[0] and any(" " in word for word in keywords[0])  # bigrams counted
    with pytest.raises(ValueError, match="tokenizer=.*cannot be saved with the model"):
        keyword_vectorizer(vectorizer_model=CountVectorizer(tokenizer=str.split))
    with pytest.raises(TypeError, match="must be a scikit-learn CountVectorizer, got TfidfVectorizer"):
        keyword_vectorizer(vectorizer_model=TfidfVectorizer())
    with pytest.raises(ValueError, match="`stop_words` 'klingon' is no language"):
        TrainingRequest("stackoverflow", "runs/x", stop_words="klingon")  # refused before any work


def test_train_takes_the_language_and_every_later_command_counts_with_it(tiny_encoder_dir, toy_corpus, tmp_path):
    from hf_textcluster.cli.train import training_request

    argv = ["train", "--dataset", "stackoverflow", "--output-dir", "runs/x", "--num-clusters", "3"]
    assert training_request(*parse_command_line([*argv, "--stop-words", "german"])).stop_words == "german"
    assert training_request(*parse_command_line([*argv, "--stop-words", "none"])).stop_words is None
    assert training_request(*parse_command_line(argv)).stop_words == "english"

    texts = [f"{text} der die und das" for text in toy_corpus[0]]  # German stop words in every text
    clusterer = _clusterer(tiny_encoder_dir, stop_words="german").fit(texts, tmp_path / "run")
    assert getattr(clusterer.model.config, KEYWORDS_KEY) == {"stop_words": "german"}
    loaded = Clusterer.load(tmp_path / "run")  # saved with the model: what info, report, update and edits count with
    assert keyword_representation(loaded.model.config).stop_words == "english"  # the default ...
    assert keyword_representation(loaded.model.config).vectorizer_model == {"stop_words": "german"}  # ... overridden
    keywords = {word for ks in loaded.cluster_info()["keywords"] for word in ks}
    assert keywords and not {"der", "die", "und", "das"} & keywords
    loaded.merge([[0, 1]])
    assert not {"der", "die", "und", "das"} & set(loaded.model.config.id2label[0].split(" · "))


@pytest.mark.parametrize("call", ["predict", "cluster_info", "save"])
def test_a_clusterer_used_before_fit_says_so_in_one_line(call, tmp_path):
    args = {"predict": (["a text"],), "cluster_info": (), "save": (str(tmp_path / "m"),)}[call]
    with pytest.raises(ValueError, match=r"no model yet: call fit\(texts\) first, or use Clusterer.load\(path\)"):
        getattr(Clusterer(), call)(*args)


@pytest.mark.slow  # a Jupyter kernel started and run, as a notebook would
def test_the_figures_render_in_a_real_notebook_run_without_a_server(tiny_encoder_dir, toy_corpus, tmp_path):
    """A notebook executed by a Jupyter kernel (nbclient): the cell that ends in a figure displays plotly's own
    output, which Jupyter draws from the notebook alone (no server, no network)."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    folder = _clusterer(tiny_encoder_dir).fit(toy_corpus[0], tmp_path / "model").path
    (tmp_path / "texts.json").write_text(json.dumps(toy_corpus[0]))
    load = f"clusterer = Clusterer.load({folder!r})\ntexts = json.loads(open({str(tmp_path / 'texts.json')!r}).read())"
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(f"import json\nfrom hf_textcluster import Clusterer\n{load}"),
        nbformat.v4.new_code_cell("clusterer.visualize_barchart(texts)"),
    ]
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3").execute()
    shown = [o for o in notebook.cells[1].outputs if o.output_type != "stream"]  # the encoding bar aside
    assert [o.output_type for o in shown] == ["display_data"], shown
    data = shown[0].data
    assert "application/vnd.plotly.v1+json" in data and data["application/vnd.plotly.v1+json"]["data"]
