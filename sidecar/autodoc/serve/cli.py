"""The command line: `autodoc --call METHOD JSON`, `autodoc index PATH`, `autodoc search QUERY`.

A thin layer over the dispatcher: it parses arguments, calls one method, and prints.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autodoc import __version__
from autodoc.engine import Engine
from autodoc.query.fusion import DEFAULT_FUSION, FUSIONS
from autodoc.serve.dispatcher import Dispatcher
from autodoc.wire import limits
from autodoc.wire.errors import INVALID_PARAMS, RpcError

EXIT_OK, EXIT_RPC_ERROR, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports a reader that stopped reading


# Over 60 lines by design: the whole command line, declared in one table.
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="autodoc",
        description="Hybrid search over a Markdown knowledge base.",
        epilog="Methods for --call: workspace.add, workspace.list, workspace.remove, "
        "workspace.section_size, workspace.configure, index.run, index.status, index.check, "
        "search.query, search.find, related, doc.read, changes.since. `autodoc serve` offers the "
        "same methods over LSP;"
        " `autodoc mcp` offers them to agents as MCP tools.",
    )
    p.add_argument("--version", action="version", version=f"autodoc {__version__}")
    p.add_argument("--db", help="store file (default $AUTODOC_DB or $XDG_DATA_HOME/autodoc)")
    p.add_argument(
        "--call",
        metavar="METHOD",
        help="call one method with a JSON array of params and print"
        ' its JSON result: autodoc --call search.query \'["kb", "lease"]\'',
    )
    sub = p.add_subparsers(dest="command")
    ix = sub.add_parser("index", help="add a folder as a workspace (if new) and index it")
    ix.add_argument("path")
    ix.add_argument("--workspace", "-w", help="workspace name (default: the folder's name)")
    ix.add_argument(
        "--include-hidden",
        action="append",
        metavar="PATTERN",
        help="also index hidden folders or files matching this root-relative pattern (.notes,"
        " '*/.drafts'); repeat for more; kept as the workspace's include_hidden option",
    )
    ix.add_argument("--json", action="store_true", help="print the summary as JSON")
    se = sub.add_parser("search", help="search a workspace")
    se.add_argument("query")
    se.add_argument("--workspace", "-w", help="workspace (default: the one around the cwd)")
    se.add_argument("--limit", "-n", type=int, default=10)
    se.add_argument("--stages", help="comma-separated: lexical,semantic,rerank")
    se.add_argument("--json", action="store_true", help="print the whole answer as JSON")
    fd = sub.add_parser("find", help="look a name up: a title, alias, heading or code identifier")
    fd.add_argument("name")
    fd.add_argument("--workspace", "-w", help="workspace (default: the one around the cwd)")
    fd.add_argument("--exact", action="store_true", help="whole-name matches only")
    fd.add_argument("--limit", "-n", type=int, default=20)
    fd.add_argument("--json", action="store_true", help="print the whole answer as JSON")
    rl = sub.add_parser(
        "related", help="sections related to one (PATH:LINE) or to a document, by meaning and links"
    )
    rl.add_argument("target", metavar="PATH[:LINE]", help="a file (or a root-relative path)")
    rl.add_argument("--workspace", "-w", help="workspace (default: the one holding the file)")
    rl.add_argument("--limit", "-n", type=int, default=10)
    rl.add_argument("--json", action="store_true", help="print the whole answer as JSON")
    ck = sub.add_parser(
        "check",
        help="check frontmatter against the schema and every link (for CI; exit 1 on errors)",
    )
    ck.add_argument("path", nargs="?", help="the folder (default: the workspace around the cwd)")
    ck.add_argument("--workspace", "-w", help="workspace name")
    ck.add_argument("--schema", help="schema file (default: <folder>/_schema/frontmatter.yaml)")
    ck.add_argument("--json", action="store_true", help="print the report as JSON")
    ev = sub.add_parser(
        "eval",
        help="retrieval quality and latency per stage set: a BEIR dataset, or a vault with a "
        "golden file (a CI gate with --min-recall3)",
    )
    ev.add_argument("target", nargs="?", help="a BEIR-layout folder, or a vault (with --golden)")
    ev.add_argument("--split", help="BEIR qrels split (default: test, or the only one)")
    ev.add_argument("--golden", help='JSONL of {"query", "path"[, "line"]} for a vault')
    ev.add_argument("--workspace", "-w", help="the vault's workspace (default: from the folder)")
    ev.add_argument("--stages", help="comma-separated sets: lexical,semantic,hybrid,rerank")
    ev.add_argument("--k", default="3,10", help="recall cut-offs (default 3,10)")
    ev.add_argument("--fusion", choices=list(FUSIONS), help="fusion mode of hybrid sets")
    ev.add_argument("--options", help="workspace options as JSON, applied before indexing")
    ev.add_argument("--work", help="BEIR: keep the indexed dataset here and reuse it")
    ev.add_argument("--min-recall3", type=float, help="exit 1 when Recall@3 is below this")
    ev.add_argument("--json", action="store_true", help="print the report as JSON")
    sv = sub.add_parser(
        "serve", help="run the LSP server on stdio (for editors), or with --http a team's server"
    )
    sv.add_argument(
        "paths", nargs="*", metavar="PATH", help="with --http: the folders to index and serve"
    )
    sv.add_argument("--http", metavar="HOST:PORT", help="serve JSON-RPC over HTTP at /rpc")
    sv.add_argument("--token-file", help="with --http: bearer tokens, TOKEN [read-only] a line")
    sv.add_argument(
        "--token-env", default="AUTODOC_TOKEN", help="with --http: a read-write token's variable"
    )
    sv.add_argument("--max-concurrent", type=int, default=16, help="with --http: requests at once")
    sv.add_argument("--log-file", help="log here instead of stderr")
    sv.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    mc = sub.add_parser(
        "mcp",
        help="run the MCP server on stdio (for AI agents): tools search, find, read_span, status",
    )
    mc.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="folders to serve, indexed at start and kept fresh (default: the workspace around"
        " the cwd, else the cwd)",
    )
    mc.add_argument("--no-watch", action="store_true", help="don't watch the folders for edits")
    mc.add_argument("--http", metavar="HOST:PORT", help="MCP over streamable HTTP at /mcp")
    mc.add_argument("--token-file", help="with --http: bearer tokens, TOKEN [read-only] a line")
    mc.add_argument(
        "--token-env", default="AUTODOC_TOKEN", help="with --http: a read-write token's variable"
    )
    mc.add_argument("--log-file", help="log here instead of stderr")
    mc.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = _parser()
    if any(a == "--call" or a.startswith("--call=") for a in argv):
        # `--call METHOD 'JSON'` has its own grammar: the JSON is not a subcommand.
        call = argparse.ArgumentParser(prog="autodoc")
        call.add_argument("--db")
        call.add_argument("--call", required=True)
        call.add_argument("params", nargs="?")
        args = call.parse_args(argv)
    else:
        args = parser.parse_args(argv)
    if getattr(args, "command", None) in ("serve", "mcp"):
        return _serve(args)
    engine = Engine(args.db)
    dispatcher = Dispatcher(engine)
    try:
        if args.call:
            return _call(dispatcher, args.call, args.params)
        if args.command == "index":
            return _index(dispatcher, args)
        if args.command == "search":
            return _search(dispatcher, args)
        if args.command == "find":
            return _find(dispatcher, args)
        if args.command == "check":
            return _check(dispatcher, args)
        if args.command == "related":
            return _related(dispatcher, args)
        if args.command == "eval":
            return _eval(dispatcher, args)
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    except RpcError as err:
        print(json.dumps({"error": err.to_dict()}, ensure_ascii=False), file=sys.stderr)
        return EXIT_RPC_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `autodoc check | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
        return EXIT_BROKEN_PIPE
    finally:
        engine.close()


def _serve(args: argparse.Namespace) -> int:
    """`autodoc serve` (LSP, or HTTP with --http) and `autodoc mcp`: the long-lived servers."""
    _log_for_server(args.log_file, args.log_level)
    if args.command == "serve" and args.http:
        return _serve_http(args)
    if args.command == "serve":
        from autodoc.serve.lsp.lsp_server import serve  # pygls is only needed here

        return serve(args.db)
    from autodoc.serve.mcp.mcp_server import serve as serve_mcp  # the MCP SDK only here

    try:
        return serve_mcp(args.db, args.paths, watch=not args.no_watch, http=args.http,
                         token_file=args.token_file, token_env=args.token_env)  # fmt: skip
    except (RpcError, ValueError) as err:
        if not isinstance(err, RpcError):  # a token file that does not read
            err = RpcError(INVALID_PARAMS, str(err))
        print(json.dumps({"error": err.to_dict()}, ensure_ascii=False), file=sys.stderr)
        return EXIT_USAGE if args.http else EXIT_RPC_ERROR


def _serve_http(args: argparse.Namespace) -> int:
    """`autodoc serve --http`: a configuration it refuses is a usage error (exit 2)."""
    from autodoc.serve.http_server import serve_http

    try:
        return serve_http(
            args.db,
            args.paths,
            args.http,
            token_file=args.token_file,
            token_env=args.token_env,
            max_concurrent=args.max_concurrent,
        )
    except (RpcError, ValueError, OSError) as err:
        if not isinstance(err, RpcError):
            err = RpcError(INVALID_PARAMS, str(err))
        print(json.dumps({"error": err.to_dict()}, ensure_ascii=False), file=sys.stderr)
        return EXIT_USAGE


def _log_for_server(log_file: str | None, level: str) -> None:
    """A server's stdout carries its protocol: logs go to stderr or the file, ours at `level`,
    other libraries' at warnings and above."""
    handler = logging.FileHandler(log_file) if log_file else logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("autodoc").setLevel(level.upper())


