"""The monthly release: pipeline stages, release notes, next month's manifest."""
