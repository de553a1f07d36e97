"""The lexical index: the analyzer and fields, on Tantivy or as Qdrant sparse vectors."""
