"""The benchmark harness every model shares (each hands it its ModelSpec: registry.py): timing, gates, reports."""
