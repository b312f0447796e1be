"""The /knowledge family of the AgentOS API: contents in, passages out, per user.

A request names its base with ``knowledge_id`` (a base's id, as ``/config`` lists them) or gets
the deployment's default base (``KNOWLEDGE_DEFAULT_BASE``, shared, created on first use).
``db_id`` is accepted when it is this server's one database. Under user isolation a caller adds
contents as their own, reads and searches their own and the shared ones, and changes and
deletes only their own: another user's content is a 404, as a missing one is. An anonymous guest
(``ANONYMOUS_ACCESS=guests``) is one such user, ``GUEST_OWNER``: shared contents, which every
signed-in user's search reads, are written only by an admin (or an open server).
"""
from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.exceptions import ParseError, UnsupportedMediaType

from jobs.services.jobs import QueueFull
from core.api.errors import BadRequest, NotFound, TooManyRequests, invalid
from core.api.params import Page, choice, envelope, integer, page
from core.api.parsers import load_json
from core.api.schema import ErrorOut, ValidationErrorOut, query_param
from core.api.views import AgentOSView, FormView, database_id
from sessions.api.inputs import json_body

from ..embedders import EmbedderError
from ..models import Content, KnowledgeBase, SourceType
from ..readers import READERS
from ..rerankers import NO_RERANKER, default_reranker_id
from ..services import (
    ContentInputError,
    SearchError,
    base_get_for_user,
    base_get_or_create,
    content_delete,
    content_delete_all,
    content_get_for_user,
    content_insert,
    content_list_for_user,
    content_refresh,
    content_status_for_user,
    content_update,
    knowledge_config,
    knowledge_search,
)
from ..services.config import vector_db_id
from ..services.search import MAX_LIMIT, SEARCH_TYPES
from ..sources import SourceError, SourceNotFound, source_file, source_get, source_listing, sources
from .serializers import (
    ContentOut,
    ContentStatusOut,
    KnowledgeConfigOut,
    PaginatedContentOut,
    PaginatedSearchOut,
    RemoteContentIn,
    SearchIn,
    SourceFilesOut,
    SourceOut,
    UpdateContentIn,
    UploadContentIn,
    render_content,
)

TAGS = ["Knowledge"]
DB_ID = query_param("db_id", "Database id (this server has one: its id from /config)")
KNOWLEDGE_ID = query_param("knowledge_id", "Knowledge base id (from /config's knowledge instances); the default base if omitted")
CONTENT_ID_PATH = OpenApiParameter("content_id", OpenApiTypes.STR, OpenApiParameter.PATH)
KNOWLEDGE_ID_PATH = OpenApiParameter("knowledge_id", OpenApiTypes.STR, OpenApiParameter.PATH)
SOURCE_ID_PATH = OpenApiParameter("source_id", OpenApiTypes.STR, OpenApiParameter.PATH)
ERRORS = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: ValidationErrorOut}
SORT_FIELDS = ("created_at", "updated_at", "name", "size", "status")
# max_results when a search does not say (Agno's Knowledge default).
DEFAULT_MAX_RESULTS = 10


