"""The rerank stage of recall: which one runs, and cross-encoders.

``FUNES_RERANKER`` names the stage: ``maxsim-static`` (the default) and ``maxsim``
are late interaction over the shipped MiniLM (funes/late_interaction.py); any other
value is a cross-encoder, a Hub model id or a local folder; ``none`` turns the stage
off.  A cross-encoder is found, in order:
the folder itself, the standard Hugging Face cache (offline), and, when the Hub can
be reached, a one-time fetch into that cache.  A failed fetch is remembered for a
day under ``$FUNES_HOME/state`` so recall does not wait on the network every call.
When no model can be had, :func:`load_reranker` returns no reranker and a one-line
reason; recall then keeps its fused ranking and reports the reason.

Scoring runs on onnxruntime with int8 dynamic quantisation (per-channel, MatMul
only) of an ONNX export made here on first use and cached by the weights' sha256.
With a MiniLM-L6 cross-encoder over 30 (query, transcript chunk) pairs on the
project's 2-core CPU (benchmarks/rerank_latency.py, quiet machine, batches of 8),
int8 onnxruntime was the fastest backend: 0.52 s for 600-character chunks against
0.64 s for torch bf16, 0.78 s for onnxruntime fp32 and 1.5 s for torch fp32 (for
800-character chunks: int8 0.78 s, onnxruntime fp32 1.15 s).  It needs no torch
at run time (importing sentence-transformers alone takes ~4.5 s) and no BF16
hardware.  Reranking only orders the candidates: on a random-head proxy int8 kept
fp32's order of 30 candidates with Spearman 0.97 and 90 % top-5 overlap;
``precision="fp32"`` gives exact scores.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from funes.config import models_dir, state_dir
from funes.embedding import (
    cpu_session,
    export_onnx,
    file_sha256,
    quantise_onnx,
    quiet_model_loading,
    run_length_sorted,
)
from funes.files import write_atomically
from funes.late_interaction import (
    MAXSIM,
    WORD_PIECE_MAXSIM,
    LateInteractionUnavailable,
    MaxSimReranker,
    WordPieceMaxSim,
)

# Late interaction over the shipped model's word pieces: what measured best on every
# dev set within a warm recall's budget (funes/late_interaction.py).
DEFAULT_RERANKER = WORD_PIECE_MAXSIM
PRECISIONS = ("int8", "fp32")
# Length-sorted batches of 8 were fastest (or within noise of it) for int8 over
# 30 pairs of 220–370 tokens on 2 cores; 16 and 32 only add padding.
BATCH_SIZE = 8
# Bounds the Hub reachability probe; the download proper then has the Hub client's
# own per-request timeouts.
FETCH_TIMEOUT_S = 5.0
FETCH_RETRY_AFTER_S = 24 * 3600
# Files a cross-encoder needs from a Hub repo besides one weights file; skips the
# ONNX/OpenVINO variants many reranker repos also carry (hundreds of MB).
HUB_FILES = ["*.json", "*.txt", "*.model"]
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")  # preferred first


class RerankerUnavailable(Exception):
    """Why no reranker could be loaded; ``str()`` is the one-line reason."""


class RerankerLoad(NamedTuple):
    reranker: Reranker | MaxSimReranker | WordPieceMaxSim | None
    reason: str | None  # set exactly when reranker is None


@dataclass(frozen=True)
class CachedExport:
    """The files derived from one cross-encoder's weights."""

    folder: Path

    @classmethod
    def for_weights(cls, weights: Path) -> CachedExport:
        return cls(models_dir() / "rerankers" / file_sha256(weights))

    def model(self, precision: str) -> Path:
        return self.folder / ("model.onnx" if precision == "fp32" else f"model.{precision}.onnx")

    @property
    def tokenizer(self) -> Path:
        return self.folder / "tokenizer.json"

    @property
    def settings(self) -> Path:
        return self.folder / "reranker.json"


