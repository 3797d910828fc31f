"""Checks of the paddle layer (PaddlePaddle, its build and its GPU paths)."""
