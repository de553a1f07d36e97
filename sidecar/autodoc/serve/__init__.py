"""Front ends: the dispatcher, the host of long-lived servers, CLI, HTTP, LSP, MCP."""
