"""Measured memory: the real size of the structures an algorithm holds.

``deep_size`` walks an object graph once, counting every distinct Python object by
``sys.getsizeof`` and every numpy buffer at its full capacity (a view counts its base once).
It is what :meth:`engine.Algorithm.measured_bytes` reports unless an algorithm overrides it.
"""

from __future__ import annotations

import sys
import types

import numpy as np

_ATOMS = (str, bytes, bytearray, int, float, complex, bool, type(None))
_SKIP = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType)


def deep_size(root: object, exclude: tuple = ()) -> int:
    """Bytes held by ``root`` and everything it references (``O(objects)``).

    Objects in ``exclude`` (and everything only they reference) are not counted; small
    integers and other interned singletons cost nothing since they are never allocated.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.zeros(1000)
    >>> deep_size([a, a[10:]]) >= 8000
    True
    """
    seen = {id(item) for item in exclude}
    stack = [root]
    total = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _SKIP) or obj is None or isinstance(obj, bool):
            continue
        seen.add(id(obj))
        if isinstance(obj, int) and -5 <= obj <= 256:
            continue
        if isinstance(obj, np.ndarray):
            owner = obj
            while isinstance(owner.base, np.ndarray):
                owner = owner.base
            total += sys.getsizeof(obj) if owner is not obj else 0
            if id(owner) not in seen or owner is obj:
                seen.add(id(owner))
                total += sys.getsizeof(owner) if owner.flags.owndata else owner.nbytes
            continue
        total += sys.getsizeof(obj)
        if isinstance(obj, _ATOMS) or isinstance(obj, np.generic):
            continue
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend(obj)
        else:
            attributes = getattr(obj, "__dict__", None)
            if attributes is not None:
                seen.add(id(attributes))
                total += sys.getsizeof(attributes)
                stack.extend(attributes.values())
            for cls in type(obj).__mro__:
                for slot in getattr(cls, "__slots__", ()):
                    if slot not in ("__dict__", "__weakref__") and hasattr(obj, slot):
                        stack.append(getattr(obj, slot))
    return total
