"""What `autodoc/indexProgress` costs a served folder's first index: `Host.open` on a fresh store,
lexical only, with the progress reports on and off, interleaved.

    python bench/progress_overhead.py ../shared/corpora/cpp-docs --runs 2
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from autodoc.engine import Engine
from autodoc.serve.host.serving import INDEX_PROGRESS, Host


def once(root: Path, report: bool) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as d:
        sent: list[str] = []
        host = Host(Engine(str(Path(d) / "a.db")), watch=False, notify=lambda m, p: sent.append(m))
        host.options = {"embedding": "none"}
        if not report:
            host._progress = lambda *a, **k: None  # type: ignore[method-assign]
        started = time.perf_counter()
        host.open(root).result()
        seconds = time.perf_counter() - started
        host.close()
        return seconds, sum(m == INDEX_PROGRESS for m in sent)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("root", type=Path)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    times: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.runs):
        for report in (False, True):
            seconds, sent = once(args.root, report)
            times[report].append(seconds)
            print(f"reports {'on ' if report else 'off'}: {seconds:.2f} s, {sent} sent", flush=True)
    off, on = statistics.median(times[False]), statistics.median(times[True])
    print(f"median off {off:.2f} s, on {on:.2f} s, ratio {on / off:.3f}")


if __name__ == "__main__":
    main()
