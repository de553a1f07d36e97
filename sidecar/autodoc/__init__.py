"""AutoDoc: hybrid search over a Markdown knowledge base."""

__version__ = "0.1.0"
