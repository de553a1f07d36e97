"""The LSP server's features, one module per group (esbonio's layout). Each module has
`setup(server)`, which registers its handlers on an `AutodocServer`; a feature knows the server's
type and nothing of the others, and reaches the index only through the host's dispatcher."""

from __future__ import annotations

from autodoc.serve.lsp.features import (
    code_actions,
    completion_provider,
    custom_requests,
    diagnostics,
    editor_links,
    folders,
    rename_requests,
    session,
    symbols,
)
from autodoc.serve.lsp.lsp_server import AutodocServer

# In the order they register.
FEATURES = (custom_requests, session, folders, symbols, diagnostics, editor_links,
            code_actions, rename_requests, completion_provider)  # fmt: skip


def setup_all(server: AutodocServer) -> None:
    """Register every feature's handlers on `server`."""
    for feature in FEATURES:
        feature.setup(server)