def _call(dispatcher: Dispatcher, method: str, raw: str | None) -> int:
    """The params are measured before they are parsed: a nesting bomb or a huge argument gets
    its -32602 without reaching the JSON parser."""
    raw = raw or "[]"
    if len(raw.encode("utf-8", "surrogateescape")) > limits.MAX_REQUEST_BYTES:
        raise limits.request_too_long()
    if limits.text_depth(raw) > limits.MAX_DEPTH:
        raise limits.nested_too_deep()
    try:
        params = json.loads(raw)
    except json.JSONDecodeError as exc:
        err = RpcError(-32700, f"params are not valid JSON: {exc}")
        print(json.dumps({"error": err.to_dict()}), file=sys.stderr)
        return EXIT_RPC_ERROR
    result = dispatcher.call(method, params)
    print(json.dumps(result, ensure_ascii=False, indent=2, default=str))
    return EXIT_OK


class _Progress:
    """A tqdm bar on stderr (count, rate, elapsed, estimate), opened at the first report and
    closed at the last; silent when stderr is not a terminal. Remembers how far it got, for
    the message after Ctrl-C."""

    def __init__(self, label: str, unit: str) -> None:
        self.label, self.unit = label, unit
        self.done = self.total = 0
        self.bar: Any = None

    def __call__(self, done: int, total: int, path: str = "") -> None:
        from tqdm import tqdm

        self.done, self.total = done, total
        if self.bar is None:
            self.bar = tqdm(total=total, desc=self.label, unit=self.unit, file=sys.stderr,
                            disable=not sys.stderr.isatty(), dynamic_ncols=True, mininterval=0.1,
                            leave=False)  # fmt: skip
        self.bar.update(done - self.bar.n)
        if path:
            self.bar.set_postfix_str(path if len(path) <= 40 else "…" + path[-39:], refresh=False)
        if done >= total:
            self.close()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _workspace_name_for(path: Path) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", path.name).strip("-.") or "vault"
    return name[:64]


