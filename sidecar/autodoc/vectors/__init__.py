"""The vector index: the embedding cache, USearch or Qdrant, nearest neighbours."""
