"""Late interaction: recall's candidates scored word piece by word piece against
the query, from the shipped MiniLM alone (no model of their own, nothing fetched).

A passage scores the mean, over the query's word pieces, of each piece's best
cosine to one of the passage's first :data:`MAXSIM_TOKENS` pieces (MaxSim), so a
passage holding the query's rare identifiers rises above one that only shares its
topic.  Two sources of the pieces' vectors:

* :class:`WordPieceMaxSim` (``maxsim-static``, the default rerank stage): each
  piece's row of the model's input embedding table, read from the shipped
  safetensors by memory map.  No model runs: a recall of 30 candidates spends
  tens of milliseconds on it.
* :class:`MaxSimReranker` (``maxsim``, opt-in): the model's contextual token
  vectors, one int8 model run over every candidate on each query (one to two
  seconds of CPU for 30 candidates): over the ranking as it ships it orders the
  coding dev sets no better than the default, far over a warm recall's budget.

Each blends with the fused score at its ``blend_weight`` (both min–max scaled
over the candidates, retrieval/search.py); the weights were chosen leave one
session out over every dev set (BENCHMARKS.md "Recall rerank stage (dev sets)";
why: "Late interaction").  Recall hands
a stage each tool result after the head of the call that made it, as BM25 reads
it (funes/memory/documents.py).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np

MAXSIM = "maxsim"
WORD_PIECE_MAXSIM = "maxsim-static"
# A passage's first pieces: longer windows lose ordering on the coding dev sets
# (more pieces give an off-topic passage more chances at a close match).
MAXSIM_TOKENS = 128
# Characters of a passage handed to the tokenizer: tokenizers encodes a whole text
# before truncating it, and a candidate can be a long tool result; a word piece
# spans at most about 16 characters besides whitespace, so this still yields
# MAXSIM_TOKENS pieces of any but whitespace-heavy text.
MAXSIM_CHARS = 16 * MAXSIM_TOKENS
EMBEDDING_TABLE = "embeddings.word_embeddings.weight"


class LateInteractionUnavailable(Exception):
    """Why a late-interaction stage cannot run; ``str()`` is the one-line reason."""


def maxsim(asked: np.ndarray, passages: Sequence[np.ndarray]) -> np.ndarray:
    """Per passage: the mean over ``asked``'s unit rows of each one's best cosine
    to one of the passage's unit rows (0 for an empty query or passage)."""
    if not len(asked):
        return np.zeros(len(passages), dtype=np.float32)
    return np.array([(asked @ tokens.T).max(axis=1).mean() if len(tokens) else 0.0 for tokens in passages],
                    dtype=np.float32)


def safetensors_rows(path: Path, name: str) -> np.ndarray:
    """Tensor ``name`` of a safetensors file as a read-only memory map.

    The safetensors package copies a whole tensor (or contiguous slices) into
    memory; a recall needs a few thousand scattered rows of a 47 MB table, so the
    file's documented layout (an 8-byte little-endian header size, a JSON header
    of dtype, shape and byte offsets, then the data) is mapped directly."""
    try:
        with open(path, "rb") as handle:
            (size,) = struct.unpack("<Q", handle.read(8))
            header = json.loads(handle.read(size))
    except (OSError, struct.error, ValueError) as exc:
        raise LateInteractionUnavailable(f"cannot read the embedding weights {path}: {exc}") from exc
    entry = header.get(name) if isinstance(header, dict) else None
    if not isinstance(entry, dict) or entry.get("dtype") != "F32" or len(entry.get("shape", ())) != 2:
        raise LateInteractionUnavailable(f"{path} holds no float32 matrix {name}")
    start, end = entry["data_offsets"]
    rows, width = entry["shape"]
    if end - start != rows * width * 4:
        raise LateInteractionUnavailable(f"{path}: {name} is {end - start} bytes, expected {rows * width * 4}")
    return np.memmap(path, dtype="<f4", mode="r", offset=8 + size + start, shape=(rows, width))


class WordPieceMaxSim:
    """MaxSim over the shipped MiniLM's word-piece embeddings (its input table)."""

    model_id = WORD_PIECE_MAXSIM
    # Chosen leave one session out over the coding, coding dev2 and LoCoMo dev sets
    # together with the answer-type weight and the fusion's dense weight, every fold
    # taking the best sum over the sets of each set's R@10 + MRR@10 + gold within the
    # output's first 1,000 tokens (BENCHMARKS.md "Recall rerank stage (dev sets)");
    # tests/retrieval/test_recall_choice.py holds it to benchmarks/recall_choice.json.
    blend_weight = 0.3

    def __init__(self) -> None:
        from tokenizers import Tokenizer

        from funes.embedding import shipped_model_dir

        folder = shipped_model_dir()
        self._table = safetensors_rows(folder / "model.safetensors", EMBEDDING_TABLE)
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(MAXSIM_TOKENS + 2)  # [CLS] and [SEP] around the pieces

    def _pieces(self, texts: Sequence[str]) -> list[np.ndarray]:
        return [np.array([i for i, special in zip(e.ids, e.special_tokens_mask, strict=True) if not special],
                         dtype=np.int64)
                for e in self._tokenizer.encode_batch([text[:MAXSIM_CHARS] for text in texts])]

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        if not passages:
            return np.zeros(0, dtype=np.float32)
        pieces = self._pieces([query, *passages])
        # Each distinct piece is read from the map and normalised once.
        distinct, position = np.unique(np.concatenate(pieces), return_inverse=True)
        vectors = np.asarray(self._table[distinct], dtype=np.float32)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        bounds = np.cumsum([0, *(len(p) for p in pieces)])
        by_text = [vectors[position[a:b]] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        return maxsim(by_text[0], by_text[1:])


class MaxSimReranker:
    """MaxSim over the shipped MiniLM's contextual token vectors (``FUNES_RERANKER=maxsim``)."""

    model_id = MAXSIM
    # Chosen leave-one-session-out on both coding dev sets (BENCHMARKS.md "Late
    # interaction"); alone it loses R@10.
    blend_weight = 0.7

    def __init__(self, precision: str = "int8"):
        from funes.embedding import OnnxEmbedder

        self._embedder = OnnxEmbedder(precision=precision)

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        if not passages:
            return np.zeros(0, dtype=np.float32)
        vectors = self._embedder.token_vectors([query, *passages], MAXSIM_TOKENS)
        return maxsim(vectors[0], vectors[1:])
