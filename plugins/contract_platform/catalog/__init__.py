"""The contract catalogue: typed model and the one loader of ``contracts/``."""

from contract_platform.catalog.loading import load_catalog
from contract_platform.catalog.model import Catalog, Contract, Fixture, Kind, Status

__all__ = ["Catalog", "Contract", "Fixture", "Kind", "Status", "load_catalog"]
