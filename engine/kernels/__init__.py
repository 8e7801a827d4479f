"""Compiled kernels (numba): the per-object and per-slide steps of the algorithms, over numpy arrays."""
