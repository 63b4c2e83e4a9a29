"""The contracts app the plugin mounts at ``/contracts`` on the Airflow api-server.

Errors become answers a person can act on, never a 500 page: no token -> 401 on ``/api`` or a
redirect to the Airflow login for pages; a catalogue that does not load or a store that is down
-> 503 naming the problem; an unknown messageType -> 404; bad query parameters -> 422.
``/openapi.json`` and ``/docs`` need the same login as the pages (``require_reader``): the API's
description is no one else's business either.
"""

from __future__ import annotations

import logging
from pathlib import Path

from fastapi import Depends, FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException

from contract_platform.errors import CatalogError, ContractPlatformError
from contract_platform_airflow.ui import api, pages
from contract_platform_airflow.ui.auth import LoginRequired, login_url, require_reader
from contract_platform_airflow.ui.deps import Urls

__all__ = ["create_app"]

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"


def _is_api(request: Request) -> bool:
    root = str(request.scope.get("root_path", ""))
    path = request.url.path
    relative = path[len(root) :] if root and path.startswith(root) else path
    return relative == "/api" or relative.startswith(("/api/", "/openapi.json", "/docs"))


def _error(request: Request, code: int, detail: str, headers: dict[str, str] | None = None) -> Response:
    if _is_api(request):
        return JSONResponse({"detail": detail}, status_code=code, headers=headers)
    context = {"urls": Urls(request), "user_name": None, "code": code, "detail": detail}
    return pages.templates.TemplateResponse(request, "error.html", context, status_code=code, headers=headers)


async def _login_required(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, LoginRequired)
    if _is_api(request):
        return _error(request, 401, f"{exc.detail}: log in to Airflow", {"WWW-Authenticate": "Bearer"})
    return RedirectResponse(login_url(request, Urls(request).airflow), status_code=303)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return _error(request, exc.status_code, str(exc.detail), getattr(exc, "headers", None))


async def _invalid_request(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    if _is_api(request):
        return JSONResponse({"detail": jsonable_encoder(exc.errors())}, status_code=422)
    problems = "; ".join(f"{'.'.join(map(str, e.get('loc', ())))}: {e.get('msg')}" for e in exc.errors())
    return _error(request, 422, f"bad request: {problems}")


async def _platform_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, CatalogError):
        problems = "; ".join(str(p) for p in exc.problems[:10])
        detail = f"the contract catalogue does not load: {problems}"
    else:
        detail = str(exc)
    log.warning("contracts page unavailable: %s", detail)
    return _error(request, 503, detail)


def create_app() -> FastAPI:
    app = FastAPI(
        title="Contract Lifecycle Platform",
        summary="Message contracts: declared vs effective status, evidence, history (Airflow plugin).",
        version="1",
        openapi_url=None,  # served below, behind the login
        docs_url=None,
        redoc_url=None,
    )
    _add_docs(app)
    app.include_router(pages.router)
    app.include_router(api.router)
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    app.add_exception_handler(LoginRequired, _login_required)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(ContractPlatformError, _platform_error)
    return app


def _add_docs(app: FastAPI) -> None:
    """``/openapi.json`` and ``/docs`` (Swagger UI), for logged-in readers only."""

    @app.get("/openapi.json", include_in_schema=False, dependencies=[Depends(require_reader)])
    async def openapi() -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.get("/docs", include_in_schema=False, dependencies=[Depends(require_reader)])
    async def docs(request: Request) -> HTMLResponse:
        root = str(request.scope.get("root_path", "")).rstrip("/")
        return get_swagger_ui_html(openapi_url=f"{root}/openapi.json", title=f"{app.title} - API")
