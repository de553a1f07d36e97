"""The index pipeline: a workspace's files through parse into the store and its indexes."""