class Reranker:
    """Scores (query, passage) pairs with a cross-encoder; higher is more relevant."""

    def __init__(self, model_id: str, export: CachedExport, precision: str, batch_size: int = BATCH_SIZE):
        from tokenizers import Tokenizer

        self.model_id = model_id  # as configured: a Hub id or a folder
        self.precision = precision
        self.batch_size = batch_size
        self._session = cpu_session(export.model(precision))
        self._input_names = {i.name for i in self._session.get_inputs()}
        settings = json.loads(export.settings.read_text())
        self.max_length = int(settings["max_length"])
        self._tokenizer = Tokenizer.from_file(str(export.tokenizer))
        self._tokenizer.no_padding()  # run_length_sorted pads each batch to its own longest pair
        self._tokenizer.enable_truncation(self.max_length, strategy="longest_first")

    def _run(self, feed: dict[str, np.ndarray]) -> np.ndarray:
        inputs = {name: array for name, array in feed.items() if name in self._input_names}
        (logits,) = self._session.run(["logits"], inputs)
        return logits[:, 0].astype(np.float32, copy=False)

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """One raw relevance logit per passage, float32, in passage order."""
        if not passages:
            return np.zeros(0, dtype=np.float32)
        encodings = self._tokenizer.encode_batch([(query, passage) for passage in passages])
        return run_length_sorted(encodings, self.batch_size, self._run)

    def rerank(self, query: str, passages: Sequence[str]) -> list[int]:
        """Indices of ``passages``, most relevant first (ties keep input order)."""
        return np.argsort(-self.score(query, passages), kind="stable").tolist()


# --------------------------------------------------------------------------- export


def _weights_in(folder: Path) -> Path | None:
    return next((folder / name for name in WEIGHT_FILES if (folder / name).is_file()), None)


def export_reranker(folder: Path, export: CachedExport, precision: str) -> None:
    """Derive the cached files for ``precision`` from the cross-encoder in ``folder``.

    The model file is written last, so its presence means the export is complete.
    """
    fp32 = export.model("fp32")
    if not fp32.is_file():
        with quiet_model_loading():
            from transformers import AutoModelForSequenceClassification, AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
            model = AutoModelForSequenceClassification.from_pretrained(str(folder), local_files_only=True)
        if model.config.num_labels != 1:
            raise RerankerUnavailable(
                f"{folder} has {model.config.num_labels} output labels; a reranker gives one relevance score"
            )
        if not tokenizer.is_fast:
            raise RerankerUnavailable(f"{folder} has no fast (tokenizers) tokenizer")
        # A tokenizer without a real limit reports a huge sentinel; positions cap it.
        max_length = min(int(tokenizer.model_max_length), int(model.config.max_position_embeddings))
        write_atomically(export.tokenizer, tokenizer.backend_tokenizer.to_str().encode())
        write_atomically(export.settings, json.dumps({"max_length": max_length, "source": str(folder)}).encode())
        input_names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in tokenizer.model_input_names]
        export_onnx(model.eval(), input_names, "logits", {0: "batch"}, fp32)
    if precision == "int8" and not export.model("int8").is_file():
        quantise_onnx(fp32, export.model("int8"))


def reranker_from_folder(folder: Path, *, model_id: str, precision: str) -> Reranker:
    weights = _weights_in(folder)
    if weights is None:
        raise RerankerUnavailable(f"{folder} holds no model weights ({' or '.join(WEIGHT_FILES)})")
    export = CachedExport.for_weights(weights)
    if not export.model(precision).is_file():
        export_reranker(folder, export, precision)
    return Reranker(model_id, export, precision)


# --------------------------------------------------------------------------- locating


def _one_line(error: Exception) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0][:200]}" if lines else type(error).__name__


def _fetch_failures_file() -> Path:
    return state_dir() / "reranker-fetch-failures.json"


def _fetch_failures() -> dict[str, dict[str, Any]]:
    try:
        failures = json.loads(_fetch_failures_file().read_text())
    except (OSError, ValueError):
        return {}
    return failures if isinstance(failures, dict) else {}


def _record_fetch(repo_id: str, error: Exception | None) -> None:
    failures = _fetch_failures()
    if error is None:
        if failures.pop(repo_id, None) is None:
            return
    else:
        failures[repo_id] = {"failed_at": time.time(), "error": _one_line(error)}
    with contextlib.suppress(OSError):  # a read-only state dir only costs a retry next time
        write_atomically(_fetch_failures_file(), json.dumps(failures, indent=1).encode())


def _has_model(folder: Path) -> bool:
    return (folder / "config.json").is_file() and _weights_in(folder) is not None


