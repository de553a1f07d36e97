"""The command line: `autodoc --call METHOD JSON`, `autodoc index PATH`, `autodoc search QUERY`.

A thin layer over the dispatcher: it parses arguments, calls methods through `Dispatcher.call`
only (never the engine, the store or the query modules), and prints. What it prints is
`output`'s; `autodoc eval` is `evaluate`'s.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from pathlib import Path
from typing import Any, NoReturn

from autodoc import __version__
from autodoc.gaps.question_log import log_files
from autodoc.serve.cli import lease_wait
from autodoc.serve.cli.lease_wait import DEFAULT_WAIT_S, LeaseWait
from autodoc.serve.cli.output import (
    EXIT_BROKEN_PIPE,
    EXIT_CANNOT_RUN,
    EXIT_FOUND,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_STATUSES,
    ProgressBar,
    index_line,
    print_check,
    print_error,
    print_find,
    print_gaps,
    print_gaps_check,
    print_index_summary,
    print_json,
    print_related,
    print_search,
    quiet_stdout,
    tell,
)
from autodoc.serve.dispatcher import Dispatcher, Reports
from autodoc.wire import limits
from autodoc.wire.errors import INVALID_PARAMS, PARSE_ERROR, RpcError
from autodoc.wire.protocol import FUSIONS

LOG_QUESTIONS_HELP = "log the questions answered to this file, outside every vault (doc/gaps.md)"
# the bars `autodoc index` shows (tests/integration/test_cli.py patches them here)
_Progress = ProgressBar


class UsageError(Exception):
    """Arguments argparse refused: `main` says so (a sentence, JSON too with --json), exit 2."""

    def __init__(self, usage: str, message: str) -> None:
        super().__init__(message)
        self.usage = usage


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(self.format_usage(), message)


# Over 60 lines by design: the whole command line, declared in one table.
def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="autodoc",
        description="Hybrid search over a Markdown knowledge base.",
        epilog="Methods for --call: workspace.add, workspace.list, workspace.remove, "
        "workspace.section_size, workspace.configure, index.run, index.status, index.check, "
        "search.query, search.find, related, doc.read, changes.since. `autodoc serve` offers the "
        "same methods over LSP;"
        " `autodoc mcp` offers them to agents as MCP tools. Reads work while another process"
        " (an editor's `autodoc serve`) writes the store; a write waits for it (--wait). "
        + EXIT_STATUSES,
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
    ix.add_argument(
        "--wait",
        type=float,
        default=DEFAULT_WAIT_S,
        metavar="SECONDS",
        help="while another process writes the store, wait this long for it (default"
        f" {DEFAULT_WAIT_S:g}; 0: fail at once), then exit 2 naming it",
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
        help="check frontmatter against the schema and every link (for CI: exit 1 when it finds"
        " errors, 2 when it cannot run); beside another process writing the store, the files"
        " are checked in a private index",
    )
    ck.add_argument("path", nargs="?", help="the folder (default: the workspace around the cwd)")
    ck.add_argument("--workspace", "-w", help="workspace name")
    ck.add_argument("--schema", help="schema file (default: <folder>/_schema/frontmatter.yaml)")
    ck.add_argument("--json", action="store_true", help="print the report as JSON")
    ck.add_argument("--gaps", type=int, metavar="N",
                    help="also fail when more than N groups of unanswered questions are new"
                    " since the last `autodoc gaps` report (needs --log-questions)")  # fmt: skip
    ck.add_argument("--log-questions", metavar="PATH", help="the server's question log")
    gp = sub.add_parser(
        "gaps", help="what the docs did not answer: the logged questions, grouped by meaning"
    )
    gp.add_argument("--log-questions", metavar="PATH", required=True,
                    help="the question log a server wrote (its --log-questions)")  # fmt: skip
    gp.add_argument("--workspace", "-w", help="one workspace's questions (default: all)")
    gp.add_argument("--since", help="from this ISO date or time on (UTC unless it says)")
    gp.add_argument("--json", action="store_true", help="print the report as JSON")
    gp.add_argument("--no-record", action="store_true",
                    help="do not make this the baseline `check --gaps` counts from")  # fmt: skip
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
    sv.add_argument("--max-concurrent", type=int,
                    help="with --http: requests at once, per worker (default 4)")  # fmt: skip
    sv.add_argument("--workers", type=int, default=limits.usable_cores(),
                    help="with --http: worker processes (default: one a usable core)")  # fmt: skip
    sv.add_argument("--log-questions", metavar="PATH", help=LOG_QUESTIONS_HELP)
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
    mc.add_argument("--log-questions", metavar="PATH", help=LOG_QUESTIONS_HELP)
    mc.add_argument("--log-file", help="log here instead of stderr")
    mc.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = _parser()
    try:
        args = _arguments(parser, argv)
    except UsageError as bad:
        sys.stderr.write(bad.usage)
        print_error(RpcError(INVALID_PARAMS, str(bad)), as_json="--json" in argv)
        return EXIT_CANNOT_RUN
    if getattr(args, "command", None) in ("serve", "mcp"):
        return _serve(args)
    from autodoc.engine import Engine  # after the arguments: `--help` opens nothing

    as_json = bool(getattr(args, "json", False) or args.call)
    try:
        engine = Engine(args.db, question_log=getattr(args, "log_questions", None))
    except RpcError as err:  # a store that cannot be opened (read-only, log not checkpointed)
        print_error(err, as_json)
        return EXIT_CANNOT_RUN
    try:
        return _command(parser, Dispatcher(engine), args)
    except RpcError as err:
        print_error(err, as_json)
        return EXIT_CANNOT_RUN
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `autodoc check | head`: the reader has what it wanted
        quiet_stdout()  # no error at exit
        return EXIT_BROKEN_PIPE
    finally:
        engine.close()


def _arguments(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    if any(a == "--call" or a.startswith("--call=") for a in argv):
        # `--call METHOD 'JSON'` has its own grammar: the JSON is not a subcommand.
        call = _Parser(prog="autodoc")
        call.add_argument("--db")
        call.add_argument("--call", required=True)
        call.add_argument("params", nargs="?")
        return call.parse_args(argv)
    return parser.parse_args(argv)


def _command(
    parser: argparse.ArgumentParser, dispatcher: Dispatcher, args: argparse.Namespace
) -> int:
    if args.call:
        return _call(dispatcher, args.call, args.params)
    commands = {"index": _index, "search": _search, "find": _find, "check": _check,
                "related": _related, "eval": _eval, "gaps": _gaps}  # fmt: skip
    if args.command in commands:
        return commands[args.command](dispatcher, args)
    parser.print_help(sys.stderr)
    return EXIT_CANNOT_RUN


def _serve(args: argparse.Namespace) -> int:
    """`autodoc serve` (LSP, or HTTP with --http) and `autodoc mcp`: the long-lived servers."""
    lsp_stdio = args.command == "serve" and not args.http
    # An editor logs a language server's every stderr line as an error: there, only warnings
    # and above go to stderr, and the rest reaches the editor as `window/logMessage`.
    _log_for_server(args.log_file, args.log_level, logging.WARNING if lsp_stdio else logging.DEBUG)
    if args.command == "serve" and args.http:
        return _serve_http(args)
    try:
        if args.command == "serve":
            from autodoc.serve.lsp.lsp_entry import serve  # pygls loads on a thread

            return serve(args.db, args.log_questions)
        if args.http:
            from autodoc.serve.http import mcp_http

            return mcp_http.serve(args.db, args.paths, args.http, watch=not args.no_watch,
                                  token_file=args.token_file, token_env=args.token_env,
                                  question_log=args.log_questions)  # fmt: skip
        from autodoc.serve.mcp.mcp_entry import serve as serve_mcp  # the SDK loads on a thread

        return serve_mcp(args.db, args.paths, watch=not args.no_watch,
                         question_log=args.log_questions)  # fmt: skip
    except (RpcError, ValueError) as err:
        if not isinstance(err, RpcError):  # a token file that does not read
            err = RpcError(INVALID_PARAMS, str(err))
        print_error(err)
        return EXIT_CANNOT_RUN


def _serve_http(args: argparse.Namespace) -> int:
    """`autodoc serve --http`: a configuration it refuses cannot run (exit 2)."""
    from autodoc.serve.http.team import serve_team

    try:
        return serve_team(
            args.db,
            args.paths,
            args.http,
            token_file=args.token_file,
            token_env=args.token_env,
            workers=args.workers,
            max_concurrent=args.max_concurrent,
            question_log=args.log_questions,
        )
    except (RpcError, ValueError, OSError) as err:
        if not isinstance(err, RpcError):
            err = RpcError(INVALID_PARAMS, str(err))
        print_error(err)
        return EXIT_CANNOT_RUN


def _log_for_server(log_file: str | None, level: str, stderr_level: int) -> None:
    """A server's stdout carries its protocol: logs go to stderr (from `stderr_level`) or the
    file, ours at `level`, other libraries' at warnings and above."""
    handler = logging.FileHandler(log_file) if log_file else logging.StreamHandler()
    if not log_file:
        handler.setLevel(stderr_level)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("autodoc").setLevel(level.upper())


