"""The optimised graph with its tensors in a file beside it, which onnxruntime maps (issue 45).

The optimised graph is one 58 MB protobuf (its 47 MB token-embedding table is float32): a new
session parsed it and copied every tensor out of it, 100-120 ms of a cold hybrid search on the
2-core machine (onnxruntime's profile: model loading ~50 ms, initialisation ~55 ms). The same
graph saved with its tensors as ONNX external data opened in 33-55 ms (loading ~5 ms,
initialisation ~30 ms). The graph and the tensors' bytes are the same, so the vectors are: the
form is derived once, beside the optimised graph in the cache, and used only after it gave that
graph's vectors to the bit on CHECK_TEXTS (otherwise, or where the `onnx` package or a writable
cache is missing, the one-file graph is used as before).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def _names(graph: Path) -> tuple[Path, str, Path]:
    """(the mapped form's graph, its tensors' file name, the verdict) of a one-file graph."""
    return (
        graph.with_name(f"{graph.stem}.mapped.onnx"),
        f"{graph.stem}.mapped.data",
        graph.with_name(f"{graph.stem}.mapped.json"),
    )


def _stamp(graph: Path) -> list[int]:
    """What names the one-file graph the form was derived from: its size and modification."""
    stat = graph.stat()
    return [stat.st_size, stat.st_mtime_ns]


def mapped_graph(graph: Path, vectors_of: Callable[[Path], Any]) -> Path:
    """The form of `graph` whose tensors onnxruntime maps, derived and checked once; `graph`
    itself where that form is not derived or did not give the same vectors. `vectors_of(path)`:
    the check's vectors (an array) from a session over the graph at `path`."""
    split, data, verdict = _names(graph)
    try:
        stamp = _stamp(graph)
        held = json.loads(verdict.read_text())
        if held.get("stamp") == stamp:
            usable = held.get("same") and split.is_file() and (split.parent / data).is_file()
            return split if usable else graph
    except (OSError, ValueError, AttributeError):
        pass
    if not os.access(graph.parent, os.W_OK):  # a read-only cache: every process would retry
        return graph
    return _derive(graph, vectors_of) or graph


def _derive(graph: Path, vectors_of: Callable[[Path], Any]) -> Path | None:
    """Write the mapped form in a folder of this thread's, check it gives `graph`'s vectors
    exactly, then move it into place (the tensors first, then the graph that names them, then
    the verdict). Two processes deriving at once write the same bytes under the same names."""
    try:
        import onnx
    except ImportError:  # the quantisation tools' dependency; without it, the one-file graph
        return None
    split, data, verdict = _names(graph)
    work = graph.parent / f".{os.getpid()}-{threading.get_ident()}.mapped"
    try:
        stamp = _stamp(graph)
        work.mkdir(parents=True, exist_ok=True)
        onnx.save_model(
            onnx.load(str(graph)),
            str(work / split.name),
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location=data,
        )
        vectors = [vectors_of(path) for path in (graph, work / split.name)]
        same = vectors[0].tobytes() == vectors[1].tobytes()
        if same:
            os.chmod(work / data, graph.stat().st_mode & 0o777)  # onnx writes it owner-only
            os.replace(work / data, split.parent / data)
            os.replace(work / split.name, split)
        tmp = verdict.with_name(f".{verdict.name}.{os.getpid()}-{threading.get_ident()}")
        tmp.write_text(json.dumps({"same": same, "stamp": stamp}))
        os.replace(tmp, verdict)
        log.info("embedding graph with mapped tensors: same vectors: %s", same)
        return split if same else None
    except Exception as exc:  # never fatal: the one-file graph always works
        log.warning("could not derive the embedding graph with mapped tensors: %s", exc)
        with contextlib.suppress(Exception):  # not tried again (~1.3 s) by every process
            verdict.write_text(
                json.dumps({"same": False, "stamp": _stamp(graph), "error": str(exc)})
            )
        return None
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(work)
