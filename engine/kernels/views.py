"""Array views for compiled kernels that hold no reference count."""

from __future__ import annotations

import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload


def unowned(array: np.ndarray) -> np.ndarray:
    """``array`` itself, compiled as a view that holds no reference count: passing it to an
    inlined step, or binding it, costs no atomic count (numba counts every array binding).
    Only for the arguments of one kernel call, which the caller keeps alive; never returned."""
    return array


@intrinsic
def _without_meminfo(typingctx, array):
    def codegen(context, builder, signature, args):
        view = cgutils.create_struct_proxy(array)(context, builder, value=args[0])
        view.meminfo = cgutils.get_null_value(view.meminfo.type)
        view.parent = cgutils.get_null_value(view.parent.type)
        return view._getvalue()
    return array(array), codegen


@overload(unowned)
def _unowned(array):
    if isinstance(array, types.Array):
        return lambda array: _without_meminfo(array)
