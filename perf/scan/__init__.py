"""The scan gate's measurements: the whole gate, freshness lookups, finding dedupe."""
