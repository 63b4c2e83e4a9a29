"""The envelope standard: validation, and AMQP properties mirrored from metadata."""

from contract_platform.envelope.properties import HEADER_FIELDS, amqp_properties, parse_timestamp
from contract_platform.envelope.validation import EnvelopeValidator, SchemaIssue

__all__ = ["HEADER_FIELDS", "EnvelopeValidator", "SchemaIssue", "amqp_properties", "parse_timestamp"]
