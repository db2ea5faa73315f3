"""The embedding model: ONNX parity with sentence-transformers, batching, identity,
the export cache, device choice (no GPU needed) and a torch-free query path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest

from funes import embedding
from funes.embedding import (
    IDENTITY,
    ModelIdentity,
    OnnxEmbedder,
    SentenceTransformersEmbedder,
    file_sha256,
    load_embedder,
    onnx_path,
    resolve_device,
    shipped_model_dir,
)
from funes.errors import FunesError, MemoryIncompatibleError, UsageError
from funes.files import write_atomically
from memory_helpers import copy_embedding_export
from paths import REAL, ROOT




def real_texts() -> list[str]:
    """Message texts and tool outputs of real Claude, Codex and pi sessions (one far
    beyond the 256-token window), plus empty and non-ASCII text."""
    texts: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ("text", "content", "output") and isinstance(item, str) and item.strip():
                    texts.append(item)
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for name in ("claude_session.jsonl", "codex_real_sample.jsonl", "pi_session.jsonl", "as_claude_small.jsonl"):
        for line in (REAL / name).read_text(encoding="utf-8").splitlines():
            walk(json.loads(line))
    unique = list(dict.fromkeys(texts))[:16]
    assert max(map(len, unique)) > 2000
    return unique + ["", "über naïve café — 東京 😀", "def f(x):\n    return x ** 2\n"]


@pytest.fixture(scope="module")
def onnx_embedder(shared_cache):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FUNES_CACHE_DIR", str(shared_cache))
        # Small batches so a handful of texts spans several padded batches.
        return OnnxEmbedder(batch_size=4)


@pytest.fixture(scope="module")
def reference():
    return SentenceTransformersEmbedder("cpu", batch_size=4)


# --------------------------------------------------------------------------- vectors


@pytest.mark.slow
def test_onnx_vectors_match_sentence_transformers(onnx_embedder, reference):
    texts = real_texts()
    ours, theirs = onnx_embedder.embed(texts), reference.embed(texts)
    assert ours.shape == theirs.shape == (len(texts), IDENTITY.dim)
    cosines = (ours * theirs).sum(axis=1)
    assert cosines.min() > 0.9999, cosines


def test_vectors_are_unit_float32_rows(onnx_embedder):
    vectors = onnx_embedder.embed(["a", "b " * 500, ""])
    assert vectors.dtype == np.float32 and vectors.shape == (3, IDENTITY.dim)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert onnx_embedder.embed([]).shape == (0, IDENTITY.dim)


def test_batches_sorted_by_length_come_back_in_input_order(onnx_embedder):
    texts = real_texts()
    batched = onnx_embedder.embed(texts)
    one_by_one = np.stack([onnx_embedder.embed([t])[0] for t in texts])
    np.testing.assert_allclose(batched, one_by_one, atol=1e-5)
    np.testing.assert_allclose(onnx_embedder.embed(texts[::-1]), batched[::-1], atol=1e-5)


def test_token_counts_include_special_tokens_and_are_not_truncated(onnx_embedder):
    long = "word " * 400
    assert onnx_embedder.token_counts(["hello world", "", long]) == [4, 2, 402]
    # Beyond the window only the first 256 tokens count: extra text changes nothing.
    np.testing.assert_allclose(onnx_embedder.embed([long]), onnx_embedder.embed([long + "tail " * 50]), atol=1e-6)


# --------------------------------------------------------------------------- identity


def test_identity_round_trips_through_schema_metadata():
    metadata = IDENTITY.to_metadata()
    assert all(isinstance(v, str) for v in metadata.values())
    # The keys the memory layer compares when it opens a table.
    for key in ("model_id", "revision", "dim"):
        assert f"funes.embedding.{key}" in metadata
    assert ModelIdentity.from_metadata(metadata) == IDENTITY
    # Arrow hands schema metadata back as bytes, mixed with other entries.
    raw = {k.encode(): v.encode() for k, v in metadata.items()} | {b"funes.schema_version": b"1"}
    assert ModelIdentity.from_metadata(raw) == IDENTITY


def test_identities_differ_when_vectors_would():
    other = ModelIdentity.from_metadata(IDENTITY.to_metadata() | {"funes.embedding.max_tokens": "512"})
    assert other != IDENTITY
    assert IDENTITY.revision[:12] in str(IDENTITY)


@pytest.mark.parametrize("broken", [
    {"funes.embedding.revision": None},
    {"funes.embedding.dim": "many"},
    {"funes.embedding.normalized": "maybe"},
])
def test_missing_or_malformed_identity_is_incompatible(broken):
    metadata = IDENTITY.to_metadata() | {k: v for k, v in broken.items() if v is not None}
    for key in [k for k, v in broken.items() if v is None]:
        del metadata[key]
    with pytest.raises(MemoryIncompatibleError):
        ModelIdentity.from_metadata(metadata)


def test_revision_is_the_digest_of_the_shipped_weights():
    assert file_sha256(shipped_model_dir() / "model.safetensors") == IDENTITY.revision


# --------------------------------------------------------------------------- export cache


@pytest.mark.slow
def test_export_is_cached_reused_and_rebuilt_when_damaged(tmp_path, monkeypatch):
    monkeypatch.setenv("FUNES_CACHE_DIR", str(tmp_path / "cache"))
    exports = []
    real_export = embedding.export_embedding_onnx
    monkeypatch.setattr(embedding, "export_embedding_onnx", lambda path: (exports.append(path), real_export(path)))

    folder = tmp_path / "cache" / "models" / IDENTITY.revision
    folder.mkdir(parents=True)
    for name in embedding.SUPERSEDED_EXPORTS:  # earlier funes's exports
        (folder / name).write_bytes(b"an earlier export")

    first = OnnxEmbedder()
    path = onnx_path()
    assert path == folder / "model-eager.fp32.onnx"
    assert exports == [path] and path.is_file()
    # The weights beside the graph, no temp files left, the earlier exports gone.
    assert sorted(p.name for p in folder.iterdir()) == ["model-eager.fp32.onnx", "model-eager.fp32.onnx.data"]
    stamp = path.stat().st_mtime_ns

    second = OnnxEmbedder()
    assert len(exports) == 1 and path.stat().st_mtime_ns == stamp
    np.testing.assert_array_equal(first.embed(["cache hit"]), second.embed(["cache hit"]))

    path.write_bytes(b"not an onnx model")
    third = OnnxEmbedder()
    assert len(exports) == 2
    np.testing.assert_allclose(third.embed(["cache hit"]), first.embed(["cache hit"]), atol=1e-6)

    weights = path.with_name(path.name + ".data")
    weights.write_bytes(weights.read_bytes()[: 1 << 20])  # cut short
    fourth = OnnxEmbedder()
    assert len(exports) == 3
    np.testing.assert_allclose(fourth.embed(["cache hit"]), first.embed(["cache hit"]), atol=1e-6)


@pytest.mark.slow
def test_the_export_leaves_torch_out_of_the_process_that_embeds(tmp_path):
    """torch and transformers, which the export imports, stay resident in whoever
    imports them: a first `funes index` would carry them for the hours it embeds.
    The export runs in an interpreter of its own."""
    probe = ("import sys; from funes.embedding import load_embedder; load_embedder().embed(['x']); "
             "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    env = {**os.environ, "FUNES_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert (tmp_path / "cache" / "models" / IDENTITY.revision / "model-eager.fp32.onnx").is_file()


@pytest.mark.slow  # exports the model from torch into an empty cache (40 s or more)
def test_a_failed_export_is_one_line_naming_the_path(tmp_path, monkeypatch):
    blocked = tmp_path / "cache"
    blocked.write_text("a file where the cache folder should be")
    monkeypatch.setenv("FUNES_CACHE_DIR", str(blocked))
    with pytest.raises(FunesError) as failed:
        embedding.export_embedding_onnx(onnx_path())
    message = str(failed.value)
    assert message.startswith(f"exporting the embedding model to {onnx_path()} failed: ")
    assert "\n" not in message and "Traceback" not in message


def test_files_appear_whole_or_not_at_all(tmp_path, monkeypatch):
    target = tmp_path / "models" / "model.onnx"
    seen = []
    real_replace = os.replace

    def replace(source, destination):
        seen.append((Path(source).read_bytes(), Path(destination).exists()))
        real_replace(source, destination)

    monkeypatch.setattr(os, "replace", replace)
    write_atomically(target, b"x" * 1000)
    assert seen == [(b"x" * 1000, False)] and target.read_bytes() == b"x" * 1000

    def crash(source, destination):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        write_atomically(target, b"y" * 1000)
    assert target.read_bytes() == b"x" * 1000
    assert sorted(p.name for p in target.parent.iterdir()) == ["model.onnx"]


def test_query_process_imports_neither_torch_nor_sentence_transformers(onnx_embedder, shared_cache):
    script = (
        "import sys\n"
        "from funes.embedding import load_embedder\n"
        "e = load_embedder(for_queries=True)\n"
        "assert e.embed(['where is the lance table?']).shape == (1, 384)\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))\n"
    )
    env = os.environ | {"FUNES_CACHE_DIR": str(shared_cache), "FUNES_DEVICE": "auto"}
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --------------------------------------------------------------------------- devices


@pytest.fixture
def gpu(monkeypatch):
    """Set whether a CUDA device is visible; counts the (normally torch-importing) probes."""
    state = {"available": False, "probes": 0}

    def available() -> bool:
        state["probes"] += 1
        return state["available"]

    monkeypatch.setattr(embedding, "cuda_available", available)
    return state


def test_auto_picks_cuda_when_present_else_cpu(gpu):
    assert resolve_device() == "cpu"
    gpu["available"] = True
    assert resolve_device() == "cuda"
    assert resolve_device("auto") == "cuda"


def test_query_embedding_never_probes_for_a_gpu(gpu):
    gpu["available"] = True
    assert resolve_device(for_queries=True) == "cpu"
    assert gpu["probes"] == 0
    assert resolve_device("cuda", for_queries=True) == "cuda"  # asked for explicitly


def test_device_from_argument_then_environment(gpu, monkeypatch):
    gpu["available"] = True
    monkeypatch.setenv("FUNES_DEVICE", "CPU")
    assert resolve_device() == "cpu"
    assert resolve_device("cuda") == "cuda"
    monkeypatch.setenv("FUNES_DEVICE", "tpu")
    with pytest.raises(UsageError, match="tpu"):
        resolve_device()


def test_cuda_requested_without_a_gpu_is_an_error(gpu):
    with pytest.raises(FunesError, match="no CUDA device"):
        resolve_device("cuda")


def test_load_embedder_builds_the_backend_for_the_device(gpu, monkeypatch, onnx_embedder):
    built = []
    monkeypatch.setattr(embedding, "SentenceTransformersEmbedder", lambda device: built.append(device) or "st")
    monkeypatch.setattr(embedding, "OnnxEmbedder", lambda: "onnx")
    assert load_embedder() == "onnx"
    gpu["available"] = True
    assert load_embedder() == "st" and built == ["cuda"]
    assert load_embedder(for_queries=True) == "onnx"
    assert load_embedder("cpu") == "onnx"


@pytest.mark.parametrize("version_py, has_gpu", [
    ("cuda: Optional[str] = None\nhip: Optional[str] = None\n", False),
    ("cuda: Optional[str] = '12.8'\nhip: Optional[str] = None\n", True),
    ("cuda = None\nhip = '6.4.43482'\n", True),
])
def test_torch_build_kind_is_read_without_importing_torch(tmp_path, monkeypatch, version_py, has_gpu):
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("raise ImportError('must not be imported')\n")
    (tmp_path / "torch" / "version.py").write_text(version_py)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert embedding._torch_build_has_gpu() is has_gpu


# --------------------------------------------------------------------------- speed levers


def test_equal_texts_are_run_once_and_get_equal_vectors(onnx_embedder, monkeypatch):
    texts = real_texts()[:6]
    alone = onnx_embedder.embed(texts)
    rows_run = []
    real_run = onnx_embedder._run
    monkeypatch.setattr(onnx_embedder, "_run", lambda feed: (rows_run.append(len(feed["input_ids"])), real_run(feed))[1])
    repeated = [texts[i] for i in (0, 1, 0, 2, 3, 1, 4, 5, 0)]
    vectors = onnx_embedder.embed(repeated)
    assert sum(rows_run) == 6  # each distinct text once
    np.testing.assert_allclose(vectors, alone[[0, 1, 0, 2, 3, 1, 4, 5, 0]], atol=1e-5)


def test_unknown_precision_is_a_usage_error():
    with pytest.raises(UsageError, match="precision 'fp16'"):
        OnnxEmbedder(precision="fp16")


@pytest.mark.slow  # exports the model from torch into an empty cache (40 s or more)
def test_the_int8_model_is_derived_fused_and_without_torch(onnx_embedder, shared_cache, tmp_path, monkeypatch):
    """onnxruntime's ``optimize_model`` imports torch, which stayed resident in the
    indexer (+860 MB) and then made the child that derives the model 1.1 GB instead
    of 0.7: the derivation runs its steps without it, in the process that asks for the
    model as well as in the child the indexer uses.  (``onnx_embedder``: the fp32
    export is in the shared cache.)  Each layer's attention is one fused QAttention
    op: an export the optimizer cannot fuse (transformers' sdpa attention) left 443
    graph nodes instead of 124 and cost 5-11 % more CPU a text (:data:`funes.embedding.EXPORT_STEM`)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("FUNES_CACHE_DIR", str(cache))
    copy_embedding_export(shared_cache)
    probe = ("import sys; from funes.embedding import onnx_path, quantise_here; "
             "quantise_here(str(onnx_path()), str(onnx_path('int8'))); "
             "print(onnx_path('int8').is_file(), sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "FUNES_CACHE_DIR": str(cache)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "[]"]
    ops = Counter(node.op_type for node in onnx.load(str(onnx_path("int8"))).graph.node)
    assert ops["QAttention"] == 6 and ops["Softmax"] == 0, ops  # all-MiniLM-L6-v2: 6 layers


@pytest.mark.slow
def test_int8_model_is_derived_locally_the_same_each_time_and_stays_near_fp32(onnx_embedder, shared_cache, tmp_path,
                                                                             monkeypatch):
    # A fresh cache holding only the fp32 export: the int8 file comes from it, never
    # from the network or the weights again.
    monkeypatch.setenv("FUNES_CACHE_DIR", str(tmp_path / "cache"))
    copy_embedding_export(shared_cache)
    monkeypatch.setattr(embedding, "export_embedding_onnx", lambda path: pytest.fail("int8 re-exported the weights"))

    int8 = OnnxEmbedder(precision="int8")
    path = onnx_path("int8")
    assert int8.model_file == path and path.is_file()
    assert sorted(p.name for p in path.parent.iterdir()) == ["model-eager.fp32.onnx", "model-eager.fp32.onnx.data",
                                                             "model-eager.int8.onnx"]  # no temp files left
    digest = file_sha256(path)
    path.unlink()
    again = OnnxEmbedder(precision="int8")
    assert file_sha256(path) == digest

    texts = real_texts()
    quantised, reference = again.embed(texts), onnx_embedder.embed(texts)
    np.testing.assert_allclose(np.linalg.norm(quantised, axis=1), 1.0, atol=1e-5)
    cosines = (quantised * reference).sum(axis=1)
    assert cosines.min() > 0.95 and cosines.mean() > 0.98, cosines
    assert not np.allclose(quantised, reference, atol=1e-4)  # it really is another model