def _index(dispatcher: Dispatcher, args: argparse.Namespace) -> int:
    root = Path(args.path).expanduser().resolve()
    name = args.workspace or _workspace_name_for(root)
    dispatcher.call("workspace.add", [name, str(root)])
    if args.include_hidden is not None:
        dispatcher.call("workspace.configure", [name, {"include_hidden": args.include_hidden}])
    files, chunks = _Progress("files", "file"), _Progress("embedding", "chunk")
    said = None if args.json else (lambda s: print(_index_line(name, s), flush=True))
    try:
        summary = dispatcher.engine.index_run(
            name, progress=files, embed_progress=chunks, notice=_tell, indexed=said
        )
    except KeyboardInterrupt:
        for bar in (files, chunks):
            bar.close()
        if chunks.total:
            done = f"while embedding, {_embedded(dispatcher, name, chunks)}"
        else:
            done = f"after {files.done:,} of {files.total:,} files"
        _tell(f"interrupted {done}; run `autodoc index {args.path}` again to resume"
              " (what was stored is kept)")  # fmt: skip
        return EXIT_INTERRUPTED
    if args.json:
        print(json.dumps(summary, ensure_ascii=False, indent=2))
        return EXIT_OK
    emb = summary["embedding"]
    if emb.get("model"):
        rate = f", {emb['per_second']}/s" if emb.get("per_second") else ""
        print(
            f"embeddings ({emb['model']}): {emb['embedded']} new{rate}, "
            f"{emb['coverage']['embedded']}/{emb['coverage']['total']} chunks covered"
        )
    else:
        print(f"semantic search off: {emb.get('reason')}")
    for title, rows, key in (
        ("skipped", summary["skipped"], "reason"),
        ("warnings", summary["warnings"], "message"),
    ):
        if rows:
            print(f"{title}:")
            for row in rows[:20]:
                print(f"  {row['path']}: {row[key]}")
            if len(rows) > 20:
                print(f"  … and {len(rows) - 20} more (autodoc --call index.status '[\"{name}\"]')")
    return EXIT_OK


