"""The answers pages as a FastAPI app: the Airflow plugin (``plugins/rsp_answers.py``) mounts it
under ``/rsp`` of Airflow's API server, and a nav entry of the Airflow UI shows it.

- ``/`` every registered query the user may read, each with its latest windows and their
  answers, the quality check of each window's run (linking its Data Docs page), the lineage
  of each result and what the store quarantined of its input streams;
- ``/query/{dag_id}`` one query, with more windows (``?windows=N``);
- ``/lineage?frame=IRI`` what ``rsp provenance IRI`` prints, for a result frame;
- ``/quarantine/{id}`` one rejected part with its text, as ``rsp quarantine ID`` shows it;
- ``/docs/{path}`` the project's Data Docs site, read only.

Not ``from __future__ import annotations``: FastAPI reads the routes' annotations, which name
the access dependency of the app being made. Who may see what is the caller's to say: ``create_app(access)`` takes a FastAPI dependency
that authenticates the request (raising 401 or 403) and returns what the user may read, as a
predicate on DAG ids (``None``: DAG runs in general). Airflow does not authenticate a plugin's
app (a mounted app inherits none of the API's dependencies), so the plugin passes one built on
Airflow's auth manager (``airflow_access``). Pages are rendered server-side by Jinja2 with
autoescape on, and need nothing from the network.
"""

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import quote

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, Response
from jinja2 import Environment, PackageLoader, select_autoescape
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from rsp_jobs import settings
from rsp_jobs.errors import InputError
from rsp_jobs.times import datetime_lexical

if TYPE_CHECKING:  # the registry compiles queries: imported when a page is asked for
    from rsp_jobs.orchestrate.registry import RegisteredQuery

MayRead = Callable[[str | None], bool]
Access = Callable[..., Any]  # a FastAPI dependency that returns a MayRead
MOST_WINDOWS = 100


def anyone(request: Request) -> MayRead:
    """Access for a page served outside Airflow (tests, a local look): everything."""
    return lambda dag_id: True