class KnowledgeAPIView(AgentOSView):
    scope_family = "knowledge"

    def handle_exception(self, exc: Exception) -> Any:
        if isinstance(exc, Content.DoesNotExist):
            exc = NotFound(f"Content not found: {self.kwargs.get('content_id', '')}")
        elif isinstance(exc, KnowledgeBase.DoesNotExist):
            exc = NotFound("Knowledge base not found")
        elif isinstance(exc, SourceNotFound):
            exc = NotFound(str(exc))
        elif isinstance(exc, (SourceError, EmbedderError)):
            exc = BadRequest(str(exc))
        elif isinstance(exc, QueueFull):
            exc = TooManyRequests(str(exc), headers={"Retry-After": "5"})
        return super().handle_exception(exc)

    # --- the caller and the base ---------------------------------------------------------------

    @property
    def requested_user_id(self) -> str | None:
        """The ``user_id`` a caller may name (a query parameter, or a form field of a write), as on
        AgentOS's other routes: an admin or an open server acts for that user, a guest for a user
        id nobody signs in as; an isolated caller's own id always wins (``core.auth.Principal``)."""
        value = self.request.query_params.get("user_id")
        content_type = self.request.content_type or ""
        if not value and content_type.startswith(("multipart/form-data", "application/x-www-form-urlencoded")):
            try:
                value = self.request.data.get("user_id")
            except (UnsupportedMediaType, ParseError):  # a route that takes no form (refresh)
                value = None
        return value if isinstance(value, str) and value else None

    @property
    def reader(self) -> Any:
        """Whose contents this caller reads: theirs and the shared ones (an admin or an open
        server: everyone's, or the named user's; a guest: the guests' or the named user's, and the
        shared ones)."""
        requested = self.requested_user_id
        return self.principal.private_owner(requested) if self.principal.guest else self.principal.read_scope(requested)

    @property
    def owner(self) -> str | None:
        """Whose name new contents are written under: the caller's, or the user a guest or an admin
        names (a guest naming none: ``GUEST_OWNER``); None, shared with every user, only for an
        admin or an open server naming none."""
        return self.principal.private_owner(self.requested_user_id)

    @property
    def writer(self) -> Any:
        """Whose contents this caller may change or delete: under isolation only their own, and a
        guest only the guests' or the named user's (never the shared ones); an admin or an open
        server: everyone's, or the named user's."""
        return self.reader

    def base(self, params: Any, knowledge_id: str | None = None) -> KnowledgeBase:
        db_id = params.get("db_id") or None
        if db_id and db_id != database_id():
            raise NotFound(f"Knowledge instance with db_id '{db_id}' not found")
        knowledge_id = knowledge_id or params.get("knowledge_id") or None
        if knowledge_id:
            try:
                return base_get_for_user(user=self.reader, base_id=knowledge_id)
            except KnowledgeBase.DoesNotExist:
                raise NotFound(f"Knowledge base '{knowledge_id}' not found") from None
        return base_get_or_create(name=settings.KNOWLEDGE_DEFAULT_BASE)


def _metadata(raw: str | None, where: list[str]) -> dict[str, Any] | None:
    """AgentOS's metadata form field: a JSON object; text that is not JSON is kept as
    ``{"value": text}``, as AgentOS keeps it. JSON the database cannot store (a ``\u0000``, a
    non-finite number, nesting past ``JSON_MAX_DEPTH``) is a 422 at ``where``."""
    if raw is None or raw == "":
        return None
    try:
        value = load_json(raw, where)
    except ValueError:
        return {"value": raw}
    if not isinstance(value, dict):
        raise invalid(where, "metadata must be a JSON object", value=raw)
    return value


def _form(request: Request, serializer_class: type) -> dict[str, Any]:
    data = {key: request.data.get(key) for key in request.data}
    if hasattr(request, "FILES"):
        data.update({key: request.FILES.get(key) for key in request.FILES})
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return {key: value for key, value in serializer.validated_data.items() if value is not None}


def _insert_options(body: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": body.get("name") or "", "description": body.get("description") or "",
        "reader_id": body.get("reader_id") or "", "chunker": body.get("chunker") or "",
        "chunk_size": body.get("chunk_size"), "chunk_overlap": body.get("chunk_overlap"),
    }


def _input_error(exc: ContentInputError) -> Exception:
    return invalid(["body"], str(exc))


