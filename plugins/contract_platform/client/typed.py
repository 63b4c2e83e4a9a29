"""Generated message types in the client: the typed view of an envelope the guard has judged.

``contractctl export models --lang python`` writes one Pydantic envelope class per contract version, with
``MESSAGE_TYPE`` on the class (``export.python_models``). The client knows such a class by that attribute and
Pydantic's two methods, never by importing the generated code:

- ``GuardedConsumer.on(InvoiceIssuedV2, handler)``: the handler reads ``InvoiceIssuedV2.MESSAGE_TYPE``, and the
  envelope the guard accepted (migrated on read, fallbacks applied) is decoded into the class
  (``Message.body``). The guard runs first; a decode the type refuses is the handler's failure.
- ``GuardedPublisher.publish(instance)``: the instance is written as JSON as it was set (field names as the
  contract spells them, nothing the caller left unset, no defaults added), then checked by the guard like any
  envelope.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol, runtime_checkable

from contract_platform.errors import UsageError

__all__ = ["GeneratedEnvelope", "envelope_of", "is_generated_type", "registration_of"]


@runtime_checkable
class GeneratedEnvelope(Protocol):
    """What a generated envelope class offers the client (a Pydantic v2 model with the contract's constants)."""

    MESSAGE_TYPE: ClassVar[str]

    @classmethod
    def model_validate(cls, obj: Any) -> Any: ...

    def model_dump(self, *, mode: str, by_alias: bool, exclude_unset: bool) -> dict[str, Any]: ...


def is_generated_type(kind: object) -> bool:
    """Whether ``kind`` is a generated envelope class (not an instance, not a name)."""
    return (
        isinstance(kind, type)
        and isinstance(getattr(kind, "MESSAGE_TYPE", None), str)
        and callable(getattr(kind, "model_validate", None))
    )


def registration_of(
    kind: str | type, decode: Callable[[dict[str, Any]], Any] | None
) -> tuple[str, Callable[[dict[str, Any]], Any] | None]:
    """(messageType, decode) of what ``on`` was given: a name with an optional decode, or a generated class."""
    if isinstance(kind, str):
        return kind, decode
    if not is_generated_type(kind):
        raise UsageError(
            f"on({kind!r}): pass a messageType or a class from `contractctl export models --lang python` "
            "(it carries MESSAGE_TYPE)"
        )
    if decode is not None:
        raise UsageError(f"on({kind.__name__}): a generated type decodes itself; leave decode= out")
    model: Any = kind
    return str(model.MESSAGE_TYPE), model.model_validate


def envelope_of(message: Mapping[str, Any] | GeneratedEnvelope) -> Mapping[str, Any]:
    """The envelope to check and send: a mapping as it is, a generated instance as JSON data as it was set."""
    if isinstance(message, Mapping):
        return message
    if not is_generated_type(type(message)):
        raise UsageError(
            f"publish({type(message).__name__}): pass an envelope (a mapping) or an instance of a type from "
            "`contractctl export models --lang python`"
        )
    return message.model_dump(mode="json", by_alias=True, exclude_unset=True)
