"""The platform's one exception tree.

Every error a user can meet is a leaf they can act on; third-party errors (pika, SQLAlchemy,
jsonschema, PyYAML) are mapped once, at the edge that calls them, with ``raise ... from exc``.

::

    ContractPlatformError
    ├── UsageError                  bad command-line arguments or options
    ├── CatalogError                the catalogue does not load (carries every Problem found)
    ├── SchemaError                 a JSON Schema file is unreadable or not a valid schema
    ├── PatternNotEvaluable         a regular expression the platform will not evaluate (lookaround...)
    │   └── PatternInvalid          ... or that is no regular expression at all
    ├── EnvelopeError               an envelope fails validation before it is published
    │   └── ContractViolation       ... refused by a service's guard: reason code, JSON pointer and keyword
    ├── BundleError                 a contract bundle does not load (format version, checksum, missing part)
    ├── MigrationSpecError          a migration.yaml cannot be checked or applied
    ├── MessageNotMigratable        one message cannot be migrated (the bridge parks it with the reason)
    ├── LifecycleError
    │   ├── TransitionRefused       a guard refused a step (carries the reasons)
    │   └── ConcurrentTransition    another run applied a transition first
    ├── StoreError                  the registry store failed (URL never includes a password)
    ├── SnapshotConflict            a recorded contract version's schema changed without a version bump
    ├── BrokerError
    │   ├── BrokerUnavailable       transient: the broker cannot be reached; retry
    │   ├── TopologyConflict        an existing declaration differs from the contract's
    │   ├── PublishRefused          unroutable or nacked: the message was not accepted
    │   ├── QueueMissing            a queue the platform expected does not exist
    │   ├── RecorderQueueInUse      the activity recorder's queue has other arguments and another recorder reads it
    │   └── ManagementUnavailable   the management HTTP API does not answer (the message says how to enable it)
    ├── ArchiveError                an archive path is missing or unreadable
    ├── HousekeepingError           pruning what the platform keeps failed (a folder, or ``airflow db clean``)
    └── SparkJobsMissing            a verb needs the Spark jobs, which are not installed (says how to install them)

``exit_code`` tells the CLI what to return: 2 for bad input, 1 for findings, 3 for an
environment fault (broker or store down).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "ArchiveError",
    "BrokerError",
    "BrokerUnavailable",
    "BundleError",
    "CatalogError",
    "ConcurrentTransition",
    "ContractPlatformError",
    "ContractViolation",
    "EnvelopeError",
    "EventExchangeUnavailable",
    "HousekeepingError",
    "LifecycleError",
    "ManagementUnavailable",
    "MessageNotMigratable",
    "MigrationSpecError",
    "PatternInvalid",
    "PatternNotEvaluable",
    "Problem",
    "PublishRefused",
    "QualityError",
    "QueueMissing",
    "RecorderQueueInUse",
    "SchemaError",
    "SnapshotConflict",
    "SparkJobsMissing",
    "StoreError",
    "TopologyConflict",
    "TransitionRefused",
    "UsageError",
    "markdown_code",
    "markdown_text",
    "printable",
]


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with one file, at one JSON pointer ('' is the whole document)."""

    file: str
    pointer: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}#{self.pointer}" if self.pointer else self.file
        return f"{printable(where)}: {self.message}"


def clipped(text: str, most: int) -> str:
    """``text`` cut to at most ``most`` characters, ending in ``...`` when it was cut: a message stays short
    whatever a producer or a contract put in the value it quotes."""
    return text if len(text) <= most else text[: most - 3] + "..."