def _embedded(dispatcher: Dispatcher, name: str, bar: _Progress) -> str:
    """How many chunks have vectors now, as the store says (the bar counts distinct texts)."""
    try:
        cov = dispatcher.call("index.status", [name]).get("semantic_coverage") or {}
        return f"{cov['embedded']:,} of {cov['total']:,} chunks embedded"
    except (RpcError, KeyError, TypeError):
        return f"after {bar.done:,} of {bar.total:,} chunk texts"


def _tell(text: str) -> None:
    print(f"autodoc: {text}", file=sys.stderr, flush=True)


def _index_line(name: str, s: dict[str, Any]) -> str:
    hidden = s["hidden"]
    shown = ""
    if hidden["count"]:
        more = ", …" if hidden["count"] > len(hidden["examples"]) else ""
        shown = (f", {hidden['count']} hidden not indexed ({', '.join(hidden['examples'])}{more};"
                 " --include-hidden PATTERN indexes them)")  # fmt: skip
    kept = ""
    if s["warnings_kept"]:
        kept = f" (and {s['warnings_kept']} from unchanged files: autodoc check lists them)"
    return (
        f"indexed {name}: {s['files']} files ({s['added']} added, {s['modified']} modified, "
        f"{s['deleted']} deleted, {s['unchanged']} unchanged), {s['chunks']} chunks "
        f"({s['chunks_written']} written), {len(s['skipped'])} skipped{shown}, "
        f"{len(s['warnings'])} warnings{kept}, {s['seconds']:.1f} s"
    )


def _check(dispatcher: Dispatcher, args: argparse.Namespace) -> int:
    if args.path:
        root = Path(args.path).expanduser().resolve()
        name = args.workspace or _workspace_name_for(root)
        dispatcher.call("workspace.add", [name, str(root)])
    else:
        name = args.workspace or _default_workspace(dispatcher)
    if args.schema:
        schema = Path(args.schema).expanduser().resolve()
        dispatcher.call("workspace.configure", [name, {"schema": str(schema)}])
    report = dispatcher.call("index.check", [name])
    summary = report["summary"]
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        try:
            for f in report["findings"]:
                level = "" if f["severity"] == "error" else "warning: "
                print(f"{f['path']}:{f['line']}: {level}{f['message']}")
        except BrokenPipeError:  # `| head`: the summary still goes to stderr, then exit 141
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            _print_check_summary(report)
            raise
        _print_check_summary(report)
    return EXIT_RPC_ERROR if summary["errors"] else EXIT_OK


