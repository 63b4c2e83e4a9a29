"""The server-rendered pages: catalogue, contract, DAG run, DAG task (Jinja2 templates, one CSS file)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, TypedDict
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, HTTPException, Query, Request, status
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from contract_platform.catalog.model import Catalog
from contract_platform.errors import printable
from contract_platform.retirement.report import considered_queues
from contract_platform_airflow.ui import charts, views
from contract_platform_airflow.ui.api import PER_PAGE, CatalogueQuery, Order
from contract_platform_airflow.ui.auth import can_read_dag_runs, require_reader
from contract_platform_airflow.ui.deps import CatalogDep, RegistryDep, Urls, UrlsDep, known_contract
from contract_platform_airflow.ui.markdown import markdown_to_html

__all__ = ["router", "templates"]

TEMPLATES = Path(__file__).parent / "templates"
templates = Jinja2Templates(directory=str(TEMPLATES))
templates.env.filters["percent"] = lambda v: "—" if v is None else charts.percent(float(v))
templates.env.filters["when"] = lambda v: _when(v)
templates.env.filters["pretty_json"] = lambda v: _pretty_json(v)
templates.env.filters["considered_queues"] = considered_queues  # a retirement audit's queues, how found, what held
templates.env.filters["count"] = lambda n: f"{int(n):,}"  # 2000 -> 2,000
templates.env.filters["printable"] = printable  # on one line, control and bidi characters as escapes


def _pretty_json(value: object) -> str:
    """Indented JSON, readable letters kept; bidirectional and other unprintable characters as ``\\uXXXX``
    escapes (still the same JSON), since figures quote names other clients chose."""
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    if text.replace("\n", "").isprintable():
        return text
    return "".join(c if c.isprintable() or c == "\n" else json.dumps(c)[1:-1] for c in text)


def _when(value: object) -> str:
    """``2026-11-22T18:22:14+00:00`` -> ``2026-11-22 18:22``; anything unparsable as it is."""
    if not value:
        return "—"
    try:
        return datetime.fromisoformat(str(value)).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return str(value)


router = APIRouter(tags=["pages"], dependencies=[Depends(require_reader)], default_response_class=HTMLResponse)

User = Annotated[Any, Depends(require_reader)]


def render(request: Request, name: str, urls: Urls, user: Any, code: int = 200, **context: Any) -> HTMLResponse:
    context |= {"urls": urls, "user_name": user.get_name() if user is not None else None}
    return templates.TemplateResponse(request, name, context, status_code=code)


class _Options(TypedDict):
    domains: list[str]
    owners: list[str]
    statuses: list[str]


def _options(catalog: Catalog) -> _Options:
    return {
        "domains": sorted({c.domain for c in catalog}),
        "owners": sorted({c.owner.team for c in catalog}),
        "statuses": list(views.status_values()),
    }


@router.get("/", summary="The catalogue page")
def catalogue_page(
    request: Request,
    catalog: CatalogDep,
    registry: RegistryDep,
    urls: UrlsDep,
    user: User,
    query: Annotated[CatalogueQuery, Depends()],
) -> HTMLResponse:
    rows = views.catalogue(catalog, registry, summaries=False)
    page = query.paged(rows)
    return render(
        request,
        "catalogue.html",
        urls,
        user,
        rows=page.rows,
        page=page,
        total=len(rows),
        query=query,
        sort_keys=list(views.SortKey),
        descending=query.order is Order.DESC,
        mismatches=sum(1 for row in rows if not row.in_sync),
        sort_url=lambda key: _sort_url(urls, query, key),
        page_url=lambda number: _url(urls, query.params(page=number)),
        findings_help=views.FINDINGS_HELP,
        per_page_default=PER_PAGE,
        findings_of=views.findings,
        **_options(catalog),
    )


def _url(urls: Urls, params: dict[str, str]) -> str:
    return f"{urls.base}/?{urlencode(params)}" if params else f"{urls.base}/"


def _sort_url(urls: Urls, query: CatalogueQuery, key: str) -> str:
    """The catalogue sorted by ``key``, keeping the filters, from its first page; a second click reverses the order."""
    same = query.sort.value == key
    order = (Order.ASC if query.order is Order.DESC else Order.DESC) if same else Order.ASC
    return _url(urls, {**query.params(sort=key, order=order.value, page=None), "sort": key, "order": order.value})


@router.get("/c/{message_type}", summary="One contract's page")
def contract_page(
    request: Request,
    message_type: str,
    catalog: CatalogDep,
    registry: RegistryDep,
    urls: UrlsDep,
    user: User,
    run: Annotated[str | None, Query(max_length=250, description="highlight what this run id did")] = None,
) -> HTMLResponse:
    known_contract(catalog, message_type)
    view = views.contract_view(catalog, registry, message_type)
    target = view.contract.validation.invalid_rate_target
    consumers = charts.line_chart(view.consumers, title="Consumers per version", y_label="consumers", integer=True)
    rates = charts.line_chart(
        [view.invalid_rates],
        title="Invalid rate (archive validation)",
        y_label="invalid rate",
        y_format=charts.percent,
        reference=(target, f"target {charts.percent(target)}"),
    )
    readers = charts.reader_timeline(view.readers) if view.readers is not None else None
    recorder = _recorder_health(registry) if view.readers is not None else None
    history = [
        {**t, "dagId": views.dag_of(t["actor"]), "runUrl": _run_url(urls, t["actor"], t["runId"])}
        for t in reversed(view.status["history"])
    ]
    return render(
        request,
        "contract.html",
        urls,
        user,
        view=view,
        contract=view.contract,
        row=view.row,
        history=history,
        consumers_chart=consumers,
        rates_chart=rates,
        readers_timeline=readers,
        recorder=recorder,
        docs_html=markdown_to_html(view.docs_markdown, base=urls.base),
        evidence_dags=views.EVIDENCE_DAGS,
        highlight_run=run,
    )


def _recorder_health(registry: Any) -> Any:
    """The broker activity recorder's health now (``retirement.readers.recorder_health``, what
    ``contractctl record-activity --status`` says), shown beside the reader timeline it feeds."""
    from datetime import UTC, datetime

    from contract_platform.retirement.readers import recorder_health
    from contract_platform.settings import recorder_heartbeat

    return recorder_health(registry, heartbeat=recorder_heartbeat(), now=datetime.now(UTC))


def _run_url(urls: Urls, actor: str, run_id: str | None) -> str | None:
    dag_id = views.dag_of(actor)
    return urls.dag_run(dag_id, run_id) if dag_id and run_id else None


@router.get("/runs/{dag_id}/{run_id}", summary="The contracts one DAG run acted on", response_model=None)
def run_page(
    request: Request, dag_id: str, run_id: str, catalog: CatalogDep, registry: RegistryDep, urls: UrlsDep, user: User
) -> Response:
    if not can_read_dag_runs(user, dag_id):
        raise HTTPException(status.HTTP_403_FORBIDDEN, f"you may not read the runs of DAG {dag_id!r}")
    activity = views.run_activity(catalog, registry, dag_id, run_id)
    if len(activity.contracts) == 1 and request.query_params.get("list") is None:
        page = urls.contract(activity.contracts[0].message_type)
        return RedirectResponse(f"{page}?{urlencode({'run': run_id})}#history", status_code=303)
    return render(request, "run.html", urls, user, runs=[activity], dag_id=dag_id, task_id=None)


@router.get("/dags/{dag_id}/tasks/{task_id}", summary="Contracts recent runs of a DAG acted on")
def task_page(
    request: Request,
    dag_id: str,
    task_id: str,
    catalog: CatalogDep,
    registry: RegistryDep,
    urls: UrlsDep,
    user: User,
    page: Annotated[int, Query(ge=1, le=1000, description="page of runs, newest first")] = 1,
) -> HTMLResponse:
    if not can_read_dag_runs(user, dag_id):
        raise HTTPException(status.HTTP_403_FORBIDDEN, f"you may not read the runs of DAG {dag_id!r}")
    size = views.RUNS_PER_PAGE
    runs = views.dag_activity(catalog, registry, dag_id, limit=size + 1, offset=(page - 1) * size)
    more = len(runs) > size
    return render(
        request, "run.html", urls, user, runs=runs[:size], dag_id=dag_id, task_id=task_id, page=page, more=more
    )
