"""The project's own promises: CI runs exactly the README's test command."""

from __future__ import annotations

import re

from .conftest import REPO


def readme_command(marker: str) -> str:
    text = (REPO / "README.md").read_text()
    m = re.search(rf"<!-- {marker} -->\s*```(?:sh|bash)?\n(.+?)\n```", text, re.S)
    assert m, f"README.md has no {marker} block"
    return m.group(1).strip()


def test_ci_runs_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text()
    assert "readme_block test-command" in ci or readme_command("test-command") in ci


def test_readme_setup_is_two_commands():
    assert len(readme_command("setup-command").splitlines()) == 1
    assert len(readme_command("test-command").splitlines()) == 1
