"""The options of `search.query`, checked before anything runs: -32602 naming the first bad
one, so every front end refuses the same request the same way.
"""

from __future__ import annotations

from typing import Any

from autodoc.query import facet_filter, fusion
from autodoc.query.stages import (
    RETRIEVERS,
    STAGE_SETS,
    TOGGLES,
    SearchOptions,
)
from autodoc.wire import limits, protocol
from autodoc.wire.errors import invalid_params, options_object
from autodoc.wire.provider_specs import validate_window

DEFAULT_LIMIT = 10
MAX_LIMIT = 100

_OPTS = {
    "limit", "stages", "paths", "mode", "retrieval", "window", "facets", "tags", "fusion", "recency"
}  # fmt: skip
FACET_ONLY = "the query has only facet filters"


def check_query(text: str) -> None:
    """-32602 for a query past MAX_QUERY_CHARS or MAX_QUERY_WORDS: before it is parsed, so a
    hostile 1 MB query costs a length check, not a clause per word (issue 22: 899 MB RSS)."""
    if len(text) > limits.MAX_QUERY_CHARS:
        raise invalid_params(
            f"query is longer than {limits.MAX_QUERY_CHARS} characters",
            field="query",
            limit=limits.MAX_QUERY_CHARS,
        )
    if len(text.split(None, limits.MAX_QUERY_WORDS)) > limits.MAX_QUERY_WORDS:
        raise invalid_params(
            f"query has more than {limits.MAX_QUERY_WORDS} words",
            field="query",
            limit=limits.MAX_QUERY_WORDS,
        )


def parse_options(opts: Any) -> SearchOptions:
    opts = options_object(opts, _OPTS, "search option")
    limit = opts.get("limit", DEFAULT_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise invalid_params(f"limit must be an integer 1..{MAX_LIMIT}", field="limit", value=limit)
    stages = opts.get("stages")
    mode = opts.get("mode")
    if mode is not None:
        modes = STAGE_SETS  # the evaluation's sets: "hybrid" is every retriever, fused
        if not isinstance(mode, str) or mode not in modes:
            raise invalid_params(f"mode must be one of {', '.join(modes)}", field="mode")
        stages = stages or modes[mode]
    if stages is None or stages == []:
        stages = list(TOGGLES)
    if not isinstance(stages, list) or any(s not in TOGGLES for s in stages):
        raise invalid_params(f"stages must be a list of {', '.join(TOGGLES)}", field="stages")
    if not any(s in RETRIEVERS for s in stages):
        raise invalid_params(f"stages must include {' or '.join(RETRIEVERS)}", field="stages")
    stages = [s for s in TOGGLES if s in stages]
    paths = opts.get("paths") or []
    if not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths):
        raise invalid_params("paths must be a list of path prefixes", field="paths")
    paths = [p[2:] if p.startswith("./") else p for p in paths]
    retrieval = opts.get("retrieval") or {}
    if not isinstance(retrieval, dict) or set(retrieval) - {"demote_superseded"}:
        raise invalid_params("retrieval takes demote_superseded", field="retrieval")
    demote = retrieval.get("demote_superseded")
    if demote is not None and not isinstance(demote, bool):
        raise invalid_params("retrieval.demote_superseded must be true or false", field="retrieval")
    window = opts.get("window")
    if window is not None:
        window = validate_window(window, "window")
    facet_opts, tags = facet_filter.validate_options(opts.get("facets"), opts.get("tags"))
    method = opts.get("fusion", protocol.DEFAULT_FUSION)
    if not isinstance(method, str) or method not in protocol.FUSIONS:
        raise invalid_params(
            f"fusion must be one of {', '.join(protocol.FUSIONS)}", field="fusion", value=method
        )
    recency = opts.get("recency")
    if recency is not None and (
        isinstance(recency, bool)
        or not isinstance(recency, (int, float))
        or not 0 < recency <= fusion.MAX_HALF_LIFE_DAYS
    ):
        raise invalid_params(
            f"recency is a half-life in days, above 0 and at most {fusion.MAX_HALF_LIFE_DAYS}",
            field="recency",
            value=recency,
        )
    return SearchOptions(
        limit, stages, paths, demote, window, facet_opts, tags, method,
        None if recency is None else float(recency),
    )  # fmt: skip
