"""Text into structure: Markdown blocks, documents, chunks, frontmatter schemas, queries."""
