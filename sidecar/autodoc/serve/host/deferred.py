"""Work queued behind something still being made, without waiting for it: a server's host
submits a folder to the writer thread before its engine has opened (`EngineSlot.on_writer`)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

_Result = TypeVar("_Result")


def after(first: Future[Any], submit: Callable[[], Future[_Result]]) -> Future[_Result]:
    """`submit()`'s result, `submit` called once `first` is done (at once when it is); when
    `first` failed, its exception instead. The caller never waits here."""
    if first.done() and first.exception() is None:
        return submit()
    chained: Future[_Result] = Future()

    def go(done: Future[Any]) -> None:
        if (exc := done.exception()) is not None:
            chained.set_exception(exc)
            return
        try:
            submit().add_done_callback(lambda f: _pass_on(f, chained))
        except BaseException as exc:
            chained.set_exception(exc)

    first.add_done_callback(go)
    return chained


def _pass_on(done: Future[_Result], to: Future[_Result]) -> None:
    """What `done` ended with, as `to`'s end."""
    if done.cancelled():
        to.cancel()
    elif (exc := done.exception()) is not None:
        to.set_exception(exc)
    else:
        to.set_result(done.result())
