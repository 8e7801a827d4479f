"""One module per algorithm; importing this package registers them all."""

from . import oracle, pretopk, mintopk, kskyband, tma, sma, sap  # noqa: F401
