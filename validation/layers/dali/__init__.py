"""Checks of the dali layer (NVIDIA DALI)."""
