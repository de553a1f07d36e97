"""Workspace options: defaults, validation, and which ones force a re-chunk.

Every option a user can set lives here, so the dispatcher, the LSP layer and the docs agree on
names, types and bounds.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autodoc.wire.errors import invalid_params
from autodoc.wire.file_rules import rule_patterns
from autodoc.wire.provider_specs import validate_embedding, validate_ranker, validate_store


@dataclass(frozen=True)
class Option:
    default: Any
    kind: type
    low: int | None = None
    high: int | None = None
    rechunk: bool = False  # changing it changes how documents are cut
    rescan: bool = False  # changing it changes which files are found: walk the root again
    doc: str = ""
    check: Callable[[Any], Any] | None = None  # validates and normalises a structured value


def _embedding(value: Any) -> Any:
    if isinstance(value, dict) and "store" in value:  # where the vectors live: not the model's
        rest = validate_embedding({k: v for k, v in value.items() if k != "store"})
        return {**rest, "store": validate_store(value["store"])}
    return validate_embedding(value)


def _schema_path(value: Any) -> Any:
    if not isinstance(value, str) or not value.strip():
        raise invalid_params("schema must be a file path", field="schema", value=value)
    return value.strip()


MAX_HIDDEN_PATTERNS = 64


def _hidden_patterns(value: Any) -> Any:
    """fnmatch patterns of hidden folders or files to index (`.notes`, `*/.drafts`): relative
    to the root, never leading out of it."""
    if not isinstance(value, list) or len(value) > MAX_HIDDEN_PATTERNS:
        raise invalid_params(
            f"include_hidden must be a list of at most {MAX_HIDDEN_PATTERNS} patterns",
            field="include_hidden",
            value=value,
        )
    out = []
    for p in value:
        parts = p.strip().strip("/").split("/") if isinstance(p, str) else [""]
        if not all(parts) or ".." in parts or "." in parts or len(p) > 200:
            raise invalid_params(
                "include_hidden patterns are root-relative paths like '.notes' or '*/.drafts'",
                field="include_hidden",
                value=p,
            )
        out.append("/".join(parts))
    return out


def _new_notes(value: Any) -> Any:
    """Where "Create note" puts a note a wiki link asks for, and the template it starts from:
    `folder` "." (beside the linking note), "/" (the root) or a root-relative folder;
    `template` "" or a root-relative Markdown file (`{{title}}`, `{{date}}`, `{{time}}`)."""
    if not isinstance(value, dict) or set(value) - {"folder", "template"}:
        raise invalid_params("new_notes takes {folder, template}", field="new_notes", value=value)
    out = {**OPTIONS["new_notes"].default, **value}
    for key in ("folder", "template"):
        v = out[key]
        parts = v.strip("/").split("/") if isinstance(v, str) else [".."]
        if not isinstance(v, str) or len(v) > 200 or ".." in parts or "\\" in v:
            raise invalid_params(
                f"new_notes.{key} must be a root-relative path", field="new_notes", value=v
            )
    if out["folder"] == "":
        out["folder"] = "."
    return out


# link_style: each part "auto" (the vault's habit, counted from its links) or a choice.
LINK_STYLE_CHOICES: dict[str, tuple[Any, ...]] = {
    "form": ("auto", "wiki", "markdown"),
    "extension": ("auto", True, False),
    "name": ("auto", "stem", "path"),
    "heading": ("auto", "text", "slug"),
    "alias": ("auto", "target-first", "label-first", "never"),
}


def _link_style(value: Any) -> Any:
    """How completion (and the code actions) write a link: `form`, `extension` (`.md` on the
    target), `name` (a wiki link's note: file name or path), `heading` (its words or slug),
    each "auto" or a choice; `alias`: where a wiki link's label goes."""
    if not isinstance(value, dict) or set(value) - set(LINK_STYLE_CHOICES):
        raise invalid_params(
            f"link_style takes {{{', '.join(LINK_STYLE_CHOICES)}}}", field="link_style", value=value
        )
    out = {**OPTIONS["link_style"].default, **value}
    for key, allowed in LINK_STYLE_CHOICES.items():
        v = out[key]  # `1 == True`: a choice must be the very value, of its type
        if not any(type(v) is type(a) and v == a for a in allowed):
            shown = " | ".join(json.dumps(a) for a in allowed)
            raise invalid_params(f"link_style.{key} is one of {shown}", field="link_style", value=v)
    return out


# links.dialect: how the vault's links read (`links/dialect.py`): auto (its marker files, else
# the reading that resolves its links) or one of these.
LINK_DIALECTS = ("obsidian", "dendron", "markdown")


def _links(value: Any) -> Any:
    """How the vault's links read: `dialect` auto | obsidian | dendron | markdown."""
    if not isinstance(value, dict) or set(value) - {"dialect"}:
        raise invalid_params("links takes {dialect}", field="links", value=value)
    out = {**OPTIONS["links"].default, **value}
    if out["dialect"] not in ("auto", *LINK_DIALECTS):
        shown = " | ".join(("auto", *LINK_DIALECTS))
        raise invalid_params(
            f"links.dialect is one of {shown}", field="links", value=out["dialect"]
        )
    return out


DEFAULT_SCHEMA = "_schema/frontmatter.yaml"  # a workspace's frontmatter schema, root-relative

OPTIONS: dict[str, Option] = {
    "section_tokens": Option(
        350, int, 50, 4000, rechunk=True, doc="target chunk size in estimated tokens"
    ),
    "abstract_chunk": Option(
        True, bool, rechunk=True, doc="add a chunk for a frontmatter `abstract` field"
    ),
    "demote_superseded": Option(
        True, bool, doc="move superseded documents' hits below their successor's"
    ),
    "schema": Option(
        DEFAULT_SCHEMA,
        str,
        doc="frontmatter schema file, relative to the root or absolute",
        check=_schema_path,
    ),
    "include_hidden": Option(
        [],
        list,
        rescan=True,
        doc="hidden folders or files to index, as fnmatch patterns of their root-relative"
        " path ('.notes', '*/.drafts'); others (.git, .obsidian) are skipped and counted",
        check=_hidden_patterns,
    ),
    "exclude": Option(
        [],
        list,
        rescan=True,
        doc="paths to leave out, gitignore patterns relative to the root ('node_modules/',"
        " '*.draft.md', '!keep.draft.md' takes back an earlier one); beats .gitignore/.ignore",
        check=rule_patterns("exclude"),
    ),
    "include": Option(
        [],
        list,
        rescan=True,
        doc="paths to index whatever exclude, .gitignore/.ignore or hidden names say,"
        " gitignore patterns; a folder left out is entered only for an anchored one"
        " ('archive/keep.md')",
        check=rule_patterns("include"),
    ),
    "respect_gitignore": Option(
        True,
        bool,
        rescan=True,
        doc="leave out what the .gitignore and .ignore files inside the root say (nested ones"
        " for their folder, as git); false: only exclude and hidden names",
    ),
    "new_notes": Option(
        {"folder": ".", "template": ""},
        dict,
        doc="where 'Create note' puts a note a link asks for: folder '.' (beside the linking"
        " note), '/' (the root) or a root-relative folder; template: a root-relative file"
        " whose {{title}}, {{date}} and {{time}} are filled in",
        check=_new_notes,
    ),
    "links": Option(
        {"dialect": "auto"},
        dict,
        doc="how the vault's links read: dialect auto|obsidian|dendron|markdown (obsidian:"
        " [[target|label]], shortest paths; dendron: [[label|target]], dotted names,"
        " dendron://vault/note; markdown: GitHub/Foam, a wiki link by file name, path, title or"
        " alias); auto: the vault's marker files (.obsidian, dendron.yml), else its links",
        check=_links,
    ),
    "link_style": Option(
        dict(form="auto", extension="auto", name="auto", heading="auto", alias="auto"),
        dict,
        doc="how completion writes links: form auto|wiki|markdown, extension auto|true|false"
        " (.md on the target), name auto|stem|path (a wiki link's note), heading auto|text|slug,"
        " alias auto|target-first|label-first|never (a wiki link's label); auto follows the"
        " vault's dialect (links.dialect, its .obsidian/app.json) and the links it has",
        check=_link_style,
    ),
    "max_file_mb": Option(20, int, 1, 1024, doc="files larger than this are skipped with a reason"),
    "embedding": Option(
        {"provider": "bundled"},
        dict,
        doc="embedding provider: bundled (default), onnx, openai or none; `store` {kind:"
        " qdrant, url, api_key_env} keeps its vectors and lexical index in Qdrant (doc/scale.md)",
        check=_embedding,
    ),
    "ranker": Option(
        {"provider": "none", "window": 40, "timeout": 5.0},
        dict,
        doc="cross-encoder ranker: none (default), onnx, tei or cohere; window 10..100",
        check=validate_ranker,
    ),
}


def defaults() -> dict[str, Any]:
    return {name: copy.deepcopy(opt.default) for name, opt in OPTIONS.items()}


def validate(changes: Any) -> dict[str, Any]:
    """Check a partial option map; raise -32602 naming the first bad key."""
    if not isinstance(changes, dict):
        raise invalid_params("options must be an object", got=type(changes).__name__)
    clean: dict[str, Any] = {}
    for key, value in changes.items():
        opt = OPTIONS.get(key)
        if opt is None:
            raise invalid_params(
                f"unknown workspace option {key!r}", field=key, known=sorted(OPTIONS)
            )
        if opt.check is not None:
            clean[key] = opt.check(value)
            continue
        # bool is an int subclass: keep the two apart so `true` is never a size.
        if opt.kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise invalid_params(f"{key} must be an integer", field=key, value=value)
        if opt.kind is bool and not isinstance(value, bool):
            raise invalid_params(f"{key} must be true or false", field=key, value=value)
        if (opt.low is not None and value < opt.low) or (opt.high is not None and value > opt.high):
            raise invalid_params(
                f"{key} must be between {opt.low} and {opt.high}",
                field=key,
                value=value,
                min=opt.low,
                max=opt.high,
            )
        clean[key] = value
    return clean


def chunking_fingerprint(options: dict[str, Any]) -> str:
    """Options that change how a document is cut; a document cut under others is re-chunked."""
    return ",".join(f"{k}={options[k]}" for k in sorted(OPTIONS) if OPTIONS[k].rechunk)


def default_db_path() -> Path:
    """`$AUTODOC_DB`, else `$XDG_DATA_HOME/autodoc/autodoc.db` (XDG default ~/.local/share)."""
    env = os.environ.get("AUTODOC_DB")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base).expanduser() / "autodoc" / "autodoc.db"
