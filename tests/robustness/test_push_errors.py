"""A Hub that never answers or refuses connections is one line naming the URL, within a timeout, before anything is
written or uploaded."""

from __future__ import annotations

import socket
import time

import pytest
import torch

import hf_textcluster  # noqa: F401
from hf_textcluster import SCCLModel
from hf_textcluster.editing import initialize_clusters
from hf_textcluster.hub import push_to_hub
from hf_textcluster.models.building import from_encoder_pretrained


@pytest.fixture(scope="module")
def model(tiny_encoder_dir, toy_corpus):
    torch.manual_seed(0)
    model = from_encoder_pretrained(SCCLModel, str(tiny_encoder_dir), num_clusters=3)
    initialize_clusters(model, toy_corpus[0])
    model.calibrate(toy_corpus[0])
    return model


@pytest.fixture()
def endpoint(monkeypatch):
    from huggingface_hub import constants

    def use(url):
        monkeypatch.setattr(constants, "ENDPOINT", url)
        monkeypatch.setattr(constants, "HF_HUB_ETAG_TIMEOUT", 1)
        return url

    return use


def test_an_endpoint_that_never_answers_times_out_naming_the_url(model, endpoint):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # connections are accepted by the kernel, and never answered
    url = endpoint(f"http://127.0.0.1:{silent.getsockname()[1]}")
    start = time.perf_counter()
    try:
        with pytest.raises(ConnectionError, match=rf"The Hub at {url} did not answer within 1s"):
            push_to_hub(model, "org/model")
    finally:
        silent.close()
    assert time.perf_counter() - start < 30


def test_a_closed_port_names_the_url(model, endpoint):
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    url = endpoint(f"http://127.0.0.1:{port}")
    with pytest.raises(ConnectionError, match=rf"Cannot reach the Hub at {url} .*Connection refused"):
        push_to_hub(model, "org/model")
