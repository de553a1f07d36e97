"""Stage 3 (spec §5): a cross-encoder reads the query beside each candidate and reorders the
top of the fused list.

Rankers behind one interface: a local ONNX cross-encoder from a folder the user configures
(nothing is ever downloaded), a TEI server (`POST /rerank`), or a Cohere-compatible one
(`POST /v1/rerank`). A ranker that fails or runs past its timeout leaves the fused order and
the answer says why; it never fails the search.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from autodoc.models.embedders import (
    MAX_BATCH,
    Meter,
    ProviderError,
    pad_batch,
    post_json,
    token_batches,
)
from autodoc.models.onnx_sessions import cpu_session
from autodoc.wire import protocol
from autodoc.wire.provider_specs import TIMEOUT_DEFAULT, WINDOW_DEFAULT, validate_ranker

NO_RANKER = "no ranker configured"
NOT_REQUESTED = "not requested"
API_KEY_ENV = "AUTODOC_RANK_API_KEY"


class RankFailed(Exception):
    """The ranker could not score this window; the fused order stands."""


class Ranker(Protocol):
    name: str
    meter: Meter

    def score(self, query: str, passages: list[str]) -> np.ndarray: ...


# -- local ONNX ---------------------------------------------------------------------------------


class OnnxRanker:
    """A cross-encoder graph: (query, passage) pairs in, one relevance logit per pair out."""

    def __init__(
        self,
        model: Path,
        tokenizer: Path,
        *,
        name: str = "",
        max_length: int = 512,
        sigmoid: bool = False,
        threads: int = 0,
        batch_tokens: int = 512,  # measured: one long pair per call beats batches on a CPU
    ) -> None:
        from tokenizers import Tokenizer

        self.name = name or model.parent.name or model.stem
        self.sigmoid = sigmoid
        self.batch_tokens = batch_tokens
        self.tokenizer = Tokenizer.from_file(str(tokenizer))
        # Long passages lose their tail, never the query.
        self.tokenizer.enable_truncation(max_length, strategy="only_second")
        padding = self.tokenizer.padding or {}
        self.pad_id = int(padding.get("pad_id", 0))
        self.tokenizer.no_padding()
        self.session = cpu_session(model, threads)
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.meter = Meter()

    def _forward(self, enc: list) -> np.ndarray:
        ids, mask, types = pad_batch(enc, self.pad_id)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = types
        logits = np.asarray(self.session.run(None, feed)[0], dtype=np.float32)
        # [batch, 1], or [batch, 2] for a two-class head (the second class is "relevant").
        scores = logits.reshape(len(enc), -1)[:, -1]
        return 1.0 / (1.0 + np.exp(-scores)) if self.sigmoid else scores

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        out = np.zeros(len(passages), np.float32)
        if not passages:
            return out
        enc = self.tokenizer.encode_batch([(query, p) for p in passages])
        lengths = [len(e.ids) for e in enc]
        for idx in token_batches(lengths, self.batch_tokens, MAX_BATCH):
            t0 = time.perf_counter()
            out[idx] = self._forward([enc[i] for i in idx])
            tokens = sum(lengths[i] for i in idx)
            self.meter.add(len(idx), tokens, (time.perf_counter() - t0) * 1000)
        return out


# -- HTTP: TEI and Cohere-compatible ------------------------------------------------------------


class HttpRanker:
    """TEI: `POST {base}/rerank` {query, texts} -> [{index, score}].
    Cohere: `POST {base}/v1/rerank` {model, query, documents, top_n} -> {results: [{index,
    relevance_score}]}."""

    def __init__(
        self,
        kind: str,
        base_url: str,
        model: str = "",
        *,
        api_key_env: str | None = API_KEY_ENV,
        timeout: float = TIMEOUT_DEFAULT,
    ) -> None:
        base = base_url.rstrip("/")
        if kind == "tei":
            self.url = base + "/rerank"
        else:
            self.url = base + ("/rerank" if base.endswith("/v1") else "/v1/rerank")
        self.kind = kind
        self.model = model
        self.name = model or f"{kind} at {base}"
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.meter = Meter()

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        if not passages:
            return np.zeros(0, np.float32)
        if self.kind == "tei":
            body: dict[str, Any] = {"query": query, "texts": passages, "truncate": True}
        else:
            body = {
                "model": self.model,
                "query": query,
                "documents": passages,
                "top_n": len(passages),
                "return_documents": False,
            }
        t0 = time.perf_counter()
        try:
            payload = post_json(self.url, body, self.api_key_env, self.timeout)
        except ProviderError as exc:
            self.meter.errors += 1
            raise RankFailed(f"ranker {exc}") from None
        try:
            rows = payload if self.kind == "tei" else payload["results"]
            field = "score" if self.kind == "tei" else "relevance_score"
            scores = np.full(len(passages), np.nan, np.float32)
            for row in rows:
                scores[int(row["index"])] = float(row[field])
        except (KeyError, TypeError, ValueError, IndexError):
            self.meter.errors += 1
            raise RankFailed(f"ranker answered without {self.kind} scores") from None
        if np.isnan(scores).any():
            self.meter.errors += 1
            raise RankFailed(f"ranker scored {int((~np.isnan(scores)).sum())} of {len(passages)}")
        tokens = 0
        if self.kind == "cohere":
            tokens = int(((payload.get("meta") or {}).get("billed_units") or {}).get("tokens") or 0)
        self.meter.add(len(passages), tokens, (time.perf_counter() - t0) * 1000)
        return scores


# -- configuration ------------------------------------------------------------------------------


_CACHE: dict[str, Ranker] = {}
_CACHE_LOCK = threading.Lock()


def load_ranker(spec: dict[str, Any]) -> Ranker | None:
    """The ranker for a spec, loaded once per process (None for provider none)."""
    spec = validate_ranker(spec)
    if spec["provider"] == "none":
        return None
    key = json.dumps({k: v for k, v in spec.items() if k not in ("window",)}, sort_keys=True)
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = _build(spec)
        return _CACHE[key]


def _build(spec: dict[str, Any]) -> Ranker:
    provider = spec["provider"]
    if provider == "onnx":
        folder = Path(spec["path"]).expanduser() if spec.get("path") else None
        if spec.get("model"):
            model = Path(spec["model"]).expanduser()
        else:
            assert folder is not None  # validate_ranker requires ranker.path or ranker.model
            model = folder / "model.onnx"
        tokenizer = (
            Path(spec["tokenizer"]).expanduser()
            if spec.get("tokenizer")
            else (folder or model.parent) / "tokenizer.json"
        )
        return OnnxRanker(
            model,
            tokenizer,
            name=spec.get("name") or (folder.name if folder else model.stem),
            max_length=spec.get("max_length", 512),
            sigmoid=spec.get("sigmoid", False),
            threads=spec.get("threads", 0),
        )
    return HttpRanker(
        provider,
        spec["base_url"],
        spec.get("model", ""),
        api_key_env=spec.get("api_key_env", API_KEY_ENV),
        timeout=spec["timeout"],
    )


# -- the stage ----------------------------------------------------------------------------------

_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="autodoc-rank")


class RankPlan:
    """This answer's ranker, or why there is none."""

    def __init__(self, ranker: Ranker | None, spec: dict[str, Any], reason: str = "") -> None:
        self.ranker = ranker
        self.window = spec.get("window", WINDOW_DEFAULT)
        self.timeout = spec.get("timeout", TIMEOUT_DEFAULT)
        self.reason = reason


def rerank(
    plan: RankPlan, query: str, window_texts: list[str], window: int
) -> tuple[np.ndarray | None, protocol.RankRecord]:
    """Scores for the window's texts, and the answer's `rank` record. A failure or a timeout
    returns no scores (the fused order stands) and says why."""
    ranker = plan.ranker
    assert ranker is not None
    texts = window_texts[:window]
    if not texts:
        return None, protocol.RankRecord(
            state="skipped", model=ranker.name, error="no hits to rank"
        )
    future = _POOL.submit(ranker.score, query, texts)
    try:
        scores = future.result(timeout=plan.timeout)
    except FutureTimeout:
        return None, protocol.RankRecord(
            state="failed", model=ranker.name, error=f"ranker timed out after {plan.timeout:g} s"
        )
    except RankFailed as exc:
        return None, protocol.RankRecord(state="failed", model=ranker.name, error=str(exc))
    except Exception as exc:  # a broken model file, a shape the graph rejects
        error = f"ranker failed: {exc}"
        return None, protocol.RankRecord(state="failed", model=ranker.name, error=error)
    return np.asarray(scores, dtype=np.float32), protocol.RankRecord(
        state="ready", model=ranker.name, error="", window=len(texts)
    )
