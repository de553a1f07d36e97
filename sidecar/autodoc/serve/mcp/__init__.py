"""`autodoc mcp`: the Model Context Protocol front end (the official SDK)."""