def _print_check_summary(report: dict[str, Any]) -> None:
    """The one-line summary, on stderr: findings go to stdout for a CI log or a pipe."""
    summary = report["summary"]
    schema = report["schema"]
    described = (
        f"schema {schema['path']}: {len(schema['fields'])} fields, {len(schema['types'])} types"
        if schema["fields"] or schema["types"]
        else f"no schema at {schema['path']}"
    )
    kinds = ", ".join(f"{k} {n}" for k, n in summary["by_kind"].items())
    print(
        f"{summary['errors']} errors, {summary['warnings']} warnings in "
        f"{summary['documents']} documents ({summary['typed']} typed; {described})"
        + (f": {kinds}" if kinds else ""),
        file=sys.stderr,
    )


def _eval(dispatcher: Dispatcher, args: argparse.Namespace) -> int:
    """`autodoc eval`: a BEIR dataset in a store of its own, or a vault with a golden file."""
    from autodoc.evaluation import beir as ev

    try:
        options = json.loads(args.options) if args.options else None
    except json.JSONDecodeError as exc:
        raise RpcError(-32700, f"--options is not valid JSON: {exc}") from None
    target = Path(args.target).expanduser().resolve() if args.target else None
    if target is not None and ev.is_beir(target):
        return _eval_beir(args, target, options)
    if not args.golden:
        raise RpcError(-32602, "eval takes a BEIR folder, or a vault with --golden FILE")
    return _eval_golden(dispatcher, args, target, options)


def _eval_sets(
    dispatcher: Dispatcher, name: str, options: Any, stages: str | None
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """Index the workspace (options first); (run summary, index status, stage sets to run)."""
    from autodoc.evaluation import beir as ev

    if options:
        dispatcher.call("workspace.configure", [name, options])
    summary = dispatcher.engine.index_run(name, embed_progress=_Progress("embedding", "chunk"))
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


def _eval_head(name: str, split: str, queries: int, args, summary, status) -> dict[str, Any]:
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
    }


def _eval_gate(report: dict[str, Any], value: Callable[[str], float], min_recall3: float) -> bool:
    """Judge the fullest set that ran against `--min-recall3`; True when it fails."""
    from autodoc.evaluation import beir as ev

    judged_set = ev.gate_set(report["results"])
    got = value(judged_set)
    report["gate"] = {"set": judged_set, "recall@3": got, "min": min_recall3,
                      "passed": got >= min_recall3}  # fmt: skip
    return got < min_recall3


def _print_gate(report: dict[str, Any]) -> None:
    if "gate" in report:
        g = report["gate"]
        verdict = "passed" if g["passed"] else "FAILED"
        print(f"\ngate: Recall@3 {g['recall@3']:.3f} ({g['set']}) >= {g['min']}: {verdict}")


def _eval_beir(args: argparse.Namespace, target: Path, options: Any) -> int:
    from autodoc.evaluation import beir as ev

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
        name = _workspace_name_for(target)
        names_file = base / "names.json"
        if not names_file.exists():
            names_file.write_text(json.dumps(ev.write_corpus(corpus, base / "vault")))
        names = json.loads(names_file.read_text())
        dispatcher.call("workspace.add", [name, str(base / "vault")])
        data = ev.Dataset(target.name, split, judged, len(corpus), ev.documents_of(names))
        summary, status, sets = _eval_sets(dispatcher, name, options, args.stages)
        results = ev.evaluate(dispatcher.call, name, data, sets, ks, fusion=args.fusion)
    report = _eval_head(data.name, split, len(judged), args, summary, status)
    report["results"] = results
    failed = args.min_recall3 is not None and _eval_gate(
        report, lambda s: results[s]["recall@3"], args.min_recall3
    )
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        print(f"### {data.name} ({split}: {len(judged)} queries, "
              f"{status['documents']:,} documents, {status['chunks']:,} chunks)\n")  # fmt: skip
        print("\n".join(ev.table(results, ks)))
        _print_gate(report)
    return EXIT_RPC_ERROR if failed else EXIT_OK


