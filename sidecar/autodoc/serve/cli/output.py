"""What the command line prints: answers as text for a person (JSON with `--json` is printed
where it is asked for), progress bars on stderr, and the exit statuses.

No method is called here: `cli.py` asks the dispatcher, this module renders the answer.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from typing import Any

from autodoc.wire.errors import RpcError

# The exit statuses (`autodoc --help` and doc/errors.md say them): a CI job tells "the docs
# have errors" from "the check could not run".
EXIT_OK = 0
EXIT_FOUND = 1  # `check` found errors; `eval`'s --min-recall3 gate failed
EXIT_CANNOT_RUN = 2  # bad arguments, an unknown workspace or path, the store busy: nothing judged
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports a reader that stopped reading
EXIT_STATUSES = (
    "Exit status: 0 done; 1 check found errors, or eval's --min-recall3 gate failed; 2 could not"
    " run (bad arguments, an unknown workspace, a folder that is not there, the store written by"
    " another process); 130 interrupted; 141 the reader of the output left. An error is one"
    ' sentence on stderr; with --json (and always with --call) its object {"error": {code,'
    " message, data}} is printed on stdout too (codes: doc/errors.md)."
)


def print_error(err: RpcError, as_json: bool = False) -> None:
    """An error as a sentence on stderr; with `as_json` its JSON-RPC error object on stdout too,
    where a program reads the answer it asked for."""
    print(f"autodoc: {err.message}", file=sys.stderr, flush=True)
    if as_json:
        with contextlib.suppress(BrokenPipeError):
            print(json.dumps({"error": err.to_dict()}, ensure_ascii=False), flush=True)


def print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=2))


def tell(text: str) -> None:
    print(f"autodoc: {text}", file=sys.stderr, flush=True)


def quiet_stdout() -> None:
    """The reader of stdout is gone (`| head`): nothing more goes there, and no error at exit."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


class ProgressBar:
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


# -- autodoc index ------------------------------------------------------------------------------


def index_line(name: str, s: dict[str, Any]) -> str:
    hidden = s["hidden"]
    shown = ""
    if hidden["count"]:
        more = ", …" if hidden["count"] > len(hidden["examples"]) else ""
        shown = (f", {hidden['count']} hidden not indexed ({', '.join(hidden['examples'])}{more};"
                 " --include-hidden PATTERN indexes them)")  # fmt: skip
    rules = s.get("left_out") or []
    if rules:
        files, folders = sum(r["files"] for r in rules), sum(r["folders"] for r in rules)
        shown += f", {_things(files, 'file')} and {_things(folders, 'folder')} left out by rules"
    kept = ""
    if s["warnings_kept"]:
        kept = f" (and {s['warnings_kept']} from unchanged files: autodoc check lists them)"
    return (
        f"indexed {name}: {s['files']} files ({s['added']} added, {s['modified']} modified, "
        f"{s['deleted']} deleted, {s['unchanged']} unchanged), {s['chunks']} chunks "
        f"({s['chunks_written']} written), {len(s['skipped'])} skipped{shown}, "
        f"{len(s['warnings'])} warnings{kept}, {s['seconds']:.1f} s"
    )


