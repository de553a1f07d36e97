"""Models: embedders (text to vectors) and rankers (cross-encoders)."""
