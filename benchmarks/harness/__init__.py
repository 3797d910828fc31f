"""The benchmark harness every model shares (each hands it its ModelSpec: model_registry.py): timing, gates, reports."""