class ContentsView(KnowledgeAPIView, FormView):

    @extend_schema(
        operation_id="upload_content",
        tags=TAGS,
        parameters=[DB_ID, KNOWLEDGE_ID],
        request={"multipart/form-data": UploadContentIn},
        responses={202: ContentOut, 429: ErrorOut, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        body = _form(request, UploadContentIn)
        base = self.base(request.query_params)
        metadata = _metadata(body.get("metadata"), ["body", "metadata"])
        upload, text, url = body.get("file"), body.get("text_content"), (body.get("url") or "").strip()
        if sum(1 for given in (upload is not None, bool(text), bool(url)) if given) != 1:
            raise invalid(["body"], "Send exactly one of file, text_content or url")
        if url.startswith("["):
            try:
                urls = load_json(url, ["body", "url"])
            except ValueError:
                raise invalid(["body", "url"], "url must be a URL or a JSON list holding one URL") from None
            if not (isinstance(urls, list) and len(urls) == 1 and isinstance(urls[0], str)):
                raise invalid(["body", "url"], "Send one URL per request")
            url = urls[0].strip()
        options = _insert_options(body)
        try:
            if upload is not None:
                inserted = content_insert(
                    user_id=self.owner, base_id=base.pk, source_type=SourceType.UPLOAD, data=upload.read(),
                    file_name=upload.name or "", mime_type=getattr(upload, "content_type", "") or "", metadata=metadata, **options,
                )
            elif text:
                inserted = content_insert(user_id=self.owner, base_id=base.pk, source_type=SourceType.TEXT, text=text, metadata=metadata, **options)
            else:
                if not url.lower().startswith(("http://", "https://")):
                    raise invalid(["body", "url"], "url must be an http:// or https:// URL")
                inserted = content_insert(user_id=self.owner, base_id=base.pk, source_type=SourceType.URL, url=url, metadata=metadata, **options)
        except ContentInputError as exc:
            raise _input_error(exc) from None
        return Response(render_content(inserted.content), status=202)

    @extend_schema(
        operation_id="get_content",
        tags=TAGS,
        parameters=[
            query_param("limit", "Contents per page (>= 1)", OpenApiTypes.INT, default=20),
            query_param("page", "Page number, from 1", OpenApiTypes.INT, default=1),
            query_param("sort_by", "Field to sort by", enum=SORT_FIELDS, default="created_at"),
            query_param("sort_order", "Sort order", enum=("asc", "desc"), default="desc"),
            DB_ID, KNOWLEDGE_ID,
            query_param("parent_id", "Accepted for AgentOS compatibility (contents here have no parents)"),
        ],
        responses={200: PaginatedContentOut, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        base = self.base(params)
        window = page(params, default_limit=20, max_limit=None)
        sort_by = choice(params, "sort_by", SORT_FIELDS, "created_at")
        descending = choice(params, "sort_order", ("asc", "desc"), "desc") == "desc"
        contents, total = content_list_for_user(
            user=self.reader, base_id=base.pk, offset=window.offset, limit=window.limit, order=("-" if descending else "") + sort_by,
        )
        return Response(envelope([render_content(content) for content in contents], window, total))

    @extend_schema(
        operation_id="delete_all_content",
        tags=TAGS,
        parameters=[DB_ID, KNOWLEDGE_ID],
        request=None,
        responses={200: OpenApiTypes.STR, **ERRORS},
    )
    def delete(self, request: Request) -> Response:
        base = self.base(request.query_params)
        content_delete_all(user=self.writer, base_id=base.pk)
        return Response("success")


class RemoteContentView(KnowledgeAPIView, FormView):
    @extend_schema(
        operation_id="upload_remote_content",
        tags=TAGS,
        parameters=[DB_ID, KNOWLEDGE_ID],
        request={"application/x-www-form-urlencoded": RemoteContentIn},
        responses={202: ContentOut, 429: ErrorOut, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        body = _form(request, RemoteContentIn)
        base = self.base(request.query_params)
        metadata = _metadata(body.get("metadata"), ["body", "metadata"]) or {}
        if body.get("source_params"):
            try:
                params = load_json(body["source_params"], ["body", "source_params"])
            except ValueError:
                raise BadRequest("source_params must be a valid JSON object") from None
            if not isinstance(params, dict):
                raise BadRequest("source_params must be a JSON object")
        try:
            source_get(body["config_id"])
        except SourceNotFound:
            raise BadRequest(f"Remote content config '{body['config_id']}' not found") from None
        path, mime_type = source_file(body["config_id"], body["path"])
        with path.open("rb") as handle:  # one byte past the limit: content_insert stores it failed, saying so
            data = handle.read(settings.KNOWLEDGE_MAX_CONTENT_BYTES + 1)
        metadata = {**metadata, "source_id": body["config_id"], "source_path": body["path"]}
        options = _insert_options(body)
        options["name"] = options["name"] or path.name
        try:
            inserted = content_insert(
                user_id=self.owner, base_id=base.pk, source_type=SourceType.UPLOAD, data=data, file_name=path.name,
                mime_type=mime_type, metadata=metadata, **options,
            )
        except ContentInputError as exc:
            raise _input_error(exc) from None
        return Response(render_content(inserted.content), status=202)


class ContentDetailView(KnowledgeAPIView, FormView):
    @extend_schema(
        operation_id="get_content_by_id",
        tags=TAGS,
        parameters=[CONTENT_ID_PATH, DB_ID, KNOWLEDGE_ID],
        responses={200: ContentOut, **ERRORS},
    )
    def get(self, request: Request, content_id: str) -> Response:
        self.base(request.query_params)
        return Response(render_content(content_get_for_user(user=self.reader, content_id=content_id)))

    @extend_schema(
        operation_id="update_content",
        tags=TAGS,
        parameters=[CONTENT_ID_PATH, DB_ID, KNOWLEDGE_ID],
        request={"application/x-www-form-urlencoded": UpdateContentIn},
        responses={200: ContentOut, **ERRORS},
    )
    def patch(self, request: Request, content_id: str) -> Response:
        self.base(request.query_params)
        body = _form(request, UpdateContentIn)
        metadata = None
        if body.get("metadata"):
            try:
                metadata = load_json(body["metadata"], ["body", "metadata"])
            except ValueError:
                raise BadRequest("Invalid JSON format for metadata") from None
        if body.get("reader_id") and body["reader_id"] not in READERS:
            raise BadRequest(f"Invalid reader_id: {body['reader_id']}")
        try:
            content = content_update(
                user=self.writer, content_id=content_id, name=body.get("name"), description=body.get("description"),
                metadata=metadata, reader_id=body.get("reader_id"),
            )
        except ContentInputError as exc:
            raise BadRequest(str(exc)) from None
        return Response(render_content(content))

    @extend_schema(
        operation_id="delete_content_by_id",
        tags=TAGS,
        parameters=[CONTENT_ID_PATH, DB_ID, KNOWLEDGE_ID],
        request=None,
        responses={200: ContentOut, **ERRORS},
    )
    def delete(self, request: Request, content_id: str) -> Response:
        self.base(request.query_params)
        return Response(render_content(content_delete(user=self.writer, content_id=content_id)))


class ContentRefreshView(KnowledgeAPIView):
    @extend_schema(
        operation_id="refresh_content",
        tags=TAGS,
        parameters=[CONTENT_ID_PATH, DB_ID, KNOWLEDGE_ID],
        request=None,
        responses={202: ContentOut, 429: ErrorOut, **ERRORS},
    )
    def post(self, request: Request, content_id: str) -> Response:
        self.base(request.query_params)
        try:
            content = content_refresh(user=self.writer, content_id=content_id)
        except ContentInputError as exc:
            raise BadRequest(str(exc)) from None
        return Response(render_content(content), status=202)


class ContentStatusView(KnowledgeAPIView):
    @extend_schema(
        operation_id="get_content_status",
        tags=TAGS,
        parameters=[CONTENT_ID_PATH, DB_ID, KNOWLEDGE_ID],
        responses={200: ContentStatusOut, **ERRORS},
    )
    def get(self, request: Request, content_id: str) -> Response:
        self.base(request.query_params)
        status = content_status_for_user(user=self.reader, content_id=content_id)
        return Response({key: status[key] for key in ("id", "status", "status_message")})  # AgentOS's ContentStatusResponse


class SearchView(KnowledgeAPIView):
    scope_actions = {"POST": "read"}

    @extend_schema(
        operation_id="search_knowledge",
        tags=TAGS,
        request=SearchIn,
        responses={200: PaginatedSearchOut, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        started = time.perf_counter()
        body = json_body(request, SearchIn)
        base = self.base({"db_id": body.get("db_id"), "knowledge_id": body.get("knowledge_id")})
        if body.get("vector_db_ids") and vector_db_id(base.pk) not in body["vector_db_ids"]:
            raise BadRequest(
                f"None of the provided Vector DB IDs {body['vector_db_ids']} match the knowledge base Vector DB ID {vector_db_id(base.pk)}"
            )
        search_type = body.get("search_type") or "vector"
        if search_type not in SEARCH_TYPES:
            raise invalid(["body", "search_type"], f"search_type must be one of {', '.join(SEARCH_TYPES)}", value=search_type)
        meta = body.get("meta") or {}
        window = Page(page=meta.get("page", 1), limit=meta.get("limit", 20))
        max_results = min(body.get("max_results") or DEFAULT_MAX_RESULTS, MAX_LIMIT)
        reranker = None  # the deployment's
        if body.get("rerank") is False:
            reranker = NO_RERANKER
        elif body.get("rerank") and default_reranker_id() is None:
            raise invalid(["body", "rerank"], "This server has no reranker (KNOWLEDGE_RERANKER is not set)", value=True)
        try:
            hits = knowledge_search(
                user=self.reader, base_id=base.pk, query=body["query"], search_type=search_type, limit=max_results, filters=body.get("filters"),
                reranker=reranker,
            )
        except SearchError as exc:
            raise invalid(["body"], str(exc)) from None
        shown = hits[window.offset : window.offset + window.limit]
        result = envelope([_render_hit(hit) for hit in shown], window, len(hits))
        result["meta"]["search_time_ms"] = round((time.perf_counter() - started) * 1000, 3)
        return Response(result)


def _render_hit(hit: Any) -> dict[str, Any]:
    return {
        "id": hit.chunk_id, "content": hit.text, "name": hit.name or None, "meta_data": hit.metadata or {}, "usage": None,
        "reranking_score": hit.reranking_score, "content_id": hit.content_id, "content_origin": hit.origin or None,
        "size": len(hit.text.encode("utf-8")), "score": hit.score,
    }


class ConfigView(KnowledgeAPIView):
    @extend_schema(
        operation_id="get_knowledge_config",
        tags=TAGS,
        parameters=[DB_ID, KNOWLEDGE_ID],
        responses={200: KnowledgeConfigOut, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        base = self.base(request.query_params)
        return Response(knowledge_config(user=self.reader, base_id=base.pk))


class SourcesView(KnowledgeAPIView):
    @extend_schema(
        operation_id="list_content_sources",
        tags=TAGS,
        parameters=[KNOWLEDGE_ID_PATH, DB_ID],
        responses={200: SourceOut(many=True), **ERRORS},
    )
    def get(self, request: Request, knowledge_id: str) -> Response:
        self.base(request.query_params, knowledge_id)
        return Response([source.to_dict() for source in sources()])


class SourceFilesView(KnowledgeAPIView):
    @extend_schema(
        operation_id="list_source_files",
        tags=TAGS,
        parameters=[
            KNOWLEDGE_ID_PATH, SOURCE_ID_PATH,
            query_param("prefix", "Path prefix: a folder, ending in /, and optionally the start of a name"),
            query_param("limit", "Files per page (1 to 1000)", OpenApiTypes.INT, default=100),
            query_param("page", "Page number, from 1", OpenApiTypes.INT, default=1),
            query_param("delimiter", "Folder delimiter; empty lists every file below the prefix", default="/"),
            DB_ID,
        ],
        responses={200: SourceFilesOut, **ERRORS},
    )
    def get(self, request: Request, knowledge_id: str, source_id: str) -> Response:
        params = request.query_params
        self.base(params, knowledge_id)
        limit = integer(params, "limit", 100, minimum=1, maximum=1000)
        number = integer(params, "page", 1, minimum=1)
        delimiter = params.get("delimiter", "/")
        if delimiter not in ("", "/"):
            raise invalid(["query", "delimiter"], "delimiter must be '/' or empty", value=delimiter)
        listing = source_listing(source_id, prefix=params.get("prefix") or "", delimiter=delimiter, offset=(number - 1) * limit, limit=limit)
        total = int(listing.pop("total"))
        listing["meta"] = envelope([], Page(page=number, limit=limit), total)["meta"]
        return Response(listing)
