"""ngc-paddle: build and validation suite for monthly PaddlePaddle containers."""

__version__ = "0.1.0"
