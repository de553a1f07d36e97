"""`autodoc eval`: retrieval quality and latency per stage set, over a BEIR dataset (in a store of
its own) or a vault with a golden file, with an optional CI gate on Recall@3.

Everything reaches the index through the dispatcher: the workspace is configured and indexed by
`workspace.configure` and `index.run`, the golden targets checked by `doc.indexed`, and every
query is the dispatcher's `search.query` (`autodoc.evaluation` is handed `Dispatcher.call`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autodoc.engine import Engine
from autodoc.evaluation import beir as ev
from autodoc.evaluation import golden
from autodoc.serve.cli.lease_wait import LeaseWait, is_busy
from autodoc.serve.cli.output import (
    EXIT_CANNOT_RUN,
    EXIT_FOUND,
    EXIT_OK,
    ProgressBar,
    print_error,
    print_json,
    tell,
)
from autodoc.serve.dispatcher import Dispatcher, Reports
from autodoc.wire.errors import INVALID_PARAMS, RpcError
from autodoc.wire.protocol import DEFAULT_FUSION

is_beir = ev.is_beir  # cli.py: is the target a BEIR dataset, or a vault?


def eval_sets(
    dispatcher: Dispatcher, name: str, options: Any, stages: str | None
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """Index the workspace (options first); (run summary, index status, stage sets to run).
    While another process writes the store, its index is evaluated as that process keeps it
    (options it already has are no write; others cannot be set)."""
    if options:
        writes = LeaseWait(0, f"set the options of {name}", can_wait=False)
        writes.write(lambda: dispatcher.call("workspace.configure", [name, options]))
    summary = index_if_free(dispatcher, name)
    status = dispatcher.call("index.status", [name])
    sets = ev.available_sets(status)
    if stages:
        asked = [s.strip() for s in stages.split(",") if s.strip()]
        missing = [s for s in asked if s not in sets]
        if missing:
            raise RpcError(-32602, f"cannot run {missing[0]!r} here (available: "
                           f"{', '.join(sets)})", {"stages": sets})  # fmt: skip
        sets = asked
    return summary, status, sets


def index_if_free(dispatcher: Dispatcher, name: str) -> dict[str, Any]:
    """`index.run`'s summary; beside another writer of the store, a summary that says why
    nothing was indexed (`not_indexed`), the index evaluated as that writer keeps it."""
    embedding = Reports(embed_progress=ProgressBar("embedding", "chunk"))
    try:
        return dispatcher.call("index.run", [name], reports=embedding)
    except RpcError as err:
        if not is_busy(err):
            raise
        tell(f"{err.message}: evaluating {name} as it is indexed there")
        return {"seconds": None, "embedding": {}, "not_indexed": err.to_dict()}


def eval_head(name: str, split: str, queries: int, args, summary, status) -> dict[str, Any]:
    return {
        "dataset": name,
        "split": split,
        "queries": queries,
        "documents": status["documents"],
        "chunks": status["chunks"],
        "model": (status.get("embedding") or {}).get("model", ""),
        "ranker": (status.get("rank") or {}).get("model", ""),
        "fusion": args.fusion or DEFAULT_FUSION,
        "index_s": summary["seconds"],
        "embedding": {k: summary["embedding"].get(k) for k in ("embedded", "per_second")},
        **({"not_indexed": summary["not_indexed"]} if "not_indexed" in summary else {}),
    }


def eval_gate(report: dict[str, Any], value: Callable[[str], float], min_recall3: float) -> bool:
    """Judge the fullest set that ran against `--min-recall3`; True when it fails."""
    judged_set = ev.gate_set(report["results"])
    got = value(judged_set)
    report["gate"] = {"set": judged_set, "recall@3": got, "min": min_recall3,
                      "passed": got >= min_recall3}  # fmt: skip
    return got < min_recall3


def print_gate(report: dict[str, Any]) -> None:
    if "gate" in report:
        g = report["gate"]
        verdict = "passed" if g["passed"] else "FAILED"
        print(f"\ngate: Recall@3 {g['recall@3']:.3f} ({g['set']}) >= {g['min']}: {verdict}")


def eval_beir(args: argparse.Namespace, target: Path, name: str, options: Any) -> int:
    """A BEIR dataset, written out as a vault and indexed in a store of its own (`--work`
    keeps both for the next run)."""
    try:
        ks = sorted({int(k) for k in args.k.split(",") if k.strip()} | ({3} if args.min_recall3
                    is not None else set()))  # fmt: skip
    except ValueError:
        raise RpcError(-32602, f"--k takes integers: {args.k!r}") from None
    split = ev.beir_split(target, args.split)
    corpus, judged = ev.load_beir(target, split)
    with contextlib.ExitStack() as stack:
        if args.work:
            base = Path(args.work).expanduser().resolve()
        else:
            base = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="autodoc-eval-")))
        engine = Engine(base / "autodoc.db")
        stack.callback(engine.close)
        dispatcher = Dispatcher(engine)
        names_file = base / "names.json"
        if not names_file.exists():
            names_file.write_text(json.dumps(ev.write_corpus(corpus, base / "vault")))
        names = json.loads(names_file.read_text())
        dispatcher.call("workspace.add", [name, str(base / "vault")])
        data = ev.Dataset(target.name, split, judged, len(corpus), ev.documents_of(names))
        summary, status, sets = eval_sets(dispatcher, name, options, args.stages)
        results = ev.evaluate(dispatcher.call, name, data, sets, ks, fusion=args.fusion)
    report = eval_head(data.name, split, len(judged), args, summary, status)
    report["results"] = results
    failed = args.min_recall3 is not None and eval_gate(
        report, lambda s: results[s]["recall@3"], args.min_recall3
    )
    if args.json:
        print_json(report)
    else:
        print(f"### {data.name} ({split}: {len(judged)} queries, "
              f"{status['documents']:,} documents, {status['chunks']:,} chunks)\n")  # fmt: skip
        print("\n".join(ev.table(results, ks)))
        print_gate(report)
    return EXIT_FOUND if failed else EXIT_OK


def eval_golden(dispatcher: Dispatcher, args: argparse.Namespace, name: str, options: Any) -> int:
    """A vault's workspace (added by the caller) against `--golden`'s queries."""
    try:
        queries = golden.load(Path(args.golden))
    except RpcError as bad:  # the gate's own input is wrong: it cannot run, not a failed gate
        print_error(bad, args.json)
        return EXIT_CANNOT_RUN
    summary, status, sets = eval_sets(dispatcher, name, options, args.stages)
    absent = absent_targets(dispatcher, name, queries)
    if absent:
        shown = ", ".join(absent[:5]) + (f" and {len(absent) - 5} more" if len(absent) > 5 else "")
        err = RpcError(INVALID_PARAMS, f"{len(absent)} golden path(s) not in the vault: {shown}",
                       {"absent": absent})  # fmt: skip
        print_error(err, args.json)
        return EXIT_CANNOT_RUN
    results = golden.evaluate(dispatcher.call, name, queries, sets, fusion=args.fusion)
    report = eval_head(name, "golden", len(queries), args, summary, status)
    report["results"] = results
    failed = args.min_recall3 is not None and eval_gate(
        report, lambda s: results[s]["all"]["recall@3"] or 0.0, args.min_recall3
    )
    if args.json:
        print_json(report)
    else:
        print(f"### {name} ({len(queries)} golden queries, {status['documents']:,} documents,"
              f" {status['chunks']:,} chunks)\n")  # fmt: skip
        for label, result in results.items():
            print("\n".join(golden.table(label, result)) + "\n")
        print_gate(report)
    return EXIT_FOUND if failed else EXIT_OK


def absent_targets(dispatcher: Dispatcher, name: str, queries: list[Any]) -> list[str]:
    """The golden paths the index does not hold (`doc.indexed`, one call for all of them)."""
    paths = list(dict.fromkeys(path for q in queries for path, _ in q.targets))
    absent = set(dispatcher.call("doc.indexed", [name, paths])["absent"])
    return golden.absent_targets(queries, lambda p: p not in absent)
