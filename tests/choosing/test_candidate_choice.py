"""Criteria of candidates made in different spaces: each in its own space, every candidate in every shared space, and
the lexical space no candidate was made in."""

from __future__ import annotations

import numpy as np
import pytest

from hf_textcluster.choosing.candidate_choice import (
    BERTOPIC_WAY,
    DEFAULT_AUTO_CRITERION,
    GUARD_CRITERIA,
    candidate_criteria,
    guarded_choice,
    highest,
)
from hf_textcluster.choosing.criteria import AUTO_CRITERIA, CRITERIA, knn_holdout, lexical_space

TOPICS = [
    "sql join tables query",
    "python list sort lambda",
    "football match goal league",
]


def _texts(per=20, seed=0):
    rng = np.random.default_rng(seed)
    texts, truth = [], []
    for k, topic in enumerate(TOPICS):
        words = topic.split()
        for _ in range(per):
            texts.append(" ".join(rng.choice(words, size=3)) + f" note{rng.integers(1000)}")
            truth.append(k)
    return texts, np.array(truth)


def _space(truth, sharp, seed):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(truth.max() + 1, 8)) * sharp
    x = centres[truth] + rng.normal(size=(truth.size, 8))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_lexical_space_is_lsa_of_the_texts_and_none_without_shared_words():
    texts, truth = _texts()
    x = lexical_space(texts)
    assert x.shape[0] == len(texts) and x.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)
    # texts of one topic are nearer each other than texts of another
    sims = x @ x.T
    same = truth[:, None] == truth[None, :]
    assert sims[same].mean() > sims[~same].mean() + 0.3
    assert lexical_space(["alpha beta", "gamma delta", "epsilon zeta"]) is None  # no word in two texts


def test_shared_criterion_is_the_mean_over_every_space_and_the_lexical_one():
    texts, truth = _texts()
    spaces = {"a": _space(truth, 4, 1), "pretrained": _space(truth, 1, 2)}
    shuffled = np.random.default_rng(3).permutation(truth)
    candidates = {"a/kmeans": truth, "pretrained/kmeans": shuffled, "consensus": truth}
    values = candidate_criteria(candidates, spaces, texts=texts, criteria=["knn_holdout_shared", "silhouette"])
    lexical = lexical_space(texts)

    def score(x, labels, criterion="knn_holdout_shared"):  # on the rows as every criterion gets them (unit length)
        x = np.asarray(x, dtype=np.float64)
        return CRITERIA[criterion].value(x / np.linalg.norm(x, axis=1, keepdims=True), labels, 0)

    for name, labels in candidates.items():
        direct = [score(x, labels) for x in (spaces["a"], spaces["pretrained"], lexical)]
        assert values["knn_holdout_shared"][name] == pytest.approx(np.mean(direct))
    # own space: the pretrained candidate in the pretrained space only, the consensus in the trained signals' spaces
    own = values["silhouette"]
    assert own["pretrained/kmeans"] == pytest.approx(score(spaces["pretrained"], shuffled, "silhouette"))
    assert own["consensus"] == pytest.approx(score(spaces["a"], truth, "silhouette"))
    assert values["knn_holdout_shared"]["a/kmeans"] > values["knn_holdout_shared"]["pretrained/kmeans"]


def test_a_partition_of_one_sharpened_space_loses_to_one_every_space_shares():
    texts, truth = _texts()
    # a signal that sharpened its space around a wrong grouping: its own partition looks perfect there
    wrong = (truth + np.arange(truth.size) % 2) % 3
    spaces = {"a": _space(wrong, 8, 4), "b": _space(truth, 2, 5), "pretrained": _space(truth, 2, 6)}
    candidates = {"a/kmeans": wrong, "b/kmeans": truth}
    values = candidate_criteria(candidates, spaces, texts=texts)
    assert values["silhouette"]["a/kmeans"] > values["silhouette"]["b/kmeans"]  # each judged where it was made
    assert values["knn_holdout_shared"]["b/kmeans"] > values["knn_holdout_shared"]["a/kmeans"]
    assert set(values) == set(AUTO_CRITERIA) and DEFAULT_AUTO_CRITERION in values


def test_unknown_criteria_are_refused_by_name():
    with pytest.raises(ValueError, match="`criteria` must be among"):
        candidate_criteria({"a/x": np.zeros(3)}, {"a": np.eye(3)}, criteria=["nope"])