def _call(dispatcher: Dispatcher, method: str, raw: str | None) -> int:
    """The params are measured before they are parsed: a nesting bomb or a huge argument gets
    its -32602 without reaching the JSON parser."""
    raw = raw or "[]"
    refusal = limits.unreadable(raw)
    if refusal is not None:
        raise refusal
    try:
        params = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise RpcError(PARSE_ERROR, f"params are not valid JSON: {exc}") from None
    writes = LeaseWait(0, f"call {method}", can_wait=False)  # a write refused says who writes
    result = writes.write(lambda: dispatcher.call(method, params))
    print(json.dumps(result, ensure_ascii=False, indent=2, default=str))
    return EXIT_OK


def _workspace_name_for(path: Path) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", path.name).strip("-.") or "vault"
    return name[:64]


def _folder_workspace(
    dispatcher: Dispatcher, root: Path, name: str | None
) -> tuple[str, dict[str, Any] | None]:
    """The workspace for a folder and its listing (None: not in the store yet): the one named,
    else the one already on the folder whatever its name (an editor's server named it), else a
    new one named after the folder."""
    spaces = dispatcher.call("workspace.list")
    if name is None:
        on_root = [w for w in spaces if Path(w["root"]) == root]
        name = on_root[0]["name"] if on_root else _workspace_name_for(root)
    return name, next((w for w in spaces if w["name"] == name), None)