def _eval_golden(
    dispatcher: Dispatcher, args: argparse.Namespace, target: Path | None, options: Any
) -> int:
    from autodoc.evaluation import golden

    if target is not None:
        name = args.workspace or _workspace_name_for(target)
        dispatcher.call("workspace.add", [name, str(target)])
    else:
        name = args.workspace or _default_workspace(dispatcher)
    try:
        queries = golden.load(Path(args.golden))
    except RpcError as bad:  # the gate's own input is wrong: a usage error, not a failed gate
        print(json.dumps({"error": bad.to_dict()}, ensure_ascii=False), file=sys.stderr)
        return EXIT_USAGE
    summary, status, sets = _eval_sets(dispatcher, name, options, args.stages)
    absent = _absent_targets(dispatcher, name, queries)
    if absent:
        shown = ", ".join(absent[:5]) + (f" and {len(absent) - 5} more" if len(absent) > 5 else "")
        err = RpcError(INVALID_PARAMS, f"{len(absent)} golden path(s) not in the vault: {shown}",
                       {"absent": absent})  # fmt: skip
        print(json.dumps({"error": err.to_dict()}, ensure_ascii=False), file=sys.stderr)
        return EXIT_USAGE
    results = golden.evaluate(dispatcher.call, name, queries, sets, fusion=args.fusion)
    report = _eval_head(name, "golden", len(queries), args, summary, status)
    report["results"] = results
    failed = args.min_recall3 is not None and _eval_gate(
        report, lambda s: results[s]["all"]["recall@3"] or 0.0, args.min_recall3
    )
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        print(f"### {name} ({len(queries)} golden queries, {status['documents']:,} documents,"
              f" {status['chunks']:,} chunks)\n")  # fmt: skip
        for label, result in results.items():
            print("\n".join(golden.table(label, result)) + "\n")
        _print_gate(report)
    return EXIT_RPC_ERROR if failed else EXIT_OK


def _absent_targets(dispatcher: Dispatcher, name: str, queries: list[Any]) -> list[str]:
    from autodoc.evaluation import golden
    from autodoc.store import reads as store_queries

    ws = dispatcher.engine.workspace(name)
    with dispatcher.engine.store.snapshot() as conn:
        return golden.absent_targets(
            queries, lambda p: store_queries.document_generation(conn, ws.id, p) is not None
        )


def _default_workspace(dispatcher: Dispatcher) -> str:
    spaces = dispatcher.call("workspace.list")
    cwd = Path.cwd().resolve()
    around = [w for w in spaces if cwd == Path(w["root"]) or Path(w["root"]) in cwd.parents]
    if around:
        return max(around, key=lambda w: len(w["root"]))["name"]
    if len(spaces) == 1:
        return spaces[0]["name"]
    names = ", ".join(w["name"] for w in spaces) or "none yet: run `autodoc index PATH`"
    raise RpcError(-32602, f"which workspace? pass --workspace (known: {names})")


def _search(dispatcher: Dispatcher, args: argparse.Namespace) -> int:
    name = args.workspace or _default_workspace(dispatcher)
    opts: dict[str, Any] = {"limit": args.limit}
    if args.stages:
        opts["stages"] = [s.strip() for s in args.stages.split(",") if s.strip()]
    answer = dispatcher.call("search.query", [name, args.query, opts])
    if args.json:
        print(json.dumps(answer, ensure_ascii=False, indent=2))
        return EXIT_OK
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    for hit in answer["hits"]:
        loc = f"{hit['path']}:{hit['line_start']}-{hit['line_end']}"
        snippet = _highlight(hit["snippet"], hit["highlights"], color)
        if color:
            loc = f"\033[35m{loc}\033[0m"
            crumb = f"\033[36m{hit['breadcrumb']}\033[0m"
        else:
            crumb = hit["breadcrumb"]
        print(f"{loc}  {crumb}  {snippet}")
    stages = answer["stages"]
    note = f"{len(answer['hits'])} hits · {answer['mode_used']} · {answer['took_ms']:.1f} ms"
    cov = answer.get("semantic_coverage")
    if answer["semantic"] in ("partial", "switching") and cov:
        note += f" · semantic {answer['semantic']} ({cov['embedded']}/{cov['total']} chunks)"
    for stage, why in stages["skipped"].items():
        note += f" · {stage} skipped: {why}"
    if answer["missing"]:
        note += f" · missing: {', '.join(answer['missing'])}"
    if answer["confidence"] != "high":
        note += f" · confidence {answer['confidence']}"
    print(note, file=sys.stderr)
    return EXIT_OK


