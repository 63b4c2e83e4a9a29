"""Exports of the catalogue into other ecosystems' formats (pure: Catalog -> document).

- ``asyncapi.export_asyncapi``: an AsyncAPI 3.0.0 document (``contractctl export asyncapi``).
"""

from contract_platform.export.asyncapi import ASYNCAPI_VERSION, export_asyncapi

__all__ = ["ASYNCAPI_VERSION", "export_asyncapi"]
