"""Long-lived servers: the served folders, the writer thread, the watcher."""
