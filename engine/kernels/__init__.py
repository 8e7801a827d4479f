"""Compiled (numba) kernels of the engine: plain functions over numpy arrays."""