def printable(text: str) -> str:
    """``text`` on one line: control characters, lone surrogates and other unprintables as escapes.

    File names and JSON pointers come from the catalogue, so a key may hold a newline; a problem still
    prints as one line a person can read back into the key."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


# Every ASCII character that opens an inline construct in CommonMark or GitHub's tables: a backslash
# before it makes it literal (CommonMark "Backslash escapes"); ``<`` and ``&`` so no raw HTML or entity.
_MARKDOWN_SPECIAL = frozenset("\\`*_[]<>|&~!")
_BACKTICKS = re.compile("`+")


def markdown_text(text: str) -> str:
    """``text`` as literal Markdown on one line: ``printable``, then each special character backslash-escaped.

    Names that other clients chose (queues, connections, message ids) go into reports through this or
    ``markdown_code``: whatever they hold, they render as the characters they are, never as markup."""
    return "".join("\\" + c if c in _MARKDOWN_SPECIAL else c for c in printable(text))


def markdown_code(text: str, *, in_table: bool = False) -> str:
    """``text`` as a Markdown code span on one line, whatever backticks it holds (CommonMark "Code spans").

    The fence is one backtick longer than the longest run inside, padded with a space when the content
    starts or ends with a backtick, or both starts and ends with a space. ``in_table``: ``|`` escaped as GitHub's tables require even
    inside code spans. An empty name has no code span: it is shown as ``(empty)``."""
    content = printable(text)
    if not content:
        return "(empty)"
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(content)), default=0) + 1)
    if content.strip(" ") and ("`" in (content[0], content[-1]) or content[0] == content[-1] == " "):
        content = f" {content} "  # one space each side is stripped again (not from a span of spaces only)
    if in_table:
        content = content.replace("|", "\\|")
    return f"{fence}{content}{fence}"


class ContractPlatformError(Exception):
    """Base of every error the platform raises on purpose."""

    exit_code = 2


class UsageError(ContractPlatformError):
    """A command was called with arguments that cannot work."""


class CatalogError(ContractPlatformError):
    """The catalogue could not be loaded; ``problems`` lists every problem found, not just the first."""

    def __init__(self, problems: list[Problem] | Problem) -> None:
        self.problems = sorted(problems) if isinstance(problems, list) else [problems]
        head = str(self.problems[0]) if self.problems else "catalogue did not load"
        more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        super().__init__(head + more)


class SchemaError(ContractPlatformError):
    """A schema given to the platform is unreadable or invalid."""

    def __init__(self, file: str, pointer: str, message: str) -> None:
        self.problem = Problem(file, pointer, message)
        super().__init__(str(self.problem))


class PatternNotEvaluable(ContractPlatformError, ValueError):
    """A regular expression the platform will not evaluate in linear time: ``reason`` names the construct."""

    def __init__(self, pattern: str, reason: str) -> None:
        self.pattern, self.reason = pattern, reason
        super().__init__(f"the regular expression {clipped(pattern, 60)!r} cannot be evaluated: {reason}")


class PatternInvalid(PatternNotEvaluable):
    """Not a regular expression at all (unbalanced brackets, a quantifier with nothing before it...)."""


class EnvelopeError(ContractPlatformError):
    """An envelope does not satisfy the envelope standard or its contract."""

    def __init__(self, message: str, errors: list[tuple[str, str]] | None = None) -> None:
        self.errors = errors or []
        super().__init__(message)


class ContractViolation(EnvelopeError):
    """An envelope a service's guard refused (``contract_platform.client``), located: ``reason`` is a stable code
    (``PAYLOAD_INVALID``...), ``pointer`` the JSON pointer into the envelope and ``keyword`` the schema keyword
    that failed (``required``, ``pattern``...; empty when no schema keyword is at fault)."""

    def __init__(
        self,
        message: str,
        *,
        reason: str,
        pointer: str,
        keyword: str,
        message_type: str | None = None,
        errors: list[tuple[str, str]] | None = None,
    ) -> None:
        self.reason, self.pointer, self.keyword, self.message_type = reason, pointer, keyword, message_type
        super().__init__(message, errors or [(pointer, keyword)])


class BundleError(ContractPlatformError):
    """A contract bundle cannot be used (not JSON, another format version, a bad checksum, a missing part): the
    message says what, where in the file (a JSON pointer), and how to export a good one."""


class MigrationSpecError(ContractPlatformError):
    """A migration spec is invalid or cannot be applied (one message that cannot be migrated: MessageNotMigratable)."""

    def __init__(self, problems: list[Problem] | Problem) -> None:
        self.problems = problems if isinstance(problems, list) else [problems]
        head = str(self.problems[0]) if self.problems else "migration spec is invalid"
        more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        super().__init__(head + more)


class MessageNotMigratable(ContractPlatformError):
    """One message cannot be migrated by a spec that is itself fine (e.g. an amount with too many decimals).

    ``pointer`` locates the value in the source envelope (``/payload/amount``); ``reason`` says which rule the
    message breaks and never quotes a value of the message, and neither does ``str()``: both go into the headers
    of a parked or dead-lettered message and into evidence. ``value`` is a short rendering of the value at fault
    (or None), for a person checking a file of their own: ``described`` adds it to the reason.
    """

    exit_code = 1

    def __init__(self, reason: str, pointer: str, *, value: str | None = None) -> None:
        self.reason = reason
        self.pointer = pointer
        self.value = value
        super().__init__(f"{pointer}: {reason}" if pointer else reason)

    @property
    def described(self) -> str:
        """The reason with the value at fault: for a local file's author, never for a header or evidence."""
        return self.reason if self.value is None else f"{self.reason} (the value: {self.value})"


