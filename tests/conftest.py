"""Shared fixtures: a fresh store per test, vault builders, and the shared corpora."""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from pathlib import Path
from typing import NoReturn

import pytest

from autodoc.engine import Engine
from autodoc.serve.dispatcher import Dispatcher

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("AUTODOC_SHARED", REPO.parent / "shared"))
CORPORA = SHARED / "corpora"
EXAMPLE_VAULT = REPO / "examples" / "vault"


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


# The suite's lanes, one folder each (doc/testing.md): `pytest -m unit` is the inner loop.
LANES = ("unit", "integration", "editors")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with its lane, the folder it lives in."""
    for item in items:
        lane = item.path.parent.name
        if lane in LANES:
            item.add_marker(lane)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store" / "autodoc.db"


@pytest.fixture
def engine(db_path: Path):
    eng = Engine(db_path)
    yield eng
    eng.close()


@pytest.fixture
def rpc(engine: Engine) -> Dispatcher:
    return Dispatcher(engine)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    return root


# Groups of tests that must run, not skip, in this run (the README's test command names the
# tools it installs): AUTODOC_REQUIRE=nvim,commonmark,luacheck[,corpus]. Where the shared
# folder is present (as beside CI's clone) the corpus group is required too: a corpus missing
# from it is a broken checkout, not a reason to skip.
REQUIRED = {g.strip() for g in os.environ.get("AUTODOC_REQUIRE", "").split(",") if g.strip()}
if SHARED.is_dir():
    REQUIRED.add("corpus")


def missing(group: str, reason: str) -> NoReturn:
    """Skip a test whose tool or data is absent, saying what is missing; fail instead where
    the run requires the group, so a whole group cannot go silently unrun."""
    if group in REQUIRED:
        pytest.fail(f"{reason} (AUTODOC_REQUIRE has {group!r})", pytrace=False)
    pytest.skip(reason)


def tool(name: str) -> str | None:
    """An executable beside the running interpreter (a virtual environment's bin/, even when
    it is not on PATH), else on PATH."""
    return shutil.which(name, path=os.path.dirname(sys.executable)) or shutil.which(name)


def corpus(name: str) -> Path:
    path = CORPORA / name
    if not path.is_dir():
        missing("corpus", f"shared corpus {path} is absent (set AUTODOC_SHARED to shared/)")
    return path


# Reliability tests run their full counts with AUTODOC_LONG=1 (doc/reliability.md).
LONG = os.environ.get("AUTODOC_LONG") == "1"


def long_count(short: int, long: int) -> int:
    return long if LONG else short


def fake_openai_engine(db: Path, root: Path, url: str, name: str = "v", dim: int | None = None):
    """An engine with workspace `name` on `root`, embedding through the local OpenAI-protocol
    server at `url` (tests/fake_openai.py)."""
    engine = Engine(db)
    engine.workspaces.workspace_add(name, str(root))
    spec = {"provider": "openai", "base_url": url, "model": "fake"}
    if dim is not None:
        spec["dimensions"] = dim
    engine.workspaces.workspace_configure(name, {"embedding": spec})
    return engine


# The stage sets every "never stale" / "never mixes generations" claim is checked over.
STAGE_SETS = [["lexical"], ["semantic"], ["lexical", "semantic"]]


def snippet_in(snippet: str, text: str) -> bool:
    """A hit's snippet (whitespace collapsed, without its ellipses) is in `text`: the span it
    points at holds what it shows."""
    return snippet.strip("…") in " ".join(text.split())


def lexical_workspace(rpc: Dispatcher, root: Path, name: str = "v") -> dict:
    """Add `root` as workspace `name` without embeddings and index it; the run's summary."""
    rpc.call("workspace.add", [name, str(root)])
    rpc.call("workspace.configure", [name, {"embedding": "none"}])
    return rpc.call("index.run", [name])


def corpus_workspace(tmp_path_factory, name: str, options: dict) -> tuple[Dispatcher, Path]:
    """A dispatcher over a fresh store holding shared corpus `name` as workspace `name`, with
    `options`, indexed. The caller closes `rpc.engine`."""
    root = corpus(name)
    rpc = Dispatcher(Engine(tmp_path_factory.mktemp(name) / "autodoc.db"))
    rpc.call("workspace.add", [name, str(root)])
    rpc.call("workspace.configure", [name, options])
    return rpc, root


@pytest.fixture(scope="module")
def embedded_sample(tmp_path_factory) -> tuple[Path, Path]:
    """(root, store) of the sample vault indexed with the bundled model into a store of its
    own: a model is configured, so a command that loads none proves it was left alone (the
    start-up and import tests)."""
    base = tmp_path_factory.mktemp("startup")
    root = base / "vault"
    shutil.copytree(EXAMPLE_VAULT, root)
    db = base / "store" / "autodoc.db"
    rpc = Dispatcher(Engine(db))
    rpc.call("workspace.add", ["vault", str(root)])
    summary = rpc.call("index.run", ["vault"])
    assert summary["embedding"]["coverage"]["embedded"] == summary["chunks"]
    rpc.engine.close()
    return root, db
