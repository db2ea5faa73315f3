"""The optional cross-encoder reranker, exercised with a tiny randomly initialised
cross-encoder built here (no cross-encoder ships on PyPI and the Hub is out of
reach): loading from a folder, parity with sentence-transformers, batching and
ordering, the export cache, and every way of not getting a model."""

from __future__ import annotations

import json
import socket
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from funes import reranking
from funes.embedding import file_sha256, shipped_model_dir
from funes.reranking import DEFAULT_RERANKER, configured_model, load_reranker

QUERY = "how did we fix the flaky lance compaction test?"
PASSAGES = [
    "Ran `pytest tests/test_lance.py -x`: 1 failed, compaction raced the reader.",
    "The fix: hold the writer lock while optimize() runs, then retry the read once.",
    "Unrelated: bumped polars to 2.1.0 in pyproject.toml.",
    "",
    "über naïve café — 東京 😀",
    "Traceback (most recent call last):\n  File \"store.py\", line 88\n" * 40,  # beyond 512 tokens
    "The fix: hold the writer lock while optimize() runs, then retry the read once.",
]


def build_cross_encoder(folder: Path, num_labels: int = 1) -> Path:
    """A 2-layer, 32-wide BERT cross-encoder with random weights and MiniLM's tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(str(shipped_model_dir()))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, num_labels=num_labels,
                        initializer_range=0.5)  # wide init: scores that actually differ between passages
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_cross_encoder(tmp_path_factory.mktemp("tiny-cross-encoder"))


@pytest.fixture
def fp32(tiny_model):
    reranker, reason = load_reranker(str(tiny_model), precision="fp32")
    assert reason is None
    return reranker


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def point_hub_client_at(monkeypatch, endpoint: str) -> None:
    """The Hub client bakes HF_ENDPOINT into these at import."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", endpoint + "/{repo_id}/resolve/{revision}/{filename}")


# --------------------------------------------------------------------------- scoring


def test_scores_match_sentence_transformers_cross_encoder(tiny_model, fp32):
    import torch
    from sentence_transformers import CrossEncoder

    expected = CrossEncoder(str(tiny_model), max_length=fp32.max_length, activation_fn=torch.nn.Identity(),
                            local_files_only=True).predict([(QUERY, p) for p in PASSAGES], batch_size=3)
    scores = fp32.score(QUERY, PASSAGES)
    assert scores.dtype == np.float32 and scores.shape == (len(PASSAGES),)
    np.testing.assert_allclose(scores, expected, rtol=1e-4, atol=1e-5)
    assert fp32.model_id == str(tiny_model) and fp32.max_length == 512


@pytest.mark.parametrize("precision", ["int8", "fp32"])
def test_order_is_the_models_own_scores_best_first(tiny_model, precision):
    reranker, _ = load_reranker(str(tiny_model), precision=precision)
    scores = reranker.score(QUERY, PASSAGES)
    assert len(set(scores.round(4).tolist())) > 3, "the fixture model should separate passages"
    order = reranker.rerank(QUERY, PASSAGES)
    assert order == sorted(range(len(PASSAGES)), key=lambda i: (-scores[i], i))


def test_scores_do_not_depend_on_batch_size(fp32):
    by_batch = {}
    for size in (1, 2, 5, 16):
        fp32.batch_size = size
        by_batch[size] = fp32.score(QUERY, PASSAGES)
    for scores in by_batch.values():
        np.testing.assert_allclose(scores, by_batch[1], rtol=1e-4, atol=1e-5)
    assert abs(by_batch[16][1] - by_batch[16][6]) < 1e-6  # identical passages, identical scores
    assert fp32.score(QUERY, []).shape == (0,)


def test_export_is_cached_by_weights_digest(tiny_model, monkeypatch):
    exports = []
    real_export = reranking.export_reranker
    monkeypatch.setattr(reranking, "export_reranker", lambda *args: (exports.append(args), real_export(*args)))
    load_reranker(str(tiny_model), precision="int8")
    load_reranker(str(tiny_model), precision="int8")
    folder = reranking.models_dir() / "rerankers" / file_sha256(tiny_model / "model.safetensors")
    assert {"model.onnx", "model.int8.onnx", "tokenizer.json", "reranker.json"} <= {p.name for p in folder.iterdir()}
    assert len(exports) <= 1  # another test may have exported it already


# --------------------------------------------------------------------------- not getting a model


def test_off_by_configuration(monkeypatch):
    assert configured_model() == DEFAULT_RERANKER
    monkeypatch.setenv("FUNES_RERANKER", "None")
    assert configured_model() is None
    assert load_reranker() == (None, "reranking is off (FUNES_RERANKER=none)")


def test_configured_folder_is_used(tiny_model, monkeypatch):
    monkeypatch.setenv("FUNES_RERANKER", str(tiny_model))
    reranker, reason = load_reranker()
    assert reason is None and reranker.model_id == str(tiny_model)


def test_unusable_folders_give_reasons_not_errors(tmp_path):
    reranker, reason = load_reranker(str(tmp_path / "absent"))
    assert reranker is None and "does not exist" in reason

    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no model weights" in load_reranker(str(empty)).reason

    two_labels = build_cross_encoder(tmp_path / "classifier", num_labels=2)
    assert "2 output labels" in load_reranker(str(two_labels)).reason

    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "config.json").write_text("{}")
    (damaged / "model.safetensors").write_bytes(b"\0" * 64)
    reranker, reason = load_reranker(str(damaged))
    assert reranker is None and reason.startswith(f"reranker {damaged} could not be loaded:")
    assert "\n" not in reason


