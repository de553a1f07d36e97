"""Every dispatcher method as the custom request `autodoc/<method>`: the same params, results
and error codes as `autodoc --call`. Registered by name before the engine opens (a request that
arrives first waits for it)."""

from __future__ import annotations

from typing import Any

from autodoc.serve import method_table
from autodoc.serve.lsp.lsp_server import AutodocServer


def setup(server: AutodocServer) -> None:
    def method_handler(method: str):
        async def handler(ls: AutodocServer, params: Any) -> Any:
            return await ls.call(method, params)

        handler.__name__ = f"autodoc_{method.replace('.', '_')}"
        return handler

    for method in method_table.METHODS:
        server.feature(f"autodoc/{method.name}")(method_handler(method.name))
