"""One module per algorithm; importing this package registers them all."""

from . import oracle, pretopk, mintopk, kskyband, tma, sma, sap, sao  # noqa: F401
from . import oracle_incomplete, sla, eaa, approx  # noqa: F401