def _things(n: int, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def print_left_out(rows: list[dict[str, Any]]) -> None:
    """Each rule that left something out, and where it is written."""
    if not rows:
        return
    print("left out by rules (exclude, .gitignore, .ignore; `include` lets paths back in):")
    for row in rows[:20]:
        counts = [_things(row["files"], "file")] if row["files"] else []
        if row["folders"]:
            counts.append(_things(row["folders"], "folder") + " not entered")
        print(f"  {row['rule']}  ({row['source']}): {', '.join(counts)}")
    if len(rows) > 20:
        print(f"  … and {len(rows) - 20} more rules")


def print_index_summary(name: str, summary: dict[str, Any]) -> None:
    """After the files' line: the embeddings, then what the rules left out, then what was
    skipped and warned about."""
    emb = summary["embedding"]
    if emb.get("model"):
        rate = f", {emb['per_second']}/s" if emb.get("per_second") else ""
        cov = emb["coverage"]
        shared = cov["total"] - emb.get("texts", cov["total"])
        why = (
            f" ({shared:,} repeat{'s' if shared == 1 else ''} another chunk's text:"
            " one vector serves each text)"
            if shared > 0
            else ""
        )
        print(
            f"embeddings ({emb['model']}): {emb['embedded']:,} new vectors{rate}, "
            f"{cov['embedded']:,}/{cov['total']:,} chunks covered{why}"
        )
    else:
        print(f"semantic search off: {emb.get('reason')}")
    print_left_out(summary.get("left_out") or [])
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


# -- autodoc check ------------------------------------------------------------------------------


def print_check(report: dict[str, Any]) -> None:
    """Findings on stdout, the summary on stderr (even when the reader of stdout left)."""
    try:
        for f in report["findings"]:
            level = "" if f["severity"] == "error" else "warning: "
            print(f"{f['path']}:{f['line']}: {level}{f['message']}")
    except BrokenPipeError:  # `| head`: the summary still goes to stderr, then exit 141
        quiet_stdout()
        print_check_summary(report)
        raise
    print_check_summary(report)


def print_check_summary(report: dict[str, Any]) -> None:
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


# -- autodoc search, find, related --------------------------------------------------------------


def print_search(answer: dict[str, Any]) -> None:
    """One line a hit (colored on a terminal unless NO_COLOR), then a note on stderr."""
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    for hit in answer["hits"]:
        loc = f"{hit['path']}:{hit['line_start']}-{hit['line_end']}"
        snippet = highlight(hit["snippet"], hit["highlights"], color)
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
    if answer.get("below_floor"):
        note += f" · {answer['below_floor']} implausible left out"
    if answer["missing"]:
        note += f" · missing: {', '.join(answer['missing'])}"
    if answer["confidence"] != "high":
        note += f" · confidence {answer['confidence']}"
    if answer.get("did_you_mean"):
        note += f" · did you mean: {answer['did_you_mean']}"
    print(note, file=sys.stderr)


def print_find(answer: dict[str, Any]) -> None:
    for m in answer["matches"]:
        span = f"{m['line_start']}-{m['line_end']}" if "line_start" in m else m["line"]
        print(f"{m['path']}:{m['line']}  {m['name']}  {m['kind']}, {m['match']}  [{span}]")
    note = f"{len(answer['matches'])} matches · {answer['took_ms']:.1f} ms"
    if answer["truncated"]:
        note += " · truncated: a longer name narrows the candidates"
    print(note, file=sys.stderr)


def print_related(answer: dict[str, Any]) -> None:
    for hit in answer["hits"]:
        why = ", ".join(
            f"similar {hit['similarity']:.2f}" if r == "similar" else
            (shares(hit["shared_links"]) if r == "shares links" else r)
            for r in hit["reasons"]
        )  # fmt: skip
        print(f"{hit['path']}:{hit['line_start']}-{hit['line_end']}  {hit['breadcrumb']}  ({why})")
    print(
        f"{len(answer['hits'])} related to {answer['path']}:{answer['line_start']}-"
        f"{answer['line_end']} ({answer['breadcrumb']}) · semantic {answer['semantic']}"
        f" · {answer['took_ms']:.1f} ms",
        file=sys.stderr,
    )


def _when(epoch: float | None) -> str:
    if epoch is None:
        return "the start"
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(epoch))


def print_gaps(report: dict[str, Any]) -> None:
    """`autodoc gaps` as Markdown a team can paste into an issue."""
    n, groups = report["questions"], report["groups"]
    print("# What the docs did not answer\n")
    where = report["workspace"] or "every workspace"
    answered = f"{report['answered']} ({report['answered'] * 100 // max(n, 1)}%)"
    since = report["baseline_at"]
    new = (f"{report['new_groups']} new since the report of {_when(since)}" if since is not None
           else "no earlier report recorded")  # fmt: skip
    print(f"Questions logged from {_when(report['since'])} to {_when(report['until'])}, "
          f"{where}: **{n}**; answered {answered}, not answered {report['unanswered']} in "
          f"**{len(groups)} {'group' if len(groups) == 1 else 'groups'}**, {new}.\n")  # fmt: skip
    for i, g in enumerate(groups, 1):
        new = " (new)" if g["new"] and since is not None else ""
        print(f"## {i}. {g['question']}{new}\n")
        print(f"- asked {g['count']} times by {g['askers']} asker(s), "
              f"{_when(g['first_at'])} to {_when(g['last_at'])}")  # fmt: skip
        others = [q for q in g["questions"] if q != g["question"]]
        if others:
            print("- also asked: " + "; ".join(f"“{q}”" for q in others))
        if g["missing"]:
            print("- words found nowhere: " + ", ".join(f"`{w}`" for w in g["missing"]))
        for s in g["shown"]:
            where = f"`{s['path']}:{s['line']}`"
            print(f"- shown, not opened ({s['times']}×): {where} {s['breadcrumb']}")
        print()
    if report["answered_well"]:
        print("## Answered (the base rate)\n")
        for a in report["answered_well"]:
            print(f"- “{a['question']}” ({a['count']}×)")
    if report["unreadable_lines"]:
        print(f"\n({report['unreadable_lines']} line(s) of the log could not be read)")


def print_gaps_check(gaps: dict[str, Any]) -> None:
    """`check --gaps N`'s verdict, after the check's own report."""
    verdict = "over" if gaps["new_groups"] > gaps["allowed"] else "within"
    print(f"gaps: {gaps['new_groups']} group(s) of unanswered questions new since the report of "
          f"{_when(gaps['baseline_at'])}, {verdict} the {gaps['allowed']} allowed")  # fmt: skip
    for g in gaps["groups"]:
        print(f"  new: {g['question']} ({g['count']} asked)")


def shares(n: int) -> str:
    return f"shares {n} link{'s' if n != 1 else ''}"


def highlight(text: str, spans: list[list[int]], color: bool) -> str:
    if not color or not spans:
        return text
    out, pos = [], 0
    for a, b in spans:
        out.append(text[pos:a])
        out.append(f"\033[1;33m{text[a:b]}\033[0m")
        pos = b
    out.append(text[pos:])
    return "".join(out)
