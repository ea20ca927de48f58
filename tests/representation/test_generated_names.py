"""Cluster names from a language model: a tiny random GPT-2 and T5 built here (no download), the cleaning of answers,
the fallback to keyword names, the cache beside the model and ``hf-textcluster name``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hf_textcluster.editing import initialize_clusters
from hf_textcluster.models.building import from_encoder_pretrained
from hf_textcluster.representation import (
    DEFAULT_PROMPT,
    NAMES_FILE,
    BaseRepresentation,
    ClassTfidfRepresentation,
    GeneratedNamesRepresentation,
    clean_name,
    name_clusters,
)
from tests.conftest import WORDS

TEXTS = ["sql join table", "sql table index", "oracle sql query", "python list sort", "python dict sort", "git push"]
CLUSTERS = [0, 0, 0, 1, 1, 2]


def _word_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = ["<pad>", "<unk>", "<eos>", *sorted(set(WORDS)), "name", "group", "texts", "keywords"]
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", pad_token="<pad>", eos_token="<eos>")


def _words_only(model):
    """Random weights greedily pick special tokens as often as words: zero their output rows (logit 0) so the tiny
    model answers with words of its vocabulary, as a real one does."""
    import torch

    with torch.no_grad():
        model.get_output_embeddings().weight[:3] = 0.0
    return model


@pytest.fixture(scope="module")
def tiny_gpt2_dir(tmp_path_factory) -> Path:
    """A 1-layer, 16-wide random GPT-2 with a word-level tokenizer of the test vocabulary, saved like a checkpoint."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    path = tmp_path_factory.mktemp("tiny-gpt2")
    tokenizer = _word_tokenizer()
    config = GPT2Config(
        vocab_size=len(tokenizer), n_layer=1, n_embd=16, n_head=2, n_positions=256, eos_token_id=2, bos_token_id=2
    )
    torch.manual_seed(0)
    _words_only(GPT2LMHeadModel(config)).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny_t5_dir(tmp_path_factory) -> Path:
    """A 1-layer random T5 (an encoder-decoder: the text2text path) with the same tokenizer."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    path = tmp_path_factory.mktemp("tiny-t5")
    tokenizer = _word_tokenizer()
    config = T5Config(
        vocab_size=len(tokenizer),
        d_model=16,
        d_kv=8,
        d_ff=32,
        num_layers=1,
        num_heads=2,
        pad_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=0,
    )
    torch.manual_seed(0)
    _words_only(T5ForConditionalGeneration(config)).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


# ----- cleaning ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Oracle SQL joins", "Oracle SQL joins"),
        ('  **Name:** "Oracle SQL joins".\nBecause the texts ...', "Oracle SQL joins"),
        ("\n\n- Python sorting\n- other", "Python sorting"),
        ("<b>Git</b> | pushes", "Git pushes"),
        ("# Label: `excel` [formulas]", "excel formulas"),
        ("1. Spring beans", "Spring beans"),
        ("", None),
        ("   \n  ", None),
        ("### 123 ...", None),
        (None, None),
    ],
)
def test_answers_become_one_line_names_without_markup(answer, expected):
    assert clean_name(answer) == expected


def test_long_answers_are_cut_at_a_word():
    name = clean_name("word " * 40, max_chars=23)
    assert name == "word word word word" and len(name) <= 23
    assert clean_name("x" * 100, max_chars=10) == "x" * 10


# ----- the representation --------------------------------------------------------------------------------------------
def test_prompts_hold_each_clusters_keywords_and_most_typical_members():
    seen = []
    namer = GeneratedNamesRepresentation(lambda p: seen.append(p) or "A name", num_members=2)
    typicality = [0.1, 0.9, 0.5, 0.2, 0.3, 1.0]
    prompts = namer.prompts(TEXTS, CLUSTERS, 4, typicality=typicality)
    assert sorted(prompts) == [0, 1, 2]  # cluster 3 holds no text: no prompt
    keywords = ClassTfidfRepresentation().extract(TEXTS, CLUSTERS, 4)
    assert prompts[0] == DEFAULT_PROMPT.format(
        keywords=", ".join(keywords[0]), documents="- sql table index\n- oracle sql query"
    )
    assert "- python dict sort\n- python list sort" in prompts[1]


def test_names_are_generated_unique_and_fall_back_to_keywords(tmp_path):
    answers = iter(["SQL tables", "**SQL tables**", "###"])
    namer = GeneratedNamesRepresentation(lambda prompt: next(answers))
    names = namer.names(TEXTS, CLUSTERS, 4)
    keyword_names = BaseRepresentation.labels(ClassTfidfRepresentation().extract(TEXTS, CLUSTERS, 4))
    assert names == {0: "SQL tables", 1: "SQL tables (1)", 2: keyword_names[2], 3: "cluster_3"}
    assert namer.sources == {0: "generated", 1: "generated", 2: "keywords", 3: "keywords"}


def test_a_failing_generation_keeps_the_keyword_name_with_a_warning():
    def generate(prompt):
        if "git" in prompt:
            raise RuntimeError("out of memory")
        return "Data work"

    namer = GeneratedNamesRepresentation(generate)
    with pytest.warns(UserWarning, match="Generation failed for 1 cluster.*out of memory"):
        names = namer.names(TEXTS, CLUSTERS, 3)
    assert names[2] == "git · push" and namer.sources[2] == "keywords" and names[0] == "Data work"


def test_answers_are_cached_by_generator_prompt_and_cluster_content(tmp_path):
    calls = []

    def generate(prompt):
        calls.append(prompt)
        return f"Name {len(calls)}"

    cache = tmp_path / NAMES_FILE
    first = GeneratedNamesRepresentation(generate, cache=cache).names(TEXTS, CLUSTERS, 3)
    assert len(calls) == 3
    again = GeneratedNamesRepresentation(generate, cache=cache).names(TEXTS, CLUSTERS, 3)
    assert again == first and len(calls) == 3  # nothing generated twice
    record = json.loads(cache.read_text())
    assert record["last"]["names"] == {str(k): v for k, v in first.items()}
    assert record["last"]["sources"] == {"0": "generated", "1": "generated", "2": "generated"}
    # a cluster whose members changed is asked again; the others are not
    GeneratedNamesRepresentation(generate, cache=cache).names([*TEXTS[:5], "git commit"], CLUSTERS, 3)
    assert len(calls) == 4 and "git commit" in calls[-1]
    # another prompt is another question
    GeneratedNamesRepresentation(generate, cache=cache, prompt="Name these: {keywords}").names(TEXTS, CLUSTERS, 3)
    assert len(calls) == 7


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"prompt": "no field"}, "must be a string containing {keywords}"),
        ({"prompt": "{keywords} {other}"}, "may only use the fields"),
        ({"generator": 3}, "`generator` must be a Hub id, a local folder or a callable"),
        ({"generator": ""}, "`generator` is empty"),
        ({"num_members": -1}, "`num_members` must be a whole number >= 0"),
    ],
)
def test_bad_arguments_fail_in_one_line(kwargs, message):
    kwargs = {"generator": lambda p: "x", **kwargs}
    with pytest.raises(ValueError, match=message.replace("{", r"\{").replace("}", r"\}")) as err:
        GeneratedNamesRepresentation(**kwargs)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("model_dir", ["tiny_gpt2_dir", "tiny_t5_dir"])
def test_a_tiny_random_language_model_names_every_cluster(model_dir, request, tmp_path):
    path = request.getfixturevalue(model_dir)
    namer = GeneratedNamesRepresentation(str(path), max_new_tokens=4, cache=tmp_path / NAMES_FILE)
    texts = [t for t in TEXTS] * 2
    names = namer.names(texts, CLUSTERS * 2, 3)
    assert sorted(names) == [0, 1, 2] and len(set(names.values())) == 3
    answers = json.loads((tmp_path / NAMES_FILE).read_text())["answers"]
    assert len(answers) == 3
    assert set(namer.sources.values()) == {"generated"}
    for k, name in names.items():
        assert "\n" not in name and 0 < len(name) <= 60
        if namer.sources[k] == "generated":  # random weights: the words of its vocabulary, greedily
            assert set(name.removesuffix(f" ({k})").split()) <= set(_word_tokenizer().get_vocab())


def test_an_instruction_model_gets_the_prompt_through_its_chat_template(tiny_gpt2_dir, tmp_path):
    import shutil

    from hf_textcluster.representation.generation import _TransformersGenerator

    chat = tmp_path / "tiny-chat"
    shutil.copytree(tiny_gpt2_dir, chat)
    tokenizer = _word_tokenizer()
    tokenizer.chat_template = "{% for m in messages %}group {{ m['content'] }}{% endfor %} name"
    tokenizer.save_pretrained(chat)
    prompt = "keywords sql join"
    plain = _TransformersGenerator(str(tiny_gpt2_dir), 4, None).encode(prompt)["input_ids"][0].tolist()
    templated = _TransformersGenerator(str(chat), 4, None).encode(prompt)["input_ids"][0].tolist()
    vocab = tokenizer.get_vocab()
    assert templated == [vocab["group"], *plain, vocab["name"]]
    assert GeneratedNamesRepresentation(str(chat), max_new_tokens=3).names(TEXTS, CLUSTERS, 3)


def test_a_generator_path_that_does_not_exist_is_refused_at_once(tmp_path):
    with pytest.raises(FileNotFoundError, match="`generator`: no such folder"):
        GeneratedNamesRepresentation(str(tmp_path / "missing-model"))


def test_a_generator_that_cannot_be_loaded_is_one_clear_error(tmp_path):
    namer = GeneratedNamesRepresentation(str(tmp_path))  # a folder without a model
    with pytest.raises(ValueError, match="could not be loaded as a text-generation or text2text model") as err:
        namer.names(TEXTS, CLUSTERS, 3)
    assert "\n" not in str(err.value)


# ----- a clusterer's names, and the command --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def trained_dir(tiny_encoder_dir, toy_corpus, tmp_path_factory) -> Path:
    import torch

    from hf_textcluster.models.sccl import SCCLModel

    torch.manual_seed(0)
    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    initialize_clusters(model, toy_corpus[0])
    out_dir = tmp_path_factory.mktemp("runs") / "sccl-toy"
    model.save_pretrained(out_dir)
    return out_dir


def test_name_clusters_with_a_generator_sets_id2label_from_the_most_typical_texts(trained_dir, toy_corpus):
    from hf_textcluster.runs.folder import load_clusterer

    model = load_clusterer(trained_dir)
    texts, _ = toy_corpus
    prompts = []
    names = name_clusters(model, texts, generator=lambda p: prompts.append(p) or f"Topic {len(prompts)}").names
    assert model.config.id2label == names and model.config.label2id == {v: k for k, v in names.items()}
    assert sorted(names.values()) == [f"Topic {i}" for i in range(1, len(prompts) + 1)]
    probabilities = model.predict_proba(texts)
    clusters = probabilities.argmax(1)
    k = int(clusters[0])
    members = np.flatnonzero(clusters == k)
    most_typical = texts[members[np.argmax(probabilities[members, k])]]
    assert f"- {most_typical}\n" in prompts[sorted(set(clusters.tolist())).index(k)]
    with pytest.raises(ValueError, match="`texts` is required: a language model names clusters"):
        name_clusters(model, None, generator=lambda p: "x")


def test_cli_name_saves_the_names_and_their_record_beside_the_model(trained_dir, tiny_gpt2_dir, toy_corpus, tmp_path):
    from hf_textcluster.cli import main
    from hf_textcluster.runs.folder import load_clusterer

    texts, _ = toy_corpus
    data = tmp_path / "texts.txt"
    data.write_text("\n".join(texts))
    out = tmp_path / "named"
    args = ["name", "--model", str(trained_dir), "--input", str(data), "--generator", str(tiny_gpt2_dir)]
    assert main([*args, "--output-dir", str(out)]) == 0
    record = json.loads((out / NAMES_FILE).read_text())
    assert record["last"]["generator"] == str(tiny_gpt2_dir) and record["last"]["prompt"] == DEFAULT_PROMPT
    named = load_clusterer(out)
    assert {str(k): v for k, v in named.config.id2label.items()} == record["last"]["names"]
    assert not (trained_dir / NAMES_FILE).exists()  # the source model is untouched
    # a second run over the same folder generates nothing new
    answers = record["answers"]
    assert main(["name", "--model", str(out), "--input", str(data), "--generator", str(tiny_gpt2_dir)]) == 0
    assert json.loads((out / NAMES_FILE).read_text())["answers"] == answers
    assert (out / "previous" / NAMES_FILE).is_file()  # in place: the model before is kept, its answers with it


def test_the_card_of_a_named_model_says_a_language_model_wrote_its_names(
    trained_dir, tiny_gpt2_dir, toy_corpus, tmp_path
):
    import shutil

    from hf_textcluster.cli import main
    from hf_textcluster.hub.model_card import write_model_card

    model_dir = tmp_path / "model"
    shutil.copytree(trained_dir, model_dir)
    (model_dir / "training_run.json").write_text(json.dumps({"method": "sccl", "recipe": "cpu", "seed": 0}))
    data = tmp_path / "texts.txt"
    data.write_text("\n".join(toy_corpus[0]))
    assert main(["name", "--model", str(model_dir), "--input", str(data), "--generator", str(tiny_gpt2_dir)]) == 0
    record = json.loads((model_dir / "training_run.json").read_text())["names"]
    sources = json.loads((model_dir / NAMES_FILE).read_text())["last"]["sources"]
    assert record == {
        "generator": str(tiny_gpt2_dir),
        "generated": sum(v == "generated" for v in sources.values()),
        "file": NAMES_FILE,
    }
    card = write_model_card(model_dir, "-", texts=toy_corpus[0])
    assert f"{record['generated']} of 3 written by the language model `{tiny_gpt2_dir}`" in card
    assert "computed from the training texts' keywords" not in card


def test_cli_name_refuses_a_bad_prompt_file_before_loading_anything(trained_dir, tmp_path, capsys):
    from hf_textcluster.cli import main

    data = tmp_path / "texts.txt"
    data.write_text("sql join\npython list\n")
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Name it:")
    code = main(
        ["name", "--model", str(trained_dir), "--input", str(data), "--generator", "gpt2", "--prompt-file", str(prompt)]
    )
    err = capsys.readouterr().err
    assert code == 2 and "must be a string containing {keywords}" in err and len(err.strip().splitlines()) == 1
