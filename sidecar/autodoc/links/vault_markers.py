"""Which link dialect a workspace is in, decided in this order: the workspace option
`links.dialect`; the vault's own marker files in its root (Dendron's `dendron.yml` /
`.dendron.yml` with its vaults, Obsidian's `.obsidian/` with `app.json`'s `useMarkdownLinks`
and `newLinkFormat`); the reading that resolves more of the vault's own piped wiki links
(`[[a|b]]`: which side names a note); else plain Markdown.

Marker files are read inside the root only, the one confined way, and never more than
`MARKER_BYTES`; one that cannot be read or parsed counts as absent.
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from autodoc.files.confine import open_inside
from autodoc.links.dialect import Dialect, DialectName, dialect_name

MARKER_BYTES = 256 * 1024
DENDRON_FILES = ("dendron.yml", ".dendron.yml")
OBSIDIAN_SETTINGS = ".obsidian/app.json"
# A reading chosen from the links wins by this much: at least this many more links resolve,
# and twice as many.
LEAD_LINKS = 5


def decide(root: Path, option: DialectName | str, stored: Dialect) -> Dialect:
    """The dialect a full index run reads the workspace in (`option`: the workspace option's
    `links.dialect`, "auto" or a name; `stored`: what the last run decided)."""
    found = from_markers(root)
    if option != "auto":
        name = dialect_name(option)
        base = found if found is not None and found.name == name else Dialect(name)
        return Dialect(name, "option", base.vaults, base.markdown_links, base.link_format)
    if found is not None:
        return found
    if stored.source == "links":  # decided from the links once: kept until a marker says
        return stored
    return Dialect()


def from_markers(root: Path) -> Dialect | None:
    """The dialect the vault's marker files say, None without any."""
    for name in DENDRON_FILES:
        text = _read(root, name)
        if text is not None:
            return Dialect("dendron", name, _dendron_vaults(text))
    settings = _read(root, OBSIDIAN_SETTINGS)
    if settings is not None or os.path.isdir(root / ".obsidian"):
        app = _json_object(settings)
        form = app.get("newLinkFormat")
        return Dialect(
            "obsidian",
            OBSIDIAN_SETTINGS if settings is not None else ".obsidian",
            markdown_links=app.get("useMarkdownLinks") is True,
            link_format=form if form in ("shortest", "relative", "absolute") else "shortest",
        )
    return None


def from_links(pairs: Iterable[tuple[str, str, str]], resolves: Callable[[list[str]], set[str]],
               dialect: Dialect) -> Dialect | None:  # fmt: skip
    """Dendron, when reading the vault's piped wiki links label first resolves clearly more
    of them than target first (`pairs`: (source, the part before `|`, the part after);
    `resolves`: which of these keys name a note). None when the links do not say."""
    target_first, label_first = [], []
    dendron = Dialect("dendron", "links")
    for source, before, after in pairs:
        target_first.append(dialect.key(source, "wiki", before.split("#", 1)[0])[0])
        label_first.append(dendron.key(source, "wiki", after.split("#", 1)[0])[0])
    known = resolves(sorted(set(target_first) | set(label_first)))
    first = sum(k in known for k in target_first)
    last = sum(k in known for k in label_first)
    return dendron if last >= 2 * first and last - first >= LEAD_LINKS else None


def _read(root: Path, rel: str) -> str | None:
    """A marker file's text, None when it is not there, not a file, too large or not UTF-8."""
    try:
        with open_inside(root, rel) as (fd, _):
            data = os.read(fd, MARKER_BYTES + 1)
    except (OSError, ValueError):
        return None
    if len(data) > MARKER_BYTES:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _json_object(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _dendron_vaults(text: str) -> tuple[tuple[str, str], ...]:
    """(folder, name) of each local vault `dendron.yml` names (`workspace.vaults`, or the older
    top-level `vaults`); a vault's name defaults to its folder's."""
    import yaml  # only a Dendron workspace's run reads YAML here

    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError:
        return ()
    if not isinstance(config, dict):
        return ()
    workspace = config.get("workspace")
    vaults = workspace.get("vaults") if isinstance(workspace, dict) else None
    if not isinstance(vaults, list):
        vaults = config.get("vaults")
    out = []
    for vault in vaults if isinstance(vaults, list) else []:
        if not isinstance(vault, dict) or not isinstance(vault.get("fsPath"), str):
            continue
        folder = posixpath.normpath(vault["fsPath"].replace("\\", "/")).strip("/")
        if folder.startswith(".."):
            continue  # outside the root: never read, never served
        name = vault.get("name")
        out.append((folder, name if isinstance(name, str) and name else posixpath.basename(folder)))
    return tuple(out)
