"""The HTML cluster report: ``hf_textcluster.apps.report`` and ``hf-textcluster report``, on a tiny trained model,
and the page as headless Chromium renders it."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import pytest

from hf_textcluster.models.building import from_encoder_pretrained

pytest.importorskip("plotly")

from hf_textcluster.apps.report import cluster_report, render_report  # noqa: E402
from hf_textcluster.apps.report_data import cluster_summaries  # noqa: E402
from hf_textcluster.cli import main  # noqa: E402
from hf_textcluster.editing import initialize_clusters
from training.docs.screenshot import chromium, chromium_screenshot, run_chromium  # noqa: E402

CHROMIUM = chromium()


@pytest.fixture(scope="module")
def trained_dir(tiny_encoder_dir, toy_corpus, tmp_path_factory) -> Path:
    """A tiny SCCL clusterer with k-means clusters and a calibration, saved like a trained one."""
    import torch

    from hf_textcluster.models.sccl import SCCLModel

    torch.manual_seed(0)
    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    initialize_clusters(model, toy_corpus[0])
    model.calibrate(toy_corpus[0], precision="fp32")
    out_dir = tmp_path_factory.mktemp("runs") / "sccl-toy"
    model.save_pretrained(out_dir)
    return out_dir


@pytest.fixture()
def model(trained_dir):
    from hf_textcluster.runs.folder import load_clusterer

    return load_clusterer(trained_dir)


def _names_in(page: str) -> list[str]:
    return [html.unescape(name) for name in re.findall(r"<td class='name'>(.*?)</td>", page)]


def _cluster_ids_in(page: str) -> list[int]:
    return [int(k) for k in re.findall(r"<tr><td class='num'>(\d+)</td><td class='name'>", page)]


# ----- the function --------------------------------------------------------------------------------------------------
def test_report_is_one_offline_file_with_map_clusters_outliers_and_confusion(model, toy_corpus, tmp_path):
    texts, labels = toy_corpus
    assert model.is_calibrated
    path = cluster_report(
        model,
        texts,
        labels,
        tmp_path / "report.html",
        label_names=["sql", "code", "apps"],
        sample_size=100,
        map_method="pca",
    )
    assert path == tmp_path / "report.html" and not list(tmp_path.glob("*.tmp"))
    page = path.read_text(encoding="utf-8")
    # self-contained: plotly's library inlined, nothing fetched from a CDN or anywhere else
    assert "Plotly" in page and len(page) > 1_000_000
    assert not re.search(r"<(script|link|img|iframe)\b[^>]*\b(src|href)=", page)
    clusters = model.predict(texts)
    used = len(set(clusters.tolist()))
    names = _names_in(page)
    assert len(names) == used and all(name for name in names)
    assert "100 of 120 texts, PCA projection" in page
    assert "Confidence: calibrated" in page and "<h2>Outliers</h2>" in page
    assert "Against the known labels" in page and "ACC " in page and '"sql"' in page  # class names on the heatmap
    from hf_textcluster.evaluation.metrics import cluster_accuracy

    assert f"ACC {100 * cluster_accuracy(labels, clusters):.1f}" in page


def test_model_outputs_match_predict_with_confidence(model, toy_corpus):
    from hf_textcluster.apps.report import model_outputs

    texts, _ = toy_corpus
    outputs = model_outputs(model, model.embed(texts, precision="fp32"))
    direct = model.predict_with_confidence(texts, precision="fp32")
    np.testing.assert_allclose(outputs["probabilities"], model.predict_proba(texts, precision="fp32"), atol=1e-5)
    np.testing.assert_array_equal(outputs["probabilities"].argmax(1), direct["cluster"])
    np.testing.assert_allclose(outputs["confidence"], direct["confidence"], atol=1e-3)  # quantile interpolation
    np.testing.assert_allclose(outputs["distance"], direct["distance"], atol=1e-5)
    np.testing.assert_array_equal(outputs["is_outlier"], direct["is_outlier"])


def test_uncalibrated_model_reports_probabilities_and_says_how_to_flag(model, toy_corpus, tmp_path):
    texts, _ = toy_corpus
    model.config.num_calibration_texts = 0
    page = cluster_report(model, texts, output=tmp_path / "r.html", map_method="pca").read_text(encoding="utf-8")
    assert "the top probability (the model is not calibrated)" in page
    assert "Not flagged: the model is not calibrated" in page and "hf-textcluster calibrate" in page
    assert "Against the known labels" not in page
    assert "members ordered by assignment probability" in page


def test_render_report_on_arrays_orders_members_and_matches_clusters_to_classes(tmp_path):
    rng = np.random.default_rng(0)
    words = [["oracle", "sql", "table", "join"], ["python", "list", "dict", "sort"], ["excel", "cell", "formula"]]
    texts, clusters = [], []
    for i in range(60):
        k = i % 3
        texts.append(" ".join(rng.choice(words[k], size=4)) + f" {i}")
        clusters.append(k)
    clusters = np.array(clusters)
    probs = np.full((60, 3), 0.1)
    probs[np.arange(60), clusters] = 0.8
    embeddings = rng.normal(size=(60, 8)) + 5 * np.eye(3, 8)[clusters]
    distance = rng.uniform(0.1, 0.9, size=60)
    is_outlier = distance > 0.85
    labels = (clusters + 1) % 3  # a permutation of the clusters: the Hungarian match makes it perfect
    path = render_report(
        texts,
        probs,
        embeddings,
        tmp_path / "arrays.html",
        confidence=1 - distance,
        distance=distance,
        is_outlier=is_outlier,
        labels=labels,
        map_method="pca",
        sample_size=None,
    )
    page = path.read_text(encoding="utf-8")
    assert "ACC 100.0" in page and "NMI 100.0" in page
    names = _names_in(page)
    assert {names[0].split(" · ")[0], names[1].split(" · ")[0], names[2].split(" · ")[0]} <= {
        w for ws in words for w in ws
    }
    assert f"{int(is_outlier.sum())} texts" in page
    summaries = cluster_summaries(texts, probs, distance=distance, is_outlier=is_outlier)
    for s in summaries:
        members = np.flatnonzero(clusters == s["cluster"])
        assert s["size"] == len(members) == 20
        assert s["typical"] == members[np.argsort(distance[members])][:3].tolist()
        assert s["atypical"] == members[np.argsort(-distance[members])][:3].tolist()
        assert s["num_outliers"] == int(is_outlier[members].sum())


def test_confusion_puts_the_hungarian_match_on_the_diagonal(tmp_path):
    from hf_textcluster.apps.report_sections import scores_line
    from hf_textcluster.figures.clusters import confusion_figure

    labels = np.array([0] * 10 + [1] * 10 + [2] * 10)
    clusters = np.array([2] * 9 + [0] + [0] * 10 + [1] * 10)  # class 0 -> cluster 2, 1 -> 0, 2 -> 1
    fig = confusion_figure(labels, clusters, ["a", "b", "c"], {0: "x", 1: "y", 2: "z"})
    line = scores_line(labels, clusters)
    heat = fig.data[0]
    assert list(heat.x) == ["2: z", "0: x", "1: y"] and list(heat.y) == ["a", "b", "c"]
    assert np.asarray(heat.customdata).tolist() == [[9, 1, 0], [0, 10, 0], [0, 0, 10]]
    assert line.startswith("ACC 96.7")


@pytest.mark.parametrize("case", ["suffix", "folder", "labels", "sample_size", "map_method", "model", "texts"])
def test_report_arguments_fail_at_the_edge_with_one_line(case, model, toy_corpus, tmp_path):
    texts, labels = toy_corpus
    kwargs = {"output": tmp_path / "r.html", "labels": labels, "map_method": "pca"}
    expected = {
        "suffix": ("output", tmp_path / "r.png", ValueError, "must end in .html"),
        "folder": ("output", tmp_path / "nope" / "r.html", FileNotFoundError, "does not exist"),
        "labels": ("labels", labels[:5], ValueError, "`labels` has 5 items"),
        "sample_size": ("sample_size", 0, ValueError, "`sample_size` must be a positive integer"),
        "map_method": ("map_method", "mds", ValueError, "`map_method` must be one of auto, umap, tsne, pca"),
        "model": ("model", object(), TypeError, "`model` must be an hf_textcluster clusterer"),
        "texts": ("texts", [], ValueError, "text"),
    }[case]
    kwargs[expected[0]] = expected[1]
    the_model = kwargs.pop("model", model)
    the_texts = kwargs.pop("texts", texts)
    with pytest.raises(expected[2], match=re.escape(expected[3])) as err:
        cluster_report(the_model, the_texts, **kwargs)
    assert "\n" not in str(err.value)
    assert not list(tmp_path.glob("*.html"))


# ----- the command ---------------------------------------------------------------------------------------------------
def _texts_file(tmp_path: Path, toy_corpus) -> Path:
    texts, labels = toy_corpus
    path = tmp_path / "texts.jsonl"
    path.write_text(
        "\n".join(json.dumps({"body": t, "topic": ["sql", "code", "apps"][y]}) for t, y in zip(texts, labels))
    )
    return path


def test_cli_report_writes_the_page(trained_dir, toy_corpus, tmp_path, capsys):
    data = _texts_file(tmp_path, toy_corpus)
    output = tmp_path / "report.html"
    code = main(
        [
            "report",
            "--model",
            str(trained_dir),
            "--input",
            str(data),
            "--text-column",
            "body",
            "--label-column",
            "topic",
            "--map-sample",
            "50",
            "--output",
            str(output),
        ]
    )
    assert code == 0
    page = output.read_text(encoding="utf-8")
    assert "50 of 120 texts" in page and "Against the known labels" in page and '"apps"' in page
    out = capsys.readouterr().out
    assert f"Wrote {output}" in out and "120 texts" in out


def test_report_keeps_an_existing_output_unless_overwrite(trained_dir, toy_corpus, tmp_path, capsys):
    data = _texts_file(tmp_path, toy_corpus)
    output = tmp_path / "report.html"
    output.write_text("my earlier report")
    argv = ["report", "--model", str(trained_dir), "--input", str(data), "--text-column", "body"]
    argv += ["--map-sample", "50", "--projection", "pca", "--output", str(output)]
    assert main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert err == [f"error: --output {output} exists; pass --overwrite to replace it."]
    assert output.read_text() == "my earlier report"
    assert main([*argv, "--overwrite"]) == 0
    assert "<!DOCTYPE html>" in output.read_text(encoding="utf-8")


@pytest.mark.parametrize("case", ["no model folder", "no texts file", "bad suffix", "label column"])
def test_cli_report_errors_are_one_line(case, trained_dir, toy_corpus, tmp_path, capsys):
    data = _texts_file(tmp_path, toy_corpus)
    args = {
        "--model": str(trained_dir),
        "--input": str(data),
        "--text-column": "body",
        "--output": str(tmp_path / "r.html"),
    }
    expected = {
        "no model folder": ("--model", str(tmp_path / "missing"), "no such folder"),
        "no texts file": ("--input", str(tmp_path / "missing.csv"), "Text file not found"),
        "bad suffix": ("--output", str(tmp_path / "r.pdf"), "must end in .html"),
        "label column": ("--label-column", "team", "no column 'team'"),
    }[case]
    args[expected[0]] = expected[1]
    assert main(["report", *[item for pair in args.items() for item in pair]]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and expected[2] in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r.html").exists()


# ----- hostile strings -----------------------------------------------------------------------------------------------
# Each payload, if the page ran it, adds an element called <pwned> to the document (a name no payload spells out).
PAYLOADS = [
    "<script>document.body.appendChild(document.createElement('pw'+'ned'))</script>",
    "<img src=x onerror=\"document.body.appendChild(document.createElement('pw'+'ned'))\">",
    '<a href="javascript:alert(1)">x</a>',
    "<svg onload=\"document.body.appendChild(document.createElement('pw'+'ned'))\"></svg>",
]


def _hostile_report(tmp_path):
    """A report whose cluster names, keywords, texts and label values are all hostile."""
    rng = np.random.default_rng(0)
    n, k = 40, 4
    clusters = np.arange(n) % k
    probs = np.full((n, k), 0.05)
    probs[np.arange(n), clusters] = 0.85
    embeddings = rng.normal(size=(n, 8)) + 5 * np.eye(k, 8)[clusters]
    texts = [f"text {i} {PAYLOADS[i % len(PAYLOADS)]}" for i in range(n)]
    labels = np.array([PAYLOADS[(i + 1) % len(PAYLOADS)] + "\n# heading |" for i in range(n)], dtype=object)
    distance = rng.uniform(0.1, 0.9, size=n)
    return render_report(
        texts,
        probs,
        embeddings,
        tmp_path / "hostile.html",
        confidence=1 - distance,
        distance=distance,
        is_outlier=distance > 0.7,
        labels=labels,
        cluster_names={c: PAYLOADS[c] for c in range(k)},
        keywords={c: [PAYLOADS[(c + 2) % len(PAYLOADS)], "<b>bold</b>"] for c in range(k)},
        map_method="pca",
        sample_size=None,
    )


def test_a_report_escapes_names_keywords_texts_and_labels(tmp_path):
    page = _hostile_report(tmp_path).read_text(encoding="utf-8")
    for payload in PAYLOADS:
        assert payload not in page, payload
    assert "<b>bold</b>" not in page
    # the plotly figures carry the escaped strings: their legend, hover text and the confusion's tick labels
    figures = [json.loads(m) for m in re.findall(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*(\[.*?\]),\s*\{", page)]
    strings = json.dumps(figures)
    assert "<img" not in strings and "<script" not in strings and "<svg" not in strings
    assert "&lt;img src=x onerror=" in strings and "&lt;script&gt;" in strings
    assert "&lt;/td&gt;" not in page  # escaped once, not twice


@pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install chromium chromium-driver; .ci/run installs it)"
)
def test_no_script_runs_in_a_report_of_hostile_strings(tmp_path):
    path = _hostile_report(tmp_path).resolve()
    dom = run_chromium(path, "--dump-dom", "--virtual-time-budget=10000", profile=tmp_path / "profile").stdout
    assert dom.count('class="main-svg"') >= 3, "plotly drew fewer figures than the map, histogram and confusion"
    assert "<pwned" not in dom.lower()
    assert not re.search(r"<a[^>]+href=\"javascript:alert", dom)
    # the names are shown as text, in the table and the map's legend
    assert "&lt;script&gt;document.body.appendChild" in dom


# ----- the page in a browser ------------------------------------------------------------------------------------------
@pytest.mark.slow  # a headless browser
@pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install chromium chromium-driver; .ci/run installs it)"
)
def test_report_renders_in_headless_chromium(model, toy_corpus, tmp_path):
    from PIL import Image

    texts, labels = toy_corpus
    path = cluster_report(model, texts, labels, tmp_path / "report.html", map_method="pca").resolve()
    page = path.read_text(encoding="utf-8")
    names = _names_in(page)

    shot = tmp_path / "shot.png"  # the same call writes docs/report.png (python -m training.docs screenshot)
    done = chromium_screenshot(path, shot)
    assert shot.is_file(), f"chromium wrote no screenshot: {done.stderr[-2000:]}"
    image = Image.open(shot).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50, "the screenshot is (nearly) blank"
    # the map's markers are saturated colours; text, grid and background are greys
    rgb = np.asarray(image, dtype=np.int16)
    saturated = (rgb.max(axis=-1) - rgb.min(axis=-1)) > 100
    assert saturated.sum() > 500, f"only {saturated.sum()} coloured pixels: the map was not drawn"

    dom = run_chromium(path, "--dump-dom", "--virtual-time-budget=10000", profile=tmp_path / "profile-dom").stdout
    assert dom.count('class="main-svg"') >= 3, "plotly drew fewer figures than the map, histogram and confusion"
    legend = re.findall(r'class="legendtext"[^>]*>([^<]*)<', dom)
    # the clusters' names as the browser shows them: in the table and in the map's legend, one entry per cluster
    assert sorted(_names_in(dom.replace('"', "'"))) == sorted(names)
    ids = _cluster_ids_in(page)
    assert sorted(entry for entry in legend if re.match(r"\d+: ", entry)) == sorted(
        f"{k}: {name}" for k, name in zip(ids, names)
    )


# ----- the pictures of the clusters: keyword bars, map by similarity, hierarchy ---------------------------------------
def _figures_in(page: str) -> list[dict]:
    """The plotly figures of a page, as the JSON each ``Plotly.newPlot`` call carries (data and layout)."""
    decoder = json.JSONDecoder()
    figures = []
    for match in re.finditer(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*", page):
        data, end = decoder.raw_decode(page, match.end())
        layout, _ = decoder.raw_decode(page, end + page[end:].index("{"))
        figures.append({"data": data, "layout": layout})
    return figures


def _section(page: str, heading: str) -> str:
    start = page.index(f"<h2>{heading}</h2>")
    end = page.find("<h2>", start + 1)
    return page[start : end if end > 0 else len(page)]


def test_report_shows_keyword_bars_with_their_ctfidf_weights_a_cluster_map_and_the_hierarchy(
    model, toy_corpus, tmp_path
):
    from hf_textcluster.figures.clusters import cluster_centres, first_joins
    from hf_textcluster.representation import ClassTfidfRepresentation

    texts, _ = toy_corpus
    page = cluster_report(model, texts, output=tmp_path / "r.html", map_method="pca").read_text(encoding="utf-8")
    clusters = model.predict(texts)
    used = sorted(set(clusters.tolist()))
    assert len(used) >= 2
    weights = ClassTfidfRepresentation(top_n=8).extract_weights(texts, clusters, model.config.num_clusters)

    bars = _figures_in(_section(page, "Keywords"))
    assert len(bars) == 1
    traces = bars[0]["data"]
    assert len(traces) == len(used)
    sizes = np.bincount(clusters, minlength=model.config.num_clusters)
    for trace in traces:
        k = int(trace["name"].split(":")[0])
        expected = weights[k][:5][::-1]  # drawn bottom-up: the heaviest word on top
        assert trace["y"] == [word for word, _ in expected]
        np.testing.assert_allclose(trace["x"], [w for _, w in expected], rtol=1e-12)
    # panels in the clusters table's order: largest first
    assert [int(t["name"].split(":")[0]) for t in traces] == sorted(used, key=lambda k: -sizes[k])

    (cluster_map,) = _figures_in(_section(page, "Clusters by similarity"))
    points = cluster_map["data"][0]
    assert sorted(int(k) for k, _ in points["customdata"]) == used
    assert {int(k): int(n) for k, n in points["customdata"]} == {k: int(sizes[k]) for k in used}
    diameter = dict(zip((int(k) for k, _ in points["customdata"]), points["marker"]["size"]))
    largest, smallest = max(used, key=lambda k: sizes[k]), min(used, key=lambda k: sizes[k])
    assert diameter[largest] >= diameter[smallest]

    hierarchy = _section(page, "Hierarchy")
    (dendrogram,) = _figures_in(hierarchy)
    leaves = dendrogram["layout"]["yaxis"]["ticktext"]
    assert len(leaves) == len(used) and sorted(int(leaf.split(":")[0]) for leaf in leaves) == used
    assert len(dendrogram["data"]) == len(used) - 1  # one U-shaped link per join
    ids, centres, _ = cluster_centres(model.embed(texts, precision="fp32"), clusters, model.config.num_clusters)
    left, right, distance = first_joins(ids, centres)[0]
    assert f"{', '.join(map(str, left))} with {', '.join(map(str, right))} (cosine distance {distance:.3f})" in (
        hierarchy
    )


def test_hierarchy_joins_the_closest_centres_first_and_leaves_are_the_clusters():
    from hf_textcluster.figures.clusters import cluster_centres, first_joins, hierarchy_figure

    rng = np.random.default_rng(0)
    directions = np.eye(6, 8)
    directions[1] = directions[0] + 0.1 * directions[1]  # clusters 0 and 1 nearly alike
    clusters = np.repeat(np.arange(6), 10)
    embeddings = directions[clusters] + 0.01 * rng.normal(size=(60, 8))
    clusters[clusters == 5] = 7  # a cluster id beyond an empty one: K = 8, 6 used
    ids, centres, sizes = cluster_centres(embeddings, clusters, 8)
    assert ids.tolist() == [0, 1, 2, 3, 4, 7] and sizes.tolist() == [10] * 6
    assert first_joins(ids, centres, count=1)[0][:2] == ([0], [1])
    fig = hierarchy_figure(ids, centres, {0: "<b>sql</b>"})
    assert len(fig.layout.yaxis.ticktext) == 6
    assert "0: &lt;b&gt;sql&lt;/b&gt;" in fig.layout.yaxis.ticktext  # names are escaped, never markup


def test_a_report_with_one_cluster_says_there_is_nothing_to_map(tmp_path):
    texts = [f"sql table join {i}" for i in range(8)]
    probs = np.tile([[0.9, 0.1]], (8, 1))
    page = render_report(
        texts, probs, np.random.default_rng(0).normal(size=(8, 4)), tmp_path / "one.html", map_method="pca"
    ).read_text(encoding="utf-8")
    assert "<h2>Keywords</h2>" in page and "One cluster holds every text: no map." in page
    assert "<h2>Hierarchy</h2>" not in page


@pytest.mark.parametrize("with_outliers", [False, True])
def test_confidence_histogram_covers_zero_to_one_inclusive(with_outliers):
    """Every text is counted, those at exactly 0.0 and 1.0 included (plotly's own bins leave out the right edge)."""
    from hf_textcluster.figures.clusters import confidence_figure

    confidence = np.array([0.0, 0.0, 0.3, 0.5, 0.98, 0.99, 1.0, 1.0, 1.0])
    is_outlier = np.array([True, False, False, False, False, False, True, False, False]) if with_outliers else None
    figure = confidence_figure(confidence, is_outlier, calibrated=True)
    counts = np.sum([np.asarray(trace.y) for trace in figure.data], axis=0)
    assert counts.sum() == len(confidence)
    bars = figure.data[0]
    assert bars.x[0] - bars.width / 2 == pytest.approx(0.0) and bars.x[-1] + bars.width / 2 == pytest.approx(1.0)
    assert counts[0] == 2 and counts[-1] == 5  # [0.975, 1] closed: 0.98, 0.99 and the three at 1.0
