"""One module per algorithm; importing this package registers them all."""

from . import oracle, pretopk, mintopk, kskyband, tma, sma, sao  # noqa: F401
