"""Checks per layer: each layer's folder holds its own; shared ones count for the component's layer."""
