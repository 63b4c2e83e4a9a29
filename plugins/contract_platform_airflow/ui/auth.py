"""Who may read the contracts pages: a logged-in Airflow user the auth manager lets read the UI.

Airflow mounts plugin apps without authentication, so every data route of this app depends on
``require_reader``. The token is the one the Airflow UI already holds: ``Authorization: Bearer``
first, else the ``_token`` cookie (or the user ``JWTRefreshMiddleware`` refreshed from it), validated
by Airflow's own ``get_user`` against the configured auth manager. The read permission is the
auth manager's ``is_authorized_view(WEBSITE)``; run pages also need read access to that DAG's runs.

Without a valid token a ``LoginRequired`` is raised: the app answers 401 on ``/api/...`` and
redirects HTML pages to the auth manager's login page, coming back afterwards.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

__all__ = ["LoginRequired", "can_read_dag_runs", "login_url", "require_reader"]

bearer = HTTPBearer(auto_error=False, description="The JWT of an Airflow user (POST /auth/token).")


class LoginRequired(Exception):
    """No valid Airflow token came with the request."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def _auth_manager() -> Any:
    from airflow.api_fastapi.app import create_auth_manager

    return create_auth_manager()  # the api-server's singleton; created on first use elsewhere (tests)


async def require_reader(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)] = None
) -> Any:
    """The authenticated Airflow user, allowed to read; else ``LoginRequired`` (401) or 403."""
    from airflow.api_fastapi.auth.managers.models.resource_details import AccessView
    from airflow.api_fastapi.core_api.security import get_user

    manager = _auth_manager()
    try:
        user = await get_user(request, None, credentials)
    except HTTPException as exc:  # 401 no token / expired, 403 invalid or revoked: all "log in again"
        raise LoginRequired(str(exc.detail)) from exc
    if not manager.is_authorized_view(access_view=AccessView.WEBSITE, user=user):
        raise HTTPException(status.HTTP_403_FORBIDDEN, f"user {user.get_name()!r} may not read the Airflow UI")
    request.state.contracts_user = user
    return user


def can_read_dag_runs(user: Any, dag_id: str) -> bool:
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails

    return bool(
        _auth_manager().is_authorized_dag(
            method="GET", access_entity=DagAccessEntity.RUN, details=DagDetails(id=dag_id), user=user
        )
    )


def login_url(request: Request, airflow_root: str) -> str:
    """The auth manager's login page, asking to come back to ``request``'s URL."""
    target = _auth_manager().get_url_login(next_url=str(request.url))
    return target if target.startswith(("http://", "https://")) else f"{airflow_root}{target}"