def test_lexical_criterion_votes_in_the_lexical_space_alone_and_falls_back_without_one():
    texts, truth = _texts()
    spaces = {"a": _space(truth, 4, 1), "pretrained": _space(truth, 1, 2)}
    shuffled = np.random.default_rng(3).permutation(truth)
    candidates = {"a/kmeans": truth, "pretrained/kmeans": shuffled}
    values = candidate_criteria(candidates, spaces, texts=texts, criteria=["knn_holdout_lexical"])
    lexical = lexical_space(texts).astype(np.float64)
    lexical /= np.linalg.norm(lexical, axis=1, keepdims=True)
    for name, labels in candidates.items():
        assert values["knn_holdout_lexical"][name] == pytest.approx(knn_holdout(lexical, labels, 0))
    # texts that share no word: no lexical space, so the vote is the shared spaces' mean
    lonely = [f"word{i} other{i}" for i in range(len(truth))]
    fallback = candidate_criteria(
        candidates, spaces, texts=lonely, criteria=["knn_holdout_lexical", "knn_holdout_shared"]
    )
    assert fallback["knn_holdout_lexical"] == fallback["knn_holdout_shared"]


def test_supported_vote_sets_aside_the_quarter_least_in_agreement_and_is_the_default():
    from hf_textcluster.choosing.consensus import average_nmi

    texts, truth = _texts()
    spaces = {"a": _space(truth, 4, 1), "pretrained": _space(truth, 1, 2)}
    rng = np.random.default_rng(5)
    noisy = [np.where(rng.random(truth.size) < share, rng.integers(0, 3, truth.size), truth) for share in (0.1, 0.2)]
    candidates = {
        "a/kmeans": truth,
        "a/umap_kmeans": noisy[0],
        "pretrained/kmeans": noisy[1],
        "consensus": truth.copy(),
        "pretrained/umap_kmeans": rng.permutation(truth),  # agrees with no other
    }
    values = candidate_criteria(candidates, spaces, texts=texts, criteria=["knn_holdout_lexical_supported"])
    assert list(values) == ["knn_holdout_lexical_supported"]  # its parts are not returned unless asked for
    parts = candidate_criteria(candidates, spaces, texts=texts, criteria=["agreement", "knn_holdout_lexical"])
    agreement, vote = average_nmi(candidates), parts["knn_holdout_lexical"]
    cut = np.quantile(list(agreement.values()), 0.25)
    for name, value in values["knn_holdout_lexical_supported"].items():
        assert value == pytest.approx(vote[name] - (agreement[name] < cut))
    assert values["knn_holdout_lexical_supported"]["pretrained/umap_kmeans"] < 0  # set aside, below every other
    assert DEFAULT_AUTO_CRITERION == "knn_holdout_lexical_supported" and DEFAULT_AUTO_CRITERION in AUTO_CRITERIA


@pytest.mark.parametrize(
    ("pick_votes", "umap_vote", "served"),
    [
        ((0.70, 0.70, 0.70), 0.60, "a/head"),  # the pick beats the BERTopic way in every view: served
        ((0.70, 0.70, 0.60), 0.60, "pretrained/umap_kmeans"),  # a tie in one view is not a win
        ((0.70, 0.50, 0.70), 0.60, "pretrained/umap_kmeans"),  # one view that prefers the BERTopic way vetoes
        ((0.50, 0.50, 0.50), 0.60, "pretrained/umap_kmeans"),
    ],
)
def test_the_guard_serves_the_bertopic_way_unless_the_pick_beats_it_in_every_view(pick_votes, umap_vote, served):
    criteria = {DEFAULT_AUTO_CRITERION: {"pretrained/umap_kmeans": 0.1, "a/head": 0.9, "b/kmeans": 0.5}}
    for guard, vote in zip(GUARD_CRITERIA, pick_votes, strict=True):
        criteria[guard] = {"pretrained/umap_kmeans": umap_vote, "a/head": vote, "b/kmeans": 0.99}
    # the guard compares the pick alone with the BERTopic way: a third candidate's vote does not enter
    assert guarded_choice(criteria, DEFAULT_AUTO_CRITERION) == (served, "a/head")


def test_the_guard_stands_aside_without_its_comparison():
    lexical = GUARD_CRITERIA[0]
    picked_umap = {"vote": {BERTOPIC_WAY: 0.9, "a/head": 0.1}, lexical: {BERTOPIC_WAY: 0.1, "a/head": 0.9}}
    assert guarded_choice(picked_umap, "vote") == (BERTOPIC_WAY, BERTOPIC_WAY)
    no_umap = {"vote": {"a/head": 0.9, "b/head": 0.1}, lexical: {"a/head": 0.1, "b/head": 0.9}}
    assert guarded_choice(no_umap, "vote") == ("a/head", "a/head")
    no_guard = {"vote": {BERTOPIC_WAY: 0.1, "a/head": 0.9}}
    assert guarded_choice(no_guard, "vote") == ("a/head", "a/head")
    # the views that were computed decide: the lexical vote alone, when the others are missing
    lexical_only = {**no_guard, lexical: {BERTOPIC_WAY: 0.5, "a/head": 0.4}}
    assert guarded_choice(lexical_only, "vote") == (BERTOPIC_WAY, "a/head")
    # ties of the criterion: the first listed
    assert highest({"x": 1.0, "y": 1.0}) == "x"
