"""Contracts at a service's boundaries: the library a service team adds to its own code (docs/service-client.md).

::

    bundle = load_bundle("contracts.bundle.json")          # contractctl export bundle --service NAME --out ...

What each part decides is its module's docstring: ``bundle`` (the file).
"""

from contract_platform.client.bundle import Bundle, load_bundle
from contract_platform.errors import BundleError

__all__ = ["Bundle", "BundleError", "load_bundle"]
