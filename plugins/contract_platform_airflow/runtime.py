"""What every platform task shares: error mapping at the Airflow edge, run ids, resources.

Bad input (a catalogue that does not load, a conflicting queue, a refused step asked for by hand)
fails the task *without retry*, with a message that says what to fix. A broker or store that is
down raises as usual, so Airflow's retries apply.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import wraps
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from airflow.sdk.exceptions import AirflowFailException

from contract_platform.errors import BrokerUnavailable, CatalogError, ContractPlatformError, StoreError

if TYPE_CHECKING:
    from contract_platform.amqp.types import BrokerConnection
    from contract_platform.store import SqlRegistry

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

TRANSIENT = (BrokerUnavailable, StoreError)


def fail_on_bad_input(func: Callable[P, R]) -> Callable[P, R]:
    """Platform errors that retrying cannot fix become ``AirflowFailException``; transient ones propagate."""

    @wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except TRANSIENT:
            raise
        except CatalogError as exc:
            lines = "\n".join(f"  {p}" for p in exc.problems)
            raise AirflowFailException(f"the catalogue does not load; fix these and push again:\n{lines}") from exc
        except ContractPlatformError as exc:
            raise AirflowFailException(str(exc)) from exc

    return wrapper


def run_id_of(context: Mapping[str, Any] | None) -> str | None:
    if not context:
        return None
    run = context.get("dag_run")
    return getattr(run, "run_id", None) or context.get("run_id")


def run_type_of(context: Mapping[str, Any] | None) -> str:
    """The run's type by value (``"scheduled"``, ``"manual"``, ``"asset_triggered"``, ``"backfill"``), ``""`` if none.

    Inside a real task the dag run's ``run_type`` is the task SDK's ``DagRunType``, a ``str`` enum whose
    ``str()`` is ``'DagRunType.SCHEDULED'``: compare its value, never ``str()`` or ``repr()`` of it.
    """
    run_type = getattr((context or {}).get("dag_run"), "run_type", None)
    value = getattr(run_type, "value", run_type)
    return value if isinstance(value, str) else ""


def actor_of(context: Mapping[str, Any] | None) -> str:
    dag = (context or {}).get("dag")
    return f"dag:{getattr(dag, 'dag_id', 'unknown')}"


@contextmanager
def registry() -> Iterator[SqlRegistry]:
    from contract_platform_airflow.hooks.registry import RegistryHook

    store = RegistryHook().get_conn()
    try:
        yield store
    finally:
        store.close()


@contextmanager
def broker() -> Iterator[BrokerConnection]:
    from contract_platform.amqp.connection import close_quietly
    from contract_platform_airflow.hooks.rabbitmq import RabbitMQHook

    connection = RabbitMQHook().get_conn()
    try:
        yield connection
    finally:
        close_quietly(connection)


def fail_if(problems: list[str], what: str) -> None:
    """End a task red, without retry, when a check found problems a person must fix."""
    if problems:
        shown = "\n".join(f"  - {p}" for p in problems[:40])
        more = f"\n  ... and {len(problems) - 40} more" if len(problems) > 40 else ""
        raise AirflowFailException(f"{what}:\n{shown}{more}")
