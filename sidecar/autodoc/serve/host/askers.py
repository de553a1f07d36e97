"""Who asks a long-lived server, as its question log names them, and what of their calls the
log notes (`gaps.question_log`: a search is a question; a span read, a hit opened an opening).

An HTTP request's asker is its token's name and its right the token's (the gate sets both for
the request's context, which the SDK's MCP tools run in too); a front end with one client names
it itself (`Host.asker`: `editor`, `mcp`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from contextvars import ContextVar
from typing import Any

log = logging.getLogger(__name__)

ASKER: ContextVar[str] = ContextVar("autodoc_asker", default="")
# Whether the request's token may write (a local client may): the log's report is for those.
MAY_WRITE: ContextVar[bool] = ContextVar("autodoc_may_write", default=True)
NOTED = frozenset({"search.query", "doc.read", "search.opened"})


def note_when_answered(
    answer: Future[Any],
    method: str,
    params: Any,
    asker: str,
    note: Callable[[], Callable[..., Any]],
) -> None:
    """Once `answer` is in, `note()(method, params, result, asker)` (the engine's, which does
    nothing when the log is off); a failed or cancelled call is no question."""

    def noted(done: Future[Any]) -> None:
        if done.cancelled() or done.exception() is not None:
            return
        try:
            note()(method, params, done.result(), asker)
        except Exception:  # the answer went out; the log says why it missed one
            log.exception("noting a %s in the question log", method)

    answer.add_done_callback(noted)
