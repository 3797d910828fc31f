"""Building a flavor's images layer by layer with buildx bake."""