def create_app(
    access: Access = anyone,
    store_url: Callable[[], str | None] = lambda: None,
    home: Callable[[], Path] = settings.home_dir,
) -> FastAPI:
    """The app; ``store_url()`` names the frame store (None: the store's default) and
    ``home()`` the project home whose Data Docs are served, each asked per request."""
    app = FastAPI(title="RSP answers", docs_url=None, redoc_url=None, openapi_url=None)
    templates = Environment(
        loader=PackageLoader("rsp_jobs.ui", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    templates.filters["iso"] = datetime_lexical
    templates.filters["urlpath"] = quote
    Reader = Annotated[MayRead, Depends(access)]

    def page(request: Request, name: str, status: int = 200, **values) -> HTMLResponse:
        base = request.scope.get("root_path", "").rstrip("/")
        body = templates.get_template(name).render(base=base, **values)
        return HTMLResponse(body, status_code=status)

    def engine() -> Engine:
        from rsp_jobs.store import db

        return db.engine(store_url())

    def docs_site() -> Path:
        from rsp_jobs.quality.validate import docs_site

        return docs_site(home())

    @app.get("/", response_class=HTMLResponse)
    def index(request: Request, may_read: Reader) -> HTMLResponse:
        queries, errors = _registered()
        shown = [q for q in queries if may_read(q.dag_id)]
        # a file that cannot become a DAG belongs to no DAG a user could be allowed to read
        return _answers_page(request, shown, errors if may_read(None) else {}, 3, title="Answers")

    @app.get("/query/{dag_id}", response_class=HTMLResponse)
    def one_query(
        request: Request,
        dag_id: str,
        may_read: Reader,
        windows: Annotated[int, Query(ge=1, le=MOST_WINDOWS)] = 20,
    ) -> HTMLResponse:
        query = _query(dag_id, may_read)
        return _answers_page(request, [query], {}, windows, title=dag_id)

    def _answers_page(request, queries, errors, windows, title) -> HTMLResponse:
        from rsp_jobs.ui.answers import query_answers

        try:
            store = engine()
            shown = [query_answers(store, q, docs_site(), windows) for q in queries]
        except DBAPIError as exc:
            return page(request, "problem.html", 503, title=title, problem=_store_problem(exc))
        return page(
            request, "answers.html", title=title, queries=shown, errors=errors, windows=windows
        )

    @app.get("/lineage", response_class=HTMLResponse)
    def lineage(
        request: Request, may_read: Reader, frame: Annotated[str, Query(max_length=2000)]
    ) -> HTMLResponse:
        from rsp_jobs.store.lineage import lineage, stored_iri, summary

        query = _owner(frame)
        if query is None or not may_read(query.dag_id):
            raise HTTPException(404, "not a result frame of a query you may read")
        try:
            store = engine()
            iri = stored_iri(store, frame)
            steps = lineage(store, iri)
        except InputError as exc:
            return page(request, "problem.html", 404, title="Lineage", problem=str(exc))
        except DBAPIError as exc:
            return page(request, "problem.html", 503, title="Lineage", problem=_store_problem(exc))
        derived = sorted({source for step in steps for source in step.derived.get(iri, ())})
        return page(
            request,
            "lineage.html",
            title="Lineage",
            frame=iri,
            query=query,
            lines=summary(steps),
            derived=derived,
        )

    @app.get("/quarantine/{part_id}", response_class=HTMLResponse)
    def quarantined_part(request: Request, part_id: int, may_read: Reader) -> HTMLResponse:
        from rsp_jobs.store.quarantine import quarantined_part

        try:
            part = quarantined_part(engine(), part_id)
        except InputError as exc:
            return page(request, "problem.html", 404, title="Quarantine", problem=str(exc))
        except DBAPIError as exc:
            return page(
                request, "problem.html", 503, title="Quarantine", problem=_store_problem(exc)
            )
        readers = [q for q in _registered()[0] if part.stream in q.streams]
        allowed = any(may_read(q.dag_id) for q in readers) if readers else may_read(None)
        if not allowed:
            raise HTTPException(404, "no rejected part of a stream you may read")
        return page(request, "quarantined.html", title=f"Rejected part {part.id}", part=part)

    @app.get("/docs/{path:path}")
    def data_docs(path: str, may_read: Reader) -> Response:
        if not may_read(None):
            raise HTTPException(403, "Forbidden")
        found = _within(docs_site(), path or "index.html")
        if found is None:
            raise HTTPException(404, "no such page in the Data Docs")
        return FileResponse(found)

    return app


def _within(root: Path, path: str) -> Path | None:
    """The file ``path`` names under ``root``, or None: nothing outside ``root`` is served,
    whether by ``..``, an absolute path or a symbolic link that leads out; a folder is its
    ``index.html``."""
    if "\x00" in path:
        return None
    try:
        base = root.resolve(strict=True)
        found = (base / path.lstrip("/")).resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if found.is_dir():
        found = found / "index.html"
    if not found.is_relative_to(base) or not found.is_file():
        return None
    return found


def _store_problem(exc: DBAPIError) -> str:
    reason = " ".join(str(exc.orig).split("\n")[0].split()) if exc.orig else type(exc).__name__
    if "no such table" in reason or "does not exist" in reason:
        return "The frame store holds no results yet (no run has stored any)."
    return f"The frame store cannot be read: {reason}"


def _query(dag_id: str, may_read: MayRead) -> "RegisteredQuery":
    found = next((q for q in _registered()[0] if q.dag_id == dag_id), None)
    if found is None or not may_read(dag_id):
        raise HTTPException(404, f"no registered query {dag_id!r} you may read")
    return found


def _owner(frame: str) -> "RegisteredQuery | None":
    """The registered query whose output stream ``frame`` is a frame of."""
    return next(
        (q for q in _registered()[0] if frame.startswith(f"{q.output_stream}/frame/")), None
    )


def _registered() -> tuple[list["RegisteredQuery"], dict]:
    """The registered queries (``registry.discover``), loaded again only when a file under the
    queries folder changes: compiling them all for every page would cost the API server a
    second of CPU."""
    from rsp_jobs.orchestrate.registry import queries_dir

    root = queries_dir()
    return _discovered(root, _version(root))


def _version(root: Path) -> tuple:
    return tuple(sorted((str(p), p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()))


@functools.lru_cache(maxsize=2)
def _discovered(root: Path, _version: tuple) -> tuple[list["RegisteredQuery"], dict]:
    from rsp_jobs.orchestrate.registry import discover

    return discover(root)
