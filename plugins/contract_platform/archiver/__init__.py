"""Topic archiver: drains ``archive.<exchange>`` queues into JSON Lines files (docs/design.md#archive-record).

::

    <root>/<exchange>/date=YYYY-MM-DD/<host>-<pid>-<process start>-<sequence>.jsonl   one record per delivery

- **Ack after fsync.** A batch closes at ``batch_size`` deliveries or ``batch_ms`` after its first one;
  then the file holding it is flushed and ``os.fsync``-ed (its directories were fsynced when it was
  created) and only then is the batch acknowledged with ``basic_ack(last, multiple=True)``. Each queue
  has its own channel, so ``multiple`` never reaches another queue's deliveries.
- **At least once.** Whatever was written but not acknowledged when a process died is delivered again,
  marked ``redelivered: true``, and written again: duplicates are counted by validation, never removed
  here. A process killed mid-write can leave a partial last line: ``repair_partial_files`` (run at
  start) truncates it back to the last newline.
- **No shared files.** Names carry host, pid, process start and a sequence and are created exclusively,
  so a restart never appends to a file a crashed process was writing; each open file is ``flock``-ed,
  so a repair never touches a file a live archiver holds. Files rotate by size and by date.
- **JSON-safe headers.** bytes -> UTF-8 text, or ``{"$base64": ...}`` when not UTF-8; datetime -> ISO 8601
  UTC with ``Z``; Decimal -> string; non-finite float -> string; tables and arrays recursively.
- **No delivery stops it.** A delivery whose properties cannot be written as JSON (headers nested deeper
  than ``limits.depth_limit()``, values JSON cannot hold, anything ``to_record`` or the encoder refuses)
  is archived as a *fallback record* (``archive_record.fallback_record``): its headers are left out of ``properties``,
  the AMQP property bytes are kept in ``propertiesBase64``, ``archiveError`` says why, and the body is
  kept as in any record. It is acknowledged after fsync like any other, so the deliveries behind it flow.

Modes: ``drain`` stops once every queue has been empty for ``idle_timeout`` seconds; ``follow`` runs
until SIGTERM/SIGINT (or ``stop()``) and reconnects with backoff when it opened its own connection.
Both finish and acknowledge the current batch when stopped. ``contractctl archive``
(``contract_platform.cli.archive``) runs one archiver and prints its report.

The package, by concern: ``records`` (encoding a delivery), ``files`` (partition files and their repair),
``config`` (the configuration and the run report) and ``service`` (the ``Archiver``).
"""

from __future__ import annotations

from contract_platform.archiver.config import MODES, ArchiverConfig, ArchiveRunReport
from contract_platform.archiver.files import repair_partial_files
from contract_platform.archiver.records import ORJSON_MAX_DEPTH, encode_record
from contract_platform.archiver.service import Archiver

__all__ = [
    "ArchiveRunReport",
    "Archiver",
    "ArchiverConfig",
    "MODES",
    "ORJSON_MAX_DEPTH",
    "encode_record",
    "repair_partial_files",
]
