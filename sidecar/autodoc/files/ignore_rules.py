"""Which paths a workspace leaves out: its `exclude` and `include` options and the `.ignore` /
`.gitignore` files inside its root, all in gitignore syntax (matched by `pathspec`), and hidden
names. The walker, the indexer's runs over a few paths (saves, the watcher's batches) and the
watcher's own filter all ask the same `Rules`, so a file cannot be left out by one and indexed
through another.

What decides, first match wins (as users of ripgrep and fd expect: an option given on purpose
beats a file, a deeper file beats a shallower one, `.ignore` beats `.gitignore`):

1. `include` lets a path in, whatever comes below (hidden names too); `include: [docs/]`
   lets in the folder and all it holds;
2. a hidden name (starting with a dot) stays out unless `include_hidden` lets it in;
3. `exclude` leaves a path out (its `!pattern` takes back one of its own earlier patterns);
4. `.ignore` files, the deepest first, then `.gitignore` files, the deepest first: the first
   file with a pattern matching the path decides, by its last matching pattern (so a file's
   `!keep.draft.md` lets in what its `*.draft.md` or a parent folder's file left out).
   `exclude` and the files' lines match as git matches them (`GitPatterns`): the path itself,
   so `!build/` lets in the folder `build`, not what a line above it leaves out inside it.

A folder left out is not entered, so nothing under it is read or counted (as git, which cannot
re-include a file of an ignored folder), except where an anchored `include` pattern names a path
under it (`archive/keep.md`): the walk then enters it and takes only what `include` names.

Only ignore files inside the root are read: a vault inside a larger git repository does not see
the repository's `.gitignore` above it, nor `.git/info/exclude` or a global excludes file.
AutoDoc never reads outside the root; `exclude` says the same thing from the workspace's side.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from autodoc.files.confine import MISSING, read_inside

IGNORE_FILES = (".ignore", ".gitignore")  # ripgrep's order: .ignore beats .gitignore
MAX_IGNORE_FILE_BYTES = 1_000_000
# The group `pathspec` names in a pattern's regex where a folder's trailing slash is matched;
# tests/integration/test_ignore_rules.py's `!build/` case fails if a new `pathspec` renames it.
_FOLDER_MARK = "ps_d"
EXCLUDE = "exclude"  # the source of a verdict by the `exclude` option
HIDDEN = "hidden"  # the source of a verdict on a hidden name (reported apart, as `hidden`)


@dataclass(frozen=True)
class RuleOptions:
    """The workspace options that say which paths are left out: hashable, so the watcher can
    tell whether they changed."""

    exclude: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    include_hidden: tuple[str, ...] = ()
    respect_gitignore: bool = True

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> RuleOptions:
        return cls(
            tuple(options.get("exclude", ())),
            tuple(options.get("include", ())),
            tuple(options.get("include_hidden", ())),
            bool(options.get("respect_gitignore", True)),
        )


@dataclass(frozen=True)
class Verdict:
    """Why a path is left out: the pattern as written, and where it is written."""

    rule: str
    source: str  # EXCLUDE, HIDDEN, or an ignore file's root-relative path


class GitPatterns:
    """Lines in gitignore syntax, each matched as git matches it: against the path itself (a
    folder with a trailing slash), the last matching line deciding. `pathspec`'s own spec also
    matches a folder's pattern against everything under the folder, so there `!build/` lets
    back in `build/b/` that an earlier `**/b` left out, and a deeper file's `!gen/` overrules a
    shallower file's `*.md` for `gen/a.md`; git does neither. The walk never enters a folder
    left out, so the path itself is all that needs matching. A line that is no pattern is
    dropped and listed in `problems` (line number, why): it does not cost the others."""

    def __init__(self, lines: Sequence[str]) -> None:
        from pathspec import GitIgnoreSpec  # a walk's first rules load it (a search has none)
        from pathspec.patterns.gitignore import GitIgnorePatternError

        self.lines = tuple(lines)
        self.problems: list[tuple[int, str]] = []
        compiled: list[tuple[int, bool, re.Pattern[str], bool]] = []
        for index, line in enumerate(self.lines):
            try:
                found = GitIgnoreSpec.from_lines([line]).patterns
            except (GitIgnorePatternError, re.error, ValueError) as exc:
                self.problems.append(
                    (index + 1, f"not a gitignore pattern, ignored: {line!r} ({exc})")
                )
                continue
            pattern = found[0] if found else None
            regex = getattr(pattern, "regex", None)
            if pattern is None or pattern.include is None or regex is None:  # a comment, a blank
                continue
            # A pattern that may end at a folder's slash must end where the path ends; the
            # others (`a/**`, `*`) match a prefix of a path written without the slash, as
            # `a/**` matches what `a` holds and not `a` itself.
            ends = _FOLDER_MARK in regex.groupindex
            if ends:
                regex = re.compile(f"(?:{regex.pattern})\\Z", regex.flags)
            compiled.append((index, pattern.include, regex, ends))
        self._last_first = tuple(reversed(compiled))

    def last_match(self, rel: str, is_dir: bool) -> tuple[bool, int] | None:
        """(left out?, the deciding line's index) for a path; None when no line matches it."""
        folder = rel + "/" if is_dir else rel
        for index, include, regex, ends in self._last_first:
            if regex.search(folder if ends else rel):
                return include, index
        return None


@dataclass(frozen=True)
class _IgnoreFile:
    folder: str  # root-relative, "" for the root: its patterns are relative to it
    source: str
    patterns: GitPatterns

    def match(self, rel: str, is_dir: bool) -> tuple[bool, str] | None:
        """(left out?, the deciding pattern) for a path under this file's folder; None when no
        pattern of the file matches it."""
        got = self.patterns.last_match(rel[len(self.folder) + 1 :] if self.folder else rel, is_dir)
        return None if got is None else (got[0], self.patterns.lines[got[1]])


# The ignore files in force in a folder, in the order they are asked: (.ignore files deepest
# first, .gitignore files deepest first).
Chain = tuple[tuple[_IgnoreFile, ...], tuple[_IgnoreFile, ...]]
NO_CHAIN: Chain = ((), ())


class Rules:
    """The rules of one root, and what they left out. Ignore files are read once per folder
    and kept until `forget` (the watcher calls it when one changes)."""

    def __init__(self, root: str, options: RuleOptions) -> None:
        self.root = root
        self.options = options
        self._exclude = GitPatterns(options.exclude) if options.exclude else None
        self._include = _spec(options.include) if options.include else None
        self._reaching = [_anchored_parts(p) for p in options.include]
        self._chains: dict[str, Chain] = {}
        self.counts: dict[Verdict, list[int]] = {}  # verdict -> [files, folders]
        self.files_read: list[str] = []  # the ignore files found, root-relative
        self.problems: list[tuple[str, str]] = []  # (ignore file, why a line was dropped)

    def forget(self) -> None:
        """Read the ignore files again when next asked (one changed); what was read and found
        wrong in them goes too, so a long-lived watcher's lists do not grow with each change."""
        self._chains.clear()
        self.files_read.clear()
        self.problems.clear()

    # -- one path --------------------------------------------------------------------------

    def included(self, rel: str, is_dir: bool) -> bool:
        return self._include is not None and bool(
            self._include.check_file(rel + "/" if is_dir else rel).include
        )

    def reaches_into(self, folder: str) -> bool:
        """An anchored `include` pattern may name a path under this folder: enter it even when
        it is left out (only what `include` names is taken there)."""
        parts = folder.split("/")
        for pattern in self._reaching:
            if pattern is None:
                continue
            for want, got in zip(pattern, parts, strict=False):
                if want == "**":
                    return True
                if not fnmatch.fnmatchcase(got, want):
                    break
            else:
                if len(pattern) > len(parts):  # its first parts are this folder: more below
                    return True
        return False

    def judge(self, rel: str, is_dir: bool, chain: Chain) -> Verdict | None:
        """Why this path, in a folder that is in, is left out; None when it is in. `chain`:
        the ignore files in force in its folder."""
        if self.included(rel, is_dir):
            return None
        name = rel.rsplit("/", 1)[-1]
        if name.startswith(".") and not any(
            fnmatch.fnmatchcase(rel, p) for p in self.options.include_hidden
        ):
            return Verdict(name, HIDDEN)
        got = self._exclude.last_match(rel, is_dir) if self._exclude is not None else None
        if got is not None and got[0]:
            return Verdict(self.options.exclude[got[1]], EXCLUDE)
        for files in chain:
            for f in files:
                decided = f.match(rel, is_dir)
                if decided is not None:
                    return Verdict(decided[1], f.source) if decided[0] else None
        return None

    def judge_path(self, rel: str, is_dir: bool = False) -> Verdict | None:
        """`judge` for a root-relative path, its folders judged first as the walker meets them
        (a file of a folder left out is out, unless `include` names it). For a folder
        (`is_dir`): None when the walk enters it."""
        parts = rel.split("/")
        chain = self.chain("")
        out: Verdict | None = None
        for i in range(len(parts)):
            prefix, folder = "/".join(parts[: i + 1]), is_dir or i < len(parts) - 1
            if out is not None:
                if self.included(prefix, folder):
                    out = None
                elif not (folder and self.reaches_into(prefix)):
                    return out
            else:
                verdict = self.judge(prefix, folder, chain)
                if verdict is not None:
                    if not (folder and self.reaches_into(prefix)):
                        return verdict
                    out = verdict
            if folder and out is None:
                chain = self.chain(prefix)
        return None

    def count(self, verdict: Verdict, is_dir: bool) -> None:
        self.counts.setdefault(verdict, [0, 0])[is_dir] += 1

    # -- ignore files ----------------------------------------------------------------------

    def chain(self, folder: str, names: Collection[str] | None = None) -> Chain:
        """The ignore files in force in a root-relative folder: its own and its parents'.
        `names`: the folder's entries when the caller listed it (a folder without an ignore
        file costs nothing more); None: look."""
        held = self._chains.get(folder)
        if held is not None:
            return held
        parent = self.chain(posixpath.dirname(folder)) if folder else NO_CHAIN
        own: dict[str, _IgnoreFile] = {}
        if self.options.respect_gitignore:
            for name in IGNORE_FILES:
                if names is None or name in names:
                    found = self._read(folder, name)
                    if found is not None:
                        own[name] = found
        chain = parent
        if own:
            ignores = (own[".ignore"],) if ".ignore" in own else ()
            gitignores = (own[".gitignore"],) if ".gitignore" in own else ()
            chain = (ignores + parent[0], gitignores + parent[1])
        self._chains[folder] = chain
        return chain

    def _read(self, folder: str, name: str) -> _IgnoreFile | None:
        source = f"{folder}/{name}" if folder else name
        try:  # inside the root only: a link out of it is refused, never followed
            data, _ = read_inside(self.root, source, MAX_IGNORE_FILE_BYTES)
        except (OSError, ValueError) as exc:
            if str(exc) != MISSING:
                self.problems.append((source, f"not read: {exc}"))
            return None
        patterns = GitPatterns(data.decode("utf-8-sig", "replace").splitlines())
        self.problems.extend((source, f"line {n}: {why}") for n, why in patterns.problems)
        self.files_read.append(source)
        return _IgnoreFile(folder, source, patterns)

    # -- the report ------------------------------------------------------------------------

    def report(self) -> list[dict[str, Any]]:
        """Each rule that left something out: {rule, source, files, folders}, most first."""
        ranked = sorted(
            ((v, n) for v, n in self.counts.items() if v.source != HIDDEN),
            key=lambda vn: (-(vn[1][0] + vn[1][1]), vn[0].source, vn[0].rule),
        )
        return [
            {"rule": v.rule, "source": v.source, "files": n[0], "folders": n[1]} for v, n in ranked
        ]


def _anchored_parts(pattern: str) -> list[str] | None:
    """An `include` pattern's components when it names a place under the root (a leading
    slash, or one before its last character), else None: it matches at any depth and enters no
    folder left out (`**/keep.md` would enter every one, `.git` too)."""
    body = pattern.strip("/")
    if pattern.startswith("!") or body.startswith("**/"):
        return None
    if not pattern.startswith("/") and "/" not in body:
        return None
    return [p for p in body.split("/") if p]


def _spec(lines: Sequence[str]) -> Any:
    """`include`'s patterns as pathspec's GitIgnoreSpec (loaded with a walk's first rules)."""
    from pathspec import GitIgnoreSpec

    return GitIgnoreSpec.from_lines(lines)
