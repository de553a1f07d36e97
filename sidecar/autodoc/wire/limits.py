"""The limits every front end (CLI, LSP, MCP) holds a request to, and the checks that need no
recursion: a client may be hostile, so a bad request gets a documented error, fast, and nothing
else is affected (issue 22; doc/reliability.md lists each limit and its error).
"""

from __future__ import annotations

import os
import re
from typing import Any

from autodoc.wire.errors import INVALID_PARAMS, RpcError

MAX_DEPTH = 64  # arrays and objects inside one another in a request's params
MAX_REQUEST_BYTES = 4_000_000  # one request as it comes over the wire (an MCP line, --call)
MAX_QUERY_CHARS = 4_000  # a search query's text
MAX_QUERY_WORDS = 64  # a search query's words (the lexical stage builds a clause per word)
READ_MAX_LINES = 400  # lines one `doc.read` / `read_span` returns; `next_line` asks for more
READ_MAX_BYTES = 64_000  # bytes of text one read returns (whole lines; at least one line)
RETRIEVER_TOP = 50  # candidates each retrieval stage hands to fusion
MAX_READ = 1000  # how deep a stage reads when invisible or filtered chunks starve it


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity (a container or `taskset` may give it
    fewer than the machine has). A model's threads and a team server's workers are sized by it."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # no affinity on this platform
        return os.cpu_count() or 1


# A JSON string whole (even unclosed; the loop unrolled, so a 4 MB string is one fast match), or
# a bracket.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]')


def too_deep(params: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether `params` nests arrays and objects deeper than `limit`; walked with a stack, so
    a nesting bomb costs no recursion."""
    stack: list[tuple[Any, int]] = [(params, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, (list, tuple)):
            children = value
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def text_depth(text: str, stop: int = MAX_DEPTH) -> int:
    """How deep the JSON text `text` nests, read before it is parsed (so `json.loads` never
    meets a nesting bomb); counting stops past `stop`."""
    depth = deepest = 0
    for m in _TOKENS.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > stop:
                    break
        elif c in "]}":
            depth -= 1
    return deepest


def unreadable(body: bytes | str) -> RpcError | None:
    """The guard every byte a server reads passes before any parser sees it (CLI, HTTP, LSP,
    MCP on stdio and HTTP, the early handshake): -32602 naming the limit for a request longer
    than MAX_REQUEST_BYTES or nested deeper than MAX_DEPTH; None when it may be parsed."""
    size = len(body) if isinstance(body, bytes) else len(body.encode("utf-8", "surrogatepass"))
    if size > MAX_REQUEST_BYTES:
        return request_too_long()
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    if text_depth(text) > MAX_DEPTH:
        return nested_too_deep()
    return None


# A UTF-16 surrogate code point: in a decoded string it is always a lone one (JSON's `\ud83d\ude00`
# pair decodes to one character), and no UTF-8 text can hold it.
_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate_at(value: Any) -> str | None:
    """Where the first string (or object key) of `value` holding a lone UTF-16 surrogate is, as
    a path (`[1]`, `[2].kind`, `.arguments.query`); None when every string is text. Walked
    with a stack, in order."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, at = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return at
        elif isinstance(item, dict):
            for key in item:
                if isinstance(key, str) and _SURROGATE.search(key):
                    return f"{at} (a key)"
            stack.extend((v, f"{at}.{k}") for k, v in reversed(list(item.items())))
        elif isinstance(item, (list, tuple)):
            stack.extend((v, f"{at}[{i}]") for i, v in reversed(list(enumerate(item))))
    return None


def not_text(at: str, name: str | None = None, root: str = "params") -> RpcError:
    """-32602 for a string that is not text (a lone surrogate): nothing could encode it. `at`
    is its path under `root`; `name`, the parameter (or argument) it is."""
    where = f"{name} ({root}{at})" if name else f"{root}{at}"
    return RpcError(
        INVALID_PARAMS,
        f"{where} holds a lone UTF-16 surrogate (\\uD800-\\uDFFF), which is not text",
        {"param": name or "", "at": f"{root}{at}"},
    )


def check_params(params: Any, names: list[str] | None = None) -> None:
    """-32602 for params nested deeper than MAX_DEPTH, or holding a string that is not text
    (named by `names`, the method's parameters, when given)."""
    if too_deep(params):
        raise nested_too_deep()
    at = lone_surrogate_at(params)
    if at is not None:
        index = int(at[1 : at.index("]")]) if at.startswith("[") else -1
        name = names[index] if names is not None and 0 <= index < len(names) else None
        raise not_text(at, name)


def nested_too_deep() -> RpcError:
    return RpcError(
        INVALID_PARAMS, f"params nest deeper than {MAX_DEPTH} levels", {"limit": MAX_DEPTH}
    )


def request_too_long(limit: int = MAX_REQUEST_BYTES) -> RpcError:
    return RpcError(INVALID_PARAMS, f"a request is longer than {limit} bytes", {"limit": limit})


_ID = re.compile(r'"id"\s*:\s*(-?\d+|"[^"\\]*(?:\\.[^"\\]*)*")')


def request_id(text: str) -> int | str | None:
    """The id of a JSON-RPC request too deep or too large to parse, read at its top level (the
    first `"id"` key one level in), so the refusal can still answer it; None when none is found.
    """
    depth = 0
    for m in _TOKENS.finditer(text):
        c = m.group()
        if depth == 1 and c == '"id"':
            idm = _ID.match(text, m.start())
            if idm is not None:
                raw = idm.group(1)
                return raw[1:-1] if raw.startswith('"') else int(raw)
        if c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
    return None