def _index(dispatcher: Dispatcher, args: argparse.Namespace) -> int:
    root = Path(args.path).expanduser().resolve()
    name, _ = _folder_workspace(dispatcher, root, args.workspace)
    if args.wait < 0:
        raise RpcError(INVALID_PARAMS, f"--wait takes seconds, 0 or more, not {args.wait:g}")
    writes = LeaseWait(args.wait, f"index {name}")
    writes.write(lambda: dispatcher.call("workspace.add", [name, str(root)]))
    if args.include_hidden is not None:
        hidden = {"include_hidden": args.include_hidden}
        writes.write(lambda: dispatcher.call("workspace.configure", [name, hidden]))
    files, chunks = _Progress("files", "file"), _Progress("embedding", "chunk")
    said = None if args.json else (lambda s: print(index_line(name, s), flush=True))
    reports = Reports(progress=files, embed_progress=chunks, notice=tell, indexed=said)
    try:
        summary = writes.write(lambda: dispatcher.call("index.run", [name], reports=reports))
    except KeyboardInterrupt:
        for bar in (files, chunks):
            bar.close()
        if chunks.total:
            done = f"while embedding, {_embedded(dispatcher, name, chunks)}"
        else:
            done = f"after {files.done:,} of {files.total:,} files"
        tell(f"interrupted {done}; run `autodoc index {args.path}` again to resume"
             " (what was stored is kept)")  # fmt: skip
        return EXIT_INTERRUPTED
    if args.json:
        print_json(summary)
    else:
        print_index_summary(name, summary)
    return EXIT_OK


def _embedded(dispatcher: Dispatcher, name: str, bar: ProgressBar) -> str:
    """How many chunks have vectors now, as the store says (the bar counts distinct texts)."""
    try:
        cov = dispatcher.call("index.status", [name]).get("semantic_coverage") or {}
        return f"{cov['embedded']:,} of {cov['total']:,} chunks embedded"
    except (RpcError, KeyError, TypeError):
        return f"after {bar.done:,} of {bar.total:,} chunk texts"


def _check(dispatcher: Dispatcher, args: argparse.Namespace) -> int:
    """Index and check the folder; beside another writer of the store, the files are checked
    in a private index (`lease_wait`), so the exit status is about the files as they are."""
    if args.gaps is not None:  # refused before the check runs
        if args.gaps < 0:
            raise RpcError(INVALID_PARAMS, f"--gaps takes a count of 0 or more, got {args.gaps}")
        _question_log_there(args.log_questions, "check --gaps")
    if args.path:
        root = Path(args.path).expanduser().resolve()
        name, listed = _folder_workspace(dispatcher, root, args.workspace)
    else:
        name = args.workspace or _default_workspace(dispatcher)
        listed = next((w for w in dispatcher.call("workspace.list") if w["name"] == name), None)
        if listed is None:
            raise RpcError(INVALID_PARAMS, f"unknown workspace {name!r}", {"workspace": name})
        root = Path(listed["root"])
    changes = {"schema": str(Path(args.schema).expanduser().resolve())} if args.schema else {}
    try:
        report = _check_in_store(dispatcher, name, root, changes)
        why = None if report["indexed"] else RpcError(**report["not_indexed"])
    except RpcError as err:
        if not lease_wait.is_busy(err):
            raise
        why = err
    if why is not None:
        options = lease_wait.checking_options(listed and listed["options"], changes)
        report = lease_wait.check_privately(_private_store, name, root, options, why)
    gaps_over = _gaps_over(dispatcher, args, report)
    if args.json:
        print_json(report)
    else:
        print_check(report)
        if "gaps" in report:
            print_gaps_check(report["gaps"])
    return EXIT_FOUND if report["summary"]["errors"] or gaps_over else EXIT_OK


