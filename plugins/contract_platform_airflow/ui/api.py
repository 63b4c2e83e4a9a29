"""``/contracts/api/...``: the same data as the pages, as JSON (documented at ``/contracts/openapi.json``)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Path, Query, status

from contract_platform.evidence import EvidenceKind
from contract_platform_airflow.ui import models, views
from contract_platform_airflow.ui.auth import can_read_dag_runs, require_reader
from contract_platform_airflow.ui.deps import CatalogDep, RegistryDep, Urls, UrlsDep, known_contract

__all__ = ["PER_PAGE", "CatalogueQuery", "contract_detail", "router"]

PER_PAGE, MAX_PER_PAGE = 50, 500  # rows per page of the catalogue: the default, the most one request may ask

ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": models.ErrorOut, "description": "No valid Airflow token (Bearer header or _token cookie)."},
    403: {"model": models.ErrorOut, "description": "The user may not read this."},
    503: {"model": models.ErrorOut, "description": "The catalogue does not load or the registry store is down."},
}
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"model": models.ErrorOut, "description": "Unknown messageType."}}

router = APIRouter(prefix="/api", tags=["api"], dependencies=[Depends(require_reader)], responses=ERRORS)

MessageType = Annotated[
    str, Path(description="A messageType of the catalogue", max_length=200, examples=["billing.invoice-issued.v1"])
]


class Order(StrEnum):
    ASC = "asc"
    DESC = "desc"


class StatusFilter(StrEnum):
    PROPOSED = "proposed"
    EXPERIMENTAL = "experimental"
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    DEPRECATED = "deprecated"
    RETIRED = "retired"


class CatalogueQuery:
    """Filters, search and sort of the catalogue, shared by the page and the API (bad values: 422)."""

    def __init__(
        self,
        domain: Annotated[str | None, Query(max_length=100, description="e.g. billing")] = None,
        status: Annotated[
            StatusFilter | Literal[""] | None, Query(description="declared or effective status; empty: any")
        ] = None,
        owner: Annotated[str | None, Query(max_length=100, description="owning team")] = None,
        q: Annotated[str | None, Query(max_length=200, description="text in messageType, description, owner")] = None,
        findings: Annotated[bool, Query(description=views.FINDINGS_HELP)] = False,
        sort: Annotated[views.SortKey, Query()] = views.SortKey.MESSAGE_TYPE,
        order: Annotated[Order, Query()] = Order.ASC,
        page: Annotated[int, Query(ge=1, le=100_000, description="from 1; past the last page: the last page")] = 1,
        per_page: Annotated[int, Query(ge=1, le=MAX_PER_PAGE, description="rows per page")] = PER_PAGE,
    ) -> None:
        # An HTML form sends empty fields: empty means "any", like leaving the parameter out.
        self.domain, self.owner, self.q = domain or None, owner or None, q or None
        self.status: StatusFilter | None = status or None
        self.findings = findings
        self.sort, self.order = sort, order
        self.page, self.per_page = page, per_page

    def params(self, **changed: object) -> dict[str, str]:
        """The query string of this view, defaults left out; ``changed`` replaces some (None drops one)."""
        values: dict[str, object] = {
            "q": self.q,
            "domain": self.domain,
            "status": self.status.value if self.status else None,
            "owner": self.owner,
            "findings": "true" if self.findings else None,
            "sort": self.sort.value,
            "order": self.order.value,
            "page": self.page,
            "per_page": self.per_page,
        }
        values |= changed
        defaults = {"sort": views.SortKey.MESSAGE_TYPE.value, "order": Order.ASC.value, "page": 1, "per_page": PER_PAGE}
        return {k: str(v) for k, v in values.items() if v not in (None, "") and defaults.get(k) != v}

    def paged(self, rows: list[views.CatalogueRow]) -> views.Page:
        """The page asked for of the filtered, sorted ``rows``."""
        return views.page_of(self.apply(rows), self.page, self.per_page)

    def apply(self, rows: list[views.CatalogueRow]) -> list[views.CatalogueRow]:
        kept = views.filter_rows(
            rows,
            domain=self.domain,
            status=str(self.status) if self.status else None,
            owner=self.owner,
            query=self.q,
            open_findings=self.findings,
        )
        return views.sort_rows(kept, self.sort, descending=self.order is Order.DESC)


@router.get(
    "/contracts", response_model=models.CatalogueOut, summary="Every contract version, filtered, sorted, one page"
)
def list_contracts(
    catalog: CatalogDep, registry: RegistryDep, urls: UrlsDep, query: Annotated[CatalogueQuery, Depends()]
) -> models.CatalogueOut:
    rows = views.catalogue(catalog, registry, summaries=False)
    page = query.paged(rows)
    return models.CatalogueOut(
        total=len(rows),
        matching=page.matching,
        page=page.number,
        per_page=page.per_page,
        pages=page.pages,
        contracts=[models.ContractSummaryOut.of(row, urls.base) for row in page.rows],
    )


@router.get(
    "/contracts/{message_type}",
    response_model=models.ContractDetailOut,
    responses=NOT_FOUND,
    summary="One contract version: statuses, history, evidence, series",
)
def get_contract(
    message_type: MessageType, catalog: CatalogDep, registry: RegistryDep, urls: UrlsDep
) -> models.ContractDetailOut:
    known_contract(catalog, message_type)
    return contract_detail(views.contract_view(catalog, registry, message_type), urls)


@router.get(
    "/contracts/{message_type}/evidence",
    response_model=models.EvidenceListOut,
    responses=NOT_FOUND,
    summary="Evidence of one contract, newest first",
)
def list_evidence(
    message_type: MessageType,
    catalog: CatalogDep,
    registry: RegistryDep,
    kind: Annotated[EvidenceKind | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> models.EvidenceListOut:
    known_contract(catalog, message_type)
    records = registry.evidence(message_type, kind, limit=limit)
    return models.EvidenceListOut(
        message_type=message_type,
        evidence=[views.evidence_item(r) for r in records],
    )


@router.get("/runs/{dag_id}/{run_id}", response_model=models.RunOut, summary="The contracts one DAG run acted on")
def get_run(
    dag_id: Annotated[str, Path(max_length=250, examples=["contract_change"])],
    run_id: Annotated[str, Path(max_length=250, examples=["manual__2026-11-20T10:00:00+00:00"])],
    catalog: CatalogDep,
    registry: RegistryDep,
    urls: UrlsDep,
    user: Annotated[Any, Depends(require_reader)],
) -> models.RunOut:
    if not can_read_dag_runs(user, dag_id):
        raise HTTPException(status.HTTP_403_FORBIDDEN, f"you may not read the runs of DAG {dag_id!r}")
    return run_out(views.run_activity(catalog, registry, dag_id, run_id), urls)


def run_out(activity: views.RunActivity, urls: Urls) -> models.RunOut:
    return models.RunOut(
        dag_id=activity.dag_id,
        run_id=activity.run_id,
        run_url=urls.dag_run(activity.dag_id, activity.run_id),
        contracts=[
            models.RunContractOut.model_validate({**dict(touch), "page": urls.contract(touch.message_type)})
            for touch in activity.contracts
        ],
    )


def contract_detail(view: views.ContractView, urls: Urls) -> models.ContractDetailOut:
    contract, status_ = view.contract, view.status
    summary = models.ContractSummaryOut.of(view.row, urls.base)
    history = []
    for t in status_["history"]:
        dag_id = views.dag_of(t["actor"])
        run_url = urls.dag_run(dag_id, t["runId"]) if dag_id and t["runId"] else None
        history.append(
            models.TransitionOut(
                at=t["at"],
                from_status=t["from"],
                to_status=t["to"],
                actor=t["actor"],
                run_id=t["runId"],
                reason=t["reason"],
                dag_id=dag_id,
                run_url=run_url,
            )
        )
    return models.ContractDetailOut(
        **summary.model_dump(by_alias=False),
        description=contract.description,
        exchange=contract.transport.exchange,
        routing_key=contract.transport.routing_key,
        compatibility_policy=contract.compatibility_policy,
        superseded_by=contract.superseded_by,
        sunset=contract.sunset.isoformat() if contract.sunset else None,
        holds_in_force=list(view.holds),
        consumers=[{"service": c.service, "queue": c.queue} for c in contract.consumers],
        fields=[models.FieldOut(**row.to_dict()) for row in view.fields],
        fixtures=list(view.fixtures),
        history=history,
        refusals=[
            models.RefusalOut(at=r["at"], from_status=r["from"], to_status=r["to"], reasons=r["reasons"])
            for r in status_["refusals"]
        ],
        latest_evidence={
            kind: item
            for kind, latest in status_["evidence"].items()
            if (item := views.latest_item(kind, latest)) is not None
        },
        consumers_over_time=list(view.consumers),
        invalid_rate_over_time=view.invalid_rates,
        migrations=[models.MigrationOut.model_validate(m) for m in view.migrations],
        replay=[
            models.ReplayOut.model_validate({**dict(r), "run_url": _replay_run_url(urls, r.run_id)})
            for r in view.replays
        ],
        readers=view.readers,
        retired_traffic=view.retired_traffic,
        runtime=models.RuntimeOut.of(view.runtime),
    )


def _replay_run_url(urls: Urls, run_id: str | None) -> str | None:
    return urls.dag_run(views.EVIDENCE_DAGS[EvidenceKind.REPLAY], run_id) if run_id else None
