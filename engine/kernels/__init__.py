"""Compiled kernels (numba ``@njit(cache=True)``): the per-object and per-slide work of the algorithms."""
