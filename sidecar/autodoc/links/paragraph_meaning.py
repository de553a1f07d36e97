"""The notes nearest the meaning of the paragraph being written, for link completion: the one
embedding a keystroke may cost, worked out on a thread of its own and kept.

A request waits for it at most `WAIT_S`; past that it is answered by names (or by links) and
marked incomplete, the embedding goes on, and the next keystroke finds the notes kept. The
paragraph is the same text at each keystroke inside one link, so one link costs one embedding;
a lone `[` (the first of `[[`, a trigger character) starts it before the link is typed.

One thread per process embeds, one paragraph at a time; a paragraph asked for while another
is being embedded waits in its place, and replaces one that was waiting (the writer has moved
on: a slow provider works only for the paragraph being written). A paragraph the model failed
on is kept as failed, so a provider that is down costs one request per paragraph, not one per
keystroke.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from concurrent.futures import CancelledError as Cancelled
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as Pending

import numpy as np

from autodoc.links.note_completion import nearest_notes
from autodoc.models.embedders import Embedder
from autodoc.store import Store, Workspace
from autodoc.vectors.nearest import SemanticPlan

log = logging.getLogger("autodoc.completion")

# What a keystroke's request waits for the paragraph's notes: the bundled model embeds 320
# characters in ~15 ms on one thread on 2 cores, the nearest notes take ~3 ms more.
WAIT_S = 0.02
# At a lone `[[` (nothing typed yet) the list is the one a writer reads first, and the link
# just opened costs no other keystroke: it waits longer for the paragraph's notes (a warm
# model answers in ~5-20 ms; the wait bounds a cold one, which otherwise showed the most-linked
# notes until the next keystroke).
LONE_WAIT_S = 0.25
KEPT = 16  # paragraphs whose nearest notes are kept (one per link being written)
_FAILED: list[int] = []  # kept for a paragraph the model failed on (compared by identity)


class ParagraphMeaning:
    """Nearest notes per (store, workspace, index state, model, paragraph)."""

    def __init__(self) -> None:
        self._kept: OrderedDict[tuple, list[int]] = OrderedDict()
        self._pending: dict[tuple, Future[list[int]]] = {}
        self._lock = threading.Lock()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="autodoc-meaning")

    def nearest(
        self,
        store: Store,
        ws: Workspace,
        plan: SemanticPlan,
        epochs: tuple[int, int] | None,
        text: str,
        wait: float = WAIT_S,
    ) -> tuple[list[int] | None, bool]:
        """(the notes nearest `text`'s meaning, nearest first, or None; whether they are still
        being worked out: asked again, they may be there). None and False without a model or
        vectors, or when the model failed."""
        if plan.embedder is None or plan.model_fp is None or plan.signs is None or not text:
            return None, False
        key = (str(store.path), ws.id, epochs, plan.model_fp, text)
        with self._lock:
            held = self._kept.get(key)
            if held is not None:
                self._kept.move_to_end(key)
                return (None if held is _FAILED else held), False
            future = self._pending.get(key)
            if future is None:
                self._drop_waiting()
                future = self._worker.submit(self._work, store, ws, plan, key, text)
                self._pending[key] = future
        try:
            found = future.result(timeout=wait)
        except (Pending, Cancelled):  # still to come, or replaced by a newer paragraph
            return None, True
        except Exception:  # the store closed meanwhile, say: names alone rank
            log.debug("nearest notes failed", exc_info=True)
            return None, False
        return (None if found is _FAILED else found), False

    def _drop_waiting(self) -> None:
        """Cancel the paragraphs waiting for the thread (not the one being embedded): the one
        asked for now replaces them. Called with the lock held."""
        for key, future in list(self._pending.items()):
            if future.cancel():
                del self._pending[key]

    def _work(
        self, store: Store, ws: Workspace, plan: SemanticPlan, key: tuple, text: str
    ) -> list[int]:
        try:
            assert plan.embedder is not None
            vector = _embed(plan.embedder, text)
            found = _FAILED
            if vector is not None:
                with store.snapshot() as conn:
                    found = nearest_notes(conn, store, ws, plan, vector)
            with self._lock:
                self._kept[key] = found
                while len(self._kept) > KEPT:
                    self._kept.popitem(last=False)
            return found
        finally:
            with self._lock:
                self._pending.pop(key, None)


def _embed(embedder: Embedder, text: str) -> np.ndarray | None:
    """One text's vector, on the embedder's one-thread session where it has one: its
    multi-thread one answers a little sooner, but its threads then spin on the cores the next
    keystroke's request needs (over LSP on 2 cores the next request took ~13 ms instead of
    ~10, bench/completion_latency.py)."""
    try:
        one = getattr(embedder, "embed_beside", None)
        return one(text) if one is not None else embedder.embed([text])[0]
    except Exception:  # a provider's error: complete by names alone
        log.debug("embedding the paragraph failed", exc_info=True)
        return None


MEANING = ParagraphMeaning()