def test_offline_mode_does_not_touch_the_network(monkeypatch):
    from huggingface_hub import HfApi

    monkeypatch.setattr(HfApi, "model_info", lambda *a, **k: pytest.fail("went to the network"))
    reranker, reason = load_reranker("funes-test/not-cached")
    assert reranker is None and "HF_HUB_OFFLINE" in reason
    assert not (reranking.state_dir() / "reranker-fetch-failures.json").exists()


@pytest.fixture
def unreachable_hub(tmp_path, monkeypatch):
    """Online mode pointed at a closed loopback port, with an empty HF cache."""
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    point_hub_client_at(monkeypatch, f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))


def test_unreachable_hub_fails_fast_and_is_not_retried_for_a_day(unreachable_hub, monkeypatch):
    """Fast by construction, not by this host's speed: one probe bounded by
    FETCH_TIMEOUT_S and no download (whose retries back off for ~25 s), then no
    further probe for a day."""
    import huggingface_hub
    from huggingface_hub import HfApi

    calls, downloads = [], []
    real_model_info = HfApi.model_info
    monkeypatch.setattr(HfApi, "model_info", lambda *a, **k: (calls.append(k), real_model_info(*a, **k))[1])
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda *a, **k: downloads.append(a))
    reranker, reason = load_reranker("funes-test/unreachable")
    assert [k.get("timeout") for k in calls] == [reranking.FETCH_TIMEOUT_S] and downloads == []
    assert reranker is None and "could not provide it" in reason and "\n" not in reason
    marker = reranking.state_dir() / "reranker-fetch-failures.json"
    failures = json.loads(marker.read_text())
    assert list(failures) == ["funes-test/unreachable"] and "ConnectError" in failures["funes-test/unreachable"]["error"]

    calls.clear()
    reranker, reason = load_reranker("funes-test/unreachable")
    assert reranker is None and "0.0 h ago" in reason and str(marker) in reason
    assert calls == []

    failures["funes-test/unreachable"]["failed_at"] -= 25 * 3600
    marker.write_text(json.dumps(failures))
    assert load_reranker("funes-test/unreachable").reranker is None
    assert len(calls) == 1


def test_reachable_hub_is_fetched_once_into_the_hf_cache(hub_server, hub_env, tiny_model, monkeypatch):
    from huggingface_hub import HfApi, constants

    from hub_server import TEST_USER

    repo_id = f"{TEST_USER}/tiny-reranker-{uuid.uuid4().hex[:8]}"
    api = HfApi(endpoint=hub_server.endpoint, token=hub_server.token)
    api.create_repo(repo_id)
    api.upload_folder(repo_id=repo_id, folder_path=tiny_model)
    point_hub_client_at(monkeypatch, hub_server.endpoint)
    marker = reranking.state_dir() / "reranker-fetch-failures.json"
    marker.parent.mkdir(parents=True)
    marker.write_text(json.dumps({repo_id: {"failed_at": time.time() - 30 * 3600, "error": "ConnectError: old"}}))

    reranker, reason = load_reranker(repo_id, precision="fp32")
    assert reason is None
    snapshot = next((hub_env / "hub").glob(f"models--{repo_id.replace('/', '--')}/snapshots/*"))
    assert (snapshot / "model.safetensors").exists()
    assert json.loads(marker.read_text()) == {}  # success forgets the old failure

    # Next time comes from the cache, without the network.
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    hub_server.reset_counts()
    again, reason = load_reranker(repo_id, precision="fp32")
    assert reason is None and hub_server.request_count == 0
    np.testing.assert_array_equal(again.score(QUERY, PASSAGES), reranker.score(QUERY, PASSAGES))


def test_hub_repo_without_weights_is_a_remembered_failure(hub_server, hub_env, tmp_path, monkeypatch):
    from huggingface_hub import HfApi

    from hub_server import TEST_USER

    repo_id = f"{TEST_USER}/not-a-model-{uuid.uuid4().hex[:8]}"
    api = HfApi(endpoint=hub_server.endpoint, token=hub_server.token)
    api.create_repo(repo_id)
    api.upload_file(repo_id=repo_id, path_or_fileobj=b"{}", path_in_repo="config.json")
    point_hub_client_at(monkeypatch, hub_server.endpoint)

    reranker, reason = load_reranker(repo_id)
    assert reranker is None and reason == f"Hub repo {repo_id} has no model.safetensors or pytorch_model.bin"
    hub_server.reset_counts()
    assert "h ago" in load_reranker(repo_id).reason and hub_server.request_count == 0


def test_a_recent_fetch_failure_answers_without_importing_the_hub_client(tmp_path):
    """A cold recall whose reranker is neither cached nor fetchable now (the failure
    on record is fresh) must not pay for importing the Hub API and HTTP stack."""
    import os
    import subprocess
    import sys

    marker = reranking.state_dir() / "reranker-fetch-failures.json"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"funes-test/failed": {"failed_at": time.time() - 3600, "error": "ConnectError: x"}}))
    code = ("import sys\nfrom funes.reranking import load_reranker\n"
            "print(load_reranker('funes-test/failed').reason)\n"
            "print(sorted(m for m in ('huggingface_hub.hf_api', 'huggingface_hub.file_download') if m in sys.modules))")
    env = {**os.environ, "HF_HUB_OFFLINE": "0", "HF_HUB_CACHE": str(tmp_path / "hf-cache")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    reason, imported = result.stdout.splitlines()
    assert "fetching it failed 1.0 h ago (ConnectError: x)" in reason
    assert imported == "[]"
