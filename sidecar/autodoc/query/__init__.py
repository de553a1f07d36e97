"""The query pipeline: options, stages, fusion, confidence, snippets, the answer; find, related."""
