"""API keys of remote providers (an embedding or ranking service, a Qdrant server): read from
the environment or the OS keyring when a request needs one, never from a config file, never
logged.
"""

from __future__ import annotations

import os


def api_key(env: str | None, service: str = "autodoc") -> str | None:
    """From the environment, else the OS keyring; never from a config file."""
    if env and os.environ.get(env):
        return os.environ[env]
    try:
        import keyring  # optional: `pip install 'autodoc-search[keyring]'`
    except ImportError:
        return None
    try:
        return keyring.get_password(service, env or "api_key")
    except Exception:  # a locked or absent keyring is the same as no key
        return None
