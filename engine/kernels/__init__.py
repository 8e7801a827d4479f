"""Compiled kernels: the per-object and per-slide structural work of the algorithms.

Each kernel is a plain numba ``@njit(cache=True)`` function over numpy arrays and does one step
of its paper; the algorithm modules (``engine.algorithms``) keep the settings, the JSON state
and the order of the steps.  The compiled code is cached on disk beside the sources (or under
``NUMBA_CACHE_DIR``), so a process compiles a kernel once per machine, not once per start;
``NUMBA_DISABLE_JIT=1`` runs the same functions as plain Python (slow, but debuggable).

numba's cache notices a change to a kernel's own module, not to a kernel it calls from another
module (``select.py`` is called by ``mintopk.py`` and ``pretopk.py``, ``fmsketch.py`` by ``eaa.py``
and ``approx.py``): after editing one, delete
``engine/kernels/__pycache__`` (or the ``NUMBA_CACHE_DIR``) to recompile its callers.
"""