def _hub_offline(client_offline: bool) -> bool:
    """The Hub client's offline flag, or the variables it reads only at import time
    (so a variable set later in the process, e.g. by a test, still counts)."""
    variables = (os.environ.get(n, "").strip().lower() for n in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
    return client_offline or any(v in {"1", "true", "yes", "on"} for v in variables)


def _cached_snapshot(repo_id: str, hub_cache: str) -> Path | None:
    """The cached snapshot of ``repo_id``'s main branch when it holds a model.

    Read from the Hugging Face cache layout (``models--{org}--{name}/refs/main``
    names the commit under ``snapshots/``) rather than through the client: the
    client's lookup imports its Hub API and HTTP stack, 0.4 s of a cold recall."""
    repo = Path(hub_cache) / f"models--{repo_id.replace('/', '--')}"
    try:
        commit = (repo / "refs" / "main").read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    snapshot = repo / "snapshots" / commit
    return snapshot if commit and "/" not in commit and _has_model(snapshot) else None


def _from_hub(repo_id: str) -> Path:
    # Only the client's constants here (the cache folder, the offline flag): the Hub
    # API is imported when a fetch is really tried.
    from huggingface_hub import constants

    cached = _cached_snapshot(repo_id, constants.HF_HUB_CACHE)
    if cached is not None:
        return cached
    if _hub_offline(constants.HF_HUB_OFFLINE):
        raise RerankerUnavailable(f"reranker {repo_id} is not in the Hugging Face cache and HF_HUB_OFFLINE is set")
    failure = _fetch_failures().get(repo_id)
    if failure and time.time() - failure.get("failed_at", 0) < FETCH_RETRY_AFTER_S:
        hours = (time.time() - failure["failed_at"]) / 3600
        raise RerankerUnavailable(
            f"reranker {repo_id} is not in the Hugging Face cache and fetching it failed {hours:.1f} h ago"
            f" ({failure.get('error', '?')}); next try after 24 h, or delete {_fetch_failures_file()}"
        )
    from huggingface_hub import HfApi, snapshot_download
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    # Checked only here, before the network: a name that is no repo id is in no cache
    # and has no failure on record (only checked names are fetched).
    try:
        validate_repo_id(repo_id)
    except HFValidationError as exc:
        raise RerankerUnavailable(f"reranker {repo_id!r} is neither a folder nor a Hugging Face model id") from exc
    try:
        # A bounded probe first: the client sets no timeout of its own on this call,
        # and its file downloads retry with back-off for ~25 s before giving up.
        listed = {f.rfilename for f in HfApi().model_info(repo_id, timeout=FETCH_TIMEOUT_S).siblings or []}
        weights = next((name for name in WEIGHT_FILES if name in listed), None)
        if weights is None:
            raise RerankerUnavailable(f"Hub repo {repo_id} has no {' or '.join(WEIGHT_FILES)}")
        # By branch, not by the probe's commit: only then does the cache record
        # refs/main, which the offline lookup above needs next time.
        fetched = Path(snapshot_download(repo_id, allow_patterns=[*HUB_FILES, weights], etag_timeout=FETCH_TIMEOUT_S))
        if not _has_model(fetched):
            raise RerankerUnavailable(f"Hub repo {repo_id} has no config.json")
    except Exception as exc:  # unreachable, unknown repo, refused, timed out, not a model: all mean "not now"
        _record_fetch(repo_id, exc)
        if isinstance(exc, RerankerUnavailable):
            raise
        raise RerankerUnavailable(
            f"reranker {repo_id} is not in the Hugging Face cache and the Hub could not provide it"
            f" ({type(exc).__name__}); not retrying for 24 h"
        ) from exc
    _record_fetch(repo_id, None)
    return fetched


def locate_model(name: str) -> Path:
    """The folder holding cross-encoder ``name`` (a folder path or a Hub model id)."""
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    if path.is_absolute() or name.startswith((".", "~")):
        raise RerankerUnavailable(f"reranker folder {name} does not exist")
    return _from_hub(name)


def _is_off(name: str) -> bool:
    return name.strip().lower() == "none"


def configured_model() -> str | None:
    """The reranker named by ``FUNES_RERANKER`` (default model), or None when ``none``."""
    name = os.environ.get("FUNES_RERANKER", "").strip() or DEFAULT_RERANKER
    return None if _is_off(name) else name


def load_reranker(model: str | None = None, *, precision: str = "int8") -> RerankerLoad:
    """Load ``model`` (default: :func:`configured_model`) for scoring.

    Never raises because a model is missing, unreachable or unusable: the result
    then carries ``reranker=None`` and a one-line ``reason`` for ``status``/``--json``.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, not {precision!r}")
    name = model or configured_model()
    if name is None or _is_off(name):
        return RerankerLoad(None, "reranking is off (FUNES_RERANKER=none)")
    try:
        if name.strip().lower() == WORD_PIECE_MAXSIM:
            return RerankerLoad(WordPieceMaxSim(), None)
        if name.strip().lower() == MAXSIM:
            return RerankerLoad(MaxSimReranker(precision), None)
        folder = locate_model(name)
        return RerankerLoad(reranker_from_folder(folder, model_id=name, precision=precision), None)
    except (RerankerUnavailable, LateInteractionUnavailable) as exc:
        return RerankerLoad(None, str(exc))
    except Exception as exc:  # a damaged or unsupported model must not break recall
        return RerankerLoad(None, f"reranker {name} could not be loaded: {_one_line(exc)}")