def _related(dispatcher: Dispatcher, args: argparse.Namespace) -> int:
    target, line = args.target, None
    if m := re.fullmatch(r"(.+?):(\d+)", target):
        target, line = m[1], int(m[2])
    name, rel = _document_of(dispatcher, target, args.workspace)
    answer = dispatcher.call("related", [name, rel, line, {"limit": args.limit}])
    if args.json:
        print(json.dumps(answer, ensure_ascii=False, indent=2))
        return EXIT_OK
    for hit in answer["hits"]:
        why = ", ".join(
            f"similar {hit['similarity']:.2f}" if r == "similar" else
            (_shares(hit["shared_links"]) if r == "shares links" else r)
            for r in hit["reasons"]
        )  # fmt: skip
        print(f"{hit['path']}:{hit['line_start']}-{hit['line_end']}  {hit['breadcrumb']}  ({why})")
    print(
        f"{len(answer['hits'])} related to {answer['path']}:{answer['line_start']}-"
        f"{answer['line_end']} ({answer['breadcrumb']}) · semantic {answer['semantic']}"
        f" · {answer['took_ms']:.1f} ms",
        file=sys.stderr,
    )
    return EXIT_OK


def _shares(n: int) -> str:
    return f"shares {n} link{'s' if n != 1 else ''}"


def _document_of(dispatcher: Dispatcher, target: str, workspace: str | None) -> tuple[str, str]:
    """(workspace, root-relative path) for a file on disk, else for a path in the workspace."""
    path = Path(target).expanduser()
    if path.is_file():
        real = path.resolve()
        spaces = [w for w in dispatcher.call("workspace.list") if Path(w["root"]) in real.parents]
        if workspace:
            spaces = [w for w in spaces if w["name"] == workspace]
        if spaces:
            ws = max(spaces, key=lambda w: len(w["root"]))
            return ws["name"], real.relative_to(ws["root"]).as_posix()
    return workspace or _default_workspace(dispatcher), target


def _find(dispatcher: Dispatcher, args: argparse.Namespace) -> int:
    name = args.workspace or _default_workspace(dispatcher)
    opts = {"exact": args.exact, "limit": args.limit}
    answer = dispatcher.call("search.find", [name, args.name, opts])
    if args.json:
        print(json.dumps(answer, ensure_ascii=False, indent=2))
        return EXIT_OK
    for m in answer["matches"]:
        span = f"{m['line_start']}-{m['line_end']}" if "line_start" in m else m["line"]
        print(f"{m['path']}:{m['line']}  {m['name']}  {m['kind']}, {m['match']}  [{span}]")
    note = f"{len(answer['matches'])} matches · {answer['took_ms']:.1f} ms"
    if answer["truncated"]:
        note += " · truncated: a longer name narrows the candidates"
    print(note, file=sys.stderr)
    return EXIT_OK


def _highlight(text: str, spans: list[list[int]], color: bool) -> str:
    if not color or not spans:
        return text
    out, pos = [], 0
    for a, b in spans:
        out.append(text[pos:a])
        out.append(f"\033[1;33m{text[a:b]}\033[0m")
        pos = b
    out.append(text[pos:])
    return "".join(out)


if __name__ == "__main__":
    sys.exit(main())
