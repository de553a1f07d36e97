"""The provider options of a workspace, checked before anything loads: `embedding` (which
embedder), `embedding.store` (where its vectors and lexical index live) and `ranker` (which
cross-encoder). Every field a provider takes is listed here, so a typo or an API key written into
a config file is refused with -32602 naming the field, by every front end alike, and without
importing onnxruntime or qdrant-client to say so.
"""

from __future__ import annotations

from typing import Any

from autodoc.wire.errors import invalid_params

EMBEDDING_PROVIDERS = ("bundled", "onnx", "openai", "none")
RANKER_PROVIDERS = ("none", "onnx", "tei", "cohere")
# Fused hits a ranker reads by default. A local cross-encoder of MiniLM-L6 size costs ~27 ms
# per pair on 2 cores (doc/benchmarks/rerank.md): 10 keeps a search near a quarter second;
# a server ranker (TEI, Cohere; usually on a GPU) reads the spec's 40.
WINDOW_DEFAULT = 40
WINDOW_DEFAULT_CPU = 10
WINDOW_MIN, WINDOW_MAX = 10, 100
TIMEOUT_DEFAULT = 5.0
STORE_KINDS = ("embedded", "qdrant")
# A server's address (url, api_key_env, timeout) or a local folder (path); the collection, made
# with these shards and replicas where it does not exist yet; on_disk keeps the full vectors on
# disk (the binary codes stay in RAM, rescoring reads the originals); lexical: the lexical
# stage's index in Qdrant too (bm25/qdrant_sparse.py, the default) or Tantivy on this machine.
QDRANT_FIELDS = {
    "kind", "url", "path", "api_key_env", "timeout", "collection", "shards", "replicas",
    "on_disk", "lexical",
}  # fmt: skip
LEXICAL_KINDS = ("qdrant", "tantivy")  # where a Qdrant workspace's lexical index lives


def check_spec_fields(spec: dict[str, Any], known: set[str], option: str) -> None:
    """-32602 for an API key in a config file or an unknown field of a provider spec."""
    if "api_key" in spec:
        raise invalid_params(
            "API keys come from the environment or the OS keyring, never from a config file",
            field=f"{option}.api_key",
        )
    extra = sorted(set(spec) - known)
    if extra:
        raise invalid_params(f"unknown {option} option {extra[0]!r}", field=f"{option}.{extra[0]}")


def validate_embedding(spec: Any) -> dict[str, Any]:
    """The `embedding` workspace option; -32602 naming the bad field."""
    if isinstance(spec, str):
        spec = {"provider": spec}
    if not isinstance(spec, dict) or spec.get("provider") not in EMBEDDING_PROVIDERS:
        raise invalid_params(
            f"embedding.provider must be one of {', '.join(EMBEDDING_PROVIDERS)}", field="embedding"
        )
    known = {
        "bundled": {"provider", "threads", "optimise"},
        "none": {"provider"},
        "onnx": {"provider", "model", "tokenizer", "name", "pooling", "max_length", "threads"},
        "openai": {"provider", "base_url", "model", "dimensions", "api_key_env", "timeout"},
    }[spec["provider"]]
    check_spec_fields(spec, known, "embedding")
    need = {"onnx": ("model", "tokenizer"), "openai": ("base_url", "model")}.get(
        spec["provider"], ()
    )
    for key in need:
        if not isinstance(spec.get(key), str) or not spec[key]:
            raise invalid_params(f"embedding.{key} is required", field=f"embedding.{key}")
    return dict(spec)


def validate_store(spec: Any) -> dict[str, Any]:
    """`embedding.store`; -32602 naming the bad field."""
    if spec is None:
        return {"kind": "embedded"}
    if not isinstance(spec, dict) or spec.get("kind") not in STORE_KINDS:
        raise invalid_params(
            "embedding.store.kind must be embedded or qdrant", field="embedding.store"
        )
    known = {"kind"} if spec["kind"] == "embedded" else QDRANT_FIELDS
    check_spec_fields(spec, known, "embedding.store")
    for key in ("shards", "replicas"):
        value = spec.get(key, 1)
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 64:
            raise invalid_params(
                f"embedding.store.{key} must be 1 to 64", field=f"embedding.store.{key}"
            )
    if spec.get("lexical", "qdrant") not in LEXICAL_KINDS:
        raise invalid_params(
            "embedding.store.lexical must be qdrant or tantivy", field="embedding.store.lexical"
        )
    if spec["kind"] == "qdrant":
        if not (isinstance(spec.get("url"), str) or isinstance(spec.get("path"), str)):
            raise invalid_params(
                "embedding.store needs a url or a path", field="embedding.store.url"
            )
        try:
            import qdrant_client  # noqa: F401
        except ImportError:
            raise invalid_params(
                "embedding.store kind qdrant needs qdrant-client: pip install -e '.[qdrant]'",
                field="embedding.store",
            ) from None
    return dict(spec)


def validate_window(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid_params(f"{field} must be an integer {WINDOW_MIN}..{WINDOW_MAX}", field=field)
    if not WINDOW_MIN <= value <= WINDOW_MAX:
        raise invalid_params(
            f"{field} must be {WINDOW_MIN}..{WINDOW_MAX}, got {value}", field=field, value=value
        )
    return value


def validate_ranker(spec: Any) -> dict[str, Any]:
    """The `ranker` workspace option; -32602 naming the bad field."""
    if isinstance(spec, str):
        spec = {"provider": spec}
    if not isinstance(spec, dict):
        raise invalid_params("ranker must be an object", field="ranker")
    spec = {"provider": "none", **spec}
    if spec["provider"] not in RANKER_PROVIDERS:
        raise invalid_params(
            f"ranker.provider must be one of {', '.join(RANKER_PROVIDERS)}", field="ranker.provider"
        )
    common = {"provider", "window", "timeout"}
    known = (
        common
        | {
            "none": set(),
            "onnx": {"path", "model", "tokenizer", "name", "max_length", "sigmoid", "threads"},
            "tei": {"base_url", "model", "api_key_env"},
            "cohere": {"base_url", "model", "api_key_env"},
        }[spec["provider"]]
    )
    check_spec_fields(spec, known, "ranker")
    default = WINDOW_DEFAULT_CPU if spec["provider"] == "onnx" else WINDOW_DEFAULT
    spec["window"] = validate_window(spec.get("window", default), "ranker.window")
    timeout = spec.get("timeout", TIMEOUT_DEFAULT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise invalid_params(
            "ranker.timeout must be a positive number of seconds", field="ranker.timeout"
        )
    spec["timeout"] = float(timeout)
    if spec["provider"] == "onnx" and not (spec.get("path") or spec.get("model")):
        raise invalid_params(
            "ranker.path (a folder with model.onnx and tokenizer.json) is required",
            field="ranker.path",
        )
    if spec["provider"] in ("tei", "cohere") and not spec.get("base_url"):
        raise invalid_params("ranker.base_url is required", field="ranker.base_url")
    return spec
