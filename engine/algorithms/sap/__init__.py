"""The SAP family: ``sap-equal``, ``sap-dynamic`` and ``sap`` (enhanced dynamic partitions)."""

from . import equal  # noqa: F401
from . import dynamic  # noqa: F401,E402
from . import enhanced  # noqa: F401,E402
