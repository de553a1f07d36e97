"""An onnxruntime session on this CPU, for every local model (embedders and rankers): how many
threads it runs on and whether they spin between runs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from autodoc.wire.limits import usable_cores

if TYPE_CHECKING:
    import onnxruntime as ort

THREADS_ENV = "AUTODOC_THREADS"  # CPU threads a model may use in this process, if set


def default_threads() -> int:
    """`AUTODOC_THREADS` when set (a team server gives each worker its share of the cores:
    two workers each running a two-thread model on two cores only fight), else
    min(4, the cores this process may use)."""
    given = os.environ.get(THREADS_ENV, "")
    return int(given) if given.isdigit() and int(given) > 0 else min(4, usable_cores())


def cpu_session(path: Path, threads: int, *, spin: bool = False) -> ort.InferenceSession:
    """A CPU session on `threads` intra-op threads. `spin`: the threads busy-wait for the next
    piece of work, which only pays while batches follow one another (a fill); a query session
    does not spin, so a server idle between queries uses no CPU and a worker's CPU per query is
    the model's work alone (issue 57: one team worker's spinning threads took 15-20 ms of CPU a
    query against 9 ms each for two)."""
    import onnxruntime as ort  # here, not at import: only a process that runs a model starts it

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads or default_threads()
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    so.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