def _gaps_over(dispatcher: Dispatcher, args: argparse.Namespace, report: dict[str, Any]) -> bool:
    """`check --gaps N`: whether more than N groups of unanswered questions are new since the
    recorded report (`report["gaps"]` says which)."""
    if args.gaps is None:
        return False
    gaps = dispatcher.call("gaps.report", [None, {}])
    new = [g for g in gaps["groups"] if g["new"]]
    report["gaps"] = {"allowed": args.gaps, "new_groups": len(new), "groups": new,
                      "baseline_at": gaps["baseline_at"]}  # fmt: skip
    return len(new) > args.gaps


def _question_log_there(path: str | None, command: str) -> None:
    """-32602 (exit 2) for no `--log-questions`, or a path with no log: a mistyped path must
    not read as a knowledge base with nothing unanswered."""
    if not path:
        raise RpcError(INVALID_PARAMS, f"{command} needs --log-questions PATH (the server's)")
    if not log_files(Path(path).expanduser()):
        raise RpcError(INVALID_PARAMS, f"no question log at {path}", {"path": path})


def _gaps(dispatcher: Dispatcher, args: argparse.Namespace) -> int:
    """`autodoc gaps`: the report, Markdown to paste into an issue (or JSON); recorded as the
    baseline `check --gaps` counts from unless --no-record."""
    _question_log_there(args.log_questions, "gaps")
    opts: dict[str, Any] = {"record": not args.no_record}
    if args.since:
        opts["since"] = args.since
    report = dispatcher.call("gaps.report", [args.workspace, opts])
    if args.json:
        print_json(report)
    else:
        print_gaps(report)
    return EXIT_OK


def _check_in_store(
    dispatcher: Dispatcher, name: str, root: Path, changes: dict[str, Any]
) -> dict[str, Any]:
    """`index.check` in the store: nothing is written that is there already (a workspace on
    this folder, the same schema), so a store another process writes is only read."""
    dispatcher.call("workspace.add", [name, str(root)])
    if changes:
        dispatcher.call("workspace.configure", [name, changes])
    return dispatcher.call("index.check", [name])


def _private_store(db: Path) -> Dispatcher:
    """A store of `check`'s own, in a temporary folder, for when the shared one is written by
    another process."""
    from autodoc.engine import Engine

    return Dispatcher(Engine(db))


def _eval(dispatcher: Dispatcher, args: argparse.Namespace) -> int:
    """`autodoc eval`: a BEIR dataset in a store of its own, or a vault with a golden file."""
    from autodoc.serve.cli import evaluate  # the evaluation modules are only needed here

    try:
        options = json.loads(args.options) if args.options else None
    except json.JSONDecodeError as exc:
        raise RpcError(PARSE_ERROR, f"--options is not valid JSON: {exc}") from None
    target = Path(args.target).expanduser().resolve() if args.target else None
    if target is not None and evaluate.is_beir(target):
        return evaluate.eval_beir(args, target, _workspace_name_for(target), options)
    if not args.golden:
        raise RpcError(INVALID_PARAMS, "eval takes a BEIR folder, or a vault with --golden FILE")
    if target is not None:
        name, _ = _folder_workspace(dispatcher, target, args.workspace)
        writes = LeaseWait(0, f"evaluate {name}", can_wait=False)
        writes.write(lambda: dispatcher.call("workspace.add", [name, str(target)]))
    else:
        name = args.workspace or _default_workspace(dispatcher)
    return evaluate.eval_golden(dispatcher, args, name, options)


def _search(dispatcher: Dispatcher, args: argparse.Namespace) -> int:
    name = args.workspace or _default_workspace(dispatcher)
    opts: dict[str, Any] = {"limit": args.limit}
    if args.stages:
        opts["stages"] = [s.strip() for s in args.stages.split(",") if s.strip()]
    answer = dispatcher.call("search.query", [name, args.query, opts])
    if args.json:
        print_json(answer)
    else:
        print_search(answer)
    return EXIT_OK


def _find(dispatcher: Dispatcher, args: argparse.Namespace) -> int:
    name = args.workspace or _default_workspace(dispatcher)
    opts = {"exact": args.exact, "limit": args.limit}
    answer = dispatcher.call("search.find", [name, args.name, opts])
    if args.json:
        print_json(answer)
    else:
        print_find(answer)
    return EXIT_OK


def _related(dispatcher: Dispatcher, args: argparse.Namespace) -> int:
    target, line = args.target, None
    if m := re.fullmatch(r"(.+?):(\d+)", target):
        target, line = m[1], int(m[2])
    name, rel = _document_of(dispatcher, target, args.workspace)
    answer = dispatcher.call("related", [name, rel, line, {"limit": args.limit}])
    if args.json:
        print_json(answer)
    else:
        print_related(answer)
    return EXIT_OK


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


if __name__ == "__main__":
    sys.exit(main())