class LifecycleError(ContractPlatformError):
    """A lifecycle step could not be applied."""

    exit_code = 1


class TransitionRefused(LifecycleError):
    """A guard refused a transition; ``reasons`` says why, each a sentence a user can act on."""

    def __init__(self, message_type: str, from_status: str, to_status: str, reasons: list[str]) -> None:
        self.message_type = message_type
        self.from_status = from_status
        self.to_status = to_status
        self.reasons = reasons
        super().__init__(f"{message_type}: {from_status} -> {to_status} refused: " + "; ".join(reasons))


class ConcurrentTransition(LifecycleError):
    """Another run changed the effective status first (optimistic concurrency)."""


class StoreError(ContractPlatformError):
    """The registry store failed. Messages name the database, never its password."""

    exit_code = 3


class SnapshotConflict(ContractPlatformError):
    """A contract version's schema differs from the snapshot the registry recorded for that version."""

    exit_code = 1

    def __init__(self, message_type: str, contract_version: str, recorded: str, offered: str) -> None:
        self.message_type = message_type
        self.contract_version = contract_version
        super().__init__(
            f"{message_type} {contract_version}: the payload schema differs from the one recorded for this version "
            f"(fingerprint {recorded[:12]}, now {offered[:12]}); a released version never changes: "
            "bump `version` in contract.yaml"
        )


class BrokerError(ContractPlatformError):
    """A RabbitMQ operation failed. Messages name the broker and queue, never the password."""

    exit_code = 3


class BrokerUnavailable(BrokerError):
    """The broker could not be reached or dropped the connection: transient, worth a retry."""


class BrokerOutOfResources(BrokerUnavailable):
    """A broker node has run out of file handles, sockets, Erlang processes, memory or disk (its management API
    says so): retrying alone does not help; the message says which limit to raise and how."""


class TopologyConflict(BrokerError):
    """An existing exchange or queue was declared with other arguments than the contract's."""

    exit_code = 1

    def __init__(self, name: str, existing: dict[str, object] | None, wanted: dict[str, object]) -> None:
        self.name = name
        self.existing = existing
        self.wanted = wanted
        super().__init__(
            f"{name} already exists with other arguments: existing {existing!r}, contract wants {wanted!r}; "
            "it was left as it is — change the contract or migrate the queue by hand"
        )


class PublishRefused(BrokerError):
    """The broker did not accept a message (unroutable with mandatory, or nacked)."""

    exit_code = 1


class QueueMissing(BrokerError):
    """A queue the platform expected is not on the broker."""

    exit_code = 1


class RecorderQueueInUse(BrokerError):
    """The activity recorder's queue exists with other arguments (an older recorder's, or other buffer limits) and
    another recorder consumes it: it cannot be replaced under that recorder (the message says what to stop)."""


class ManagementUnavailable(BrokerError):
    """The RabbitMQ management HTTP API, which the retirement audit requires, does not answer or refuses us."""


class EventExchangeUnavailable(BrokerError):
    """RabbitMQ's event exchange (plugin ``rabbitmq_event_exchange``), which continuous reader evidence needs, is off."""


class ArchiveError(ContractPlatformError):
    """An archive path is missing or cannot be read."""


class HousekeepingError(ContractPlatformError):
    """Pruning what the platform keeps failed: a folder that cannot be emptied, or ``airflow db clean``."""

    exit_code = 3


class SparkJobsMissing(ContractPlatformError):
    """A Spark-backed verb found no Spark jobs to run (entry points ``contract_platform.spark``): not installed."""


class QualityError(ContractPlatformError):
    """Great Expectations could not open its folder or run a suite (its own error, mapped at the edge)."""
