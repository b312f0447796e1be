"""The /knowledge bodies, in AgentOS 3.1.10's shapes (``agno.os.routers.knowledge.schemas``)."""
from __future__ import annotations

from typing import Any

from rest_framework import serializers

from core.api.schema import PaginationInfoOut
from sessions.api.serializers.common import JSONObjectIn, ObjectField, Text, iso_z, output

from ..models import Content, ContentStatus, SourceType
from ..services.contents import AGNO_METADATA_KEY

CONTENT_STATUSES = ("processing", "completed", "partial", "failed")


class UploadContentIn(serializers.Serializer):
    """``Body_upload_content`` (multipart; the file part is ``file``)."""

    name = Text(required=False, allow_null=True, max_length=500)
    description = Text(required=False, allow_null=True, max_length=10_000)
    url = Text(required=False, allow_null=True, max_length=2000)  # the column's length
    metadata = Text(required=False, allow_null=True)
    file = serializers.FileField(required=False, allow_null=True, allow_empty_file=True)
    text_content = Text(required=False, allow_null=True)
    reader_id = Text(required=False, allow_null=True, max_length=32)
    chunker = Text(required=False, allow_null=True, max_length=32)
    chunk_size = serializers.IntegerField(required=False, allow_null=True)
    chunk_overlap = serializers.IntegerField(required=False, allow_null=True)


class RemoteContentIn(serializers.Serializer):
    """``Body_upload_remote_content`` (form)."""

    config_id = Text(max_length=255, error_messages={"required": "Field required"})
    path = Text(max_length=4000, error_messages={"required": "Field required"})
    source_params = Text(required=False, allow_null=True)
    name = Text(required=False, allow_null=True, max_length=500)
    description = Text(required=False, allow_null=True, max_length=10_000)
    metadata = Text(required=False, allow_null=True)
    reader_id = Text(required=False, allow_null=True, max_length=32)
    chunker = Text(required=False, allow_null=True, max_length=32)
    chunk_size = serializers.IntegerField(required=False, allow_null=True)
    chunk_overlap = serializers.IntegerField(required=False, allow_null=True)


class UpdateContentIn(serializers.Serializer):
    """``Body_update_content`` (form)."""

    name = Text(required=False, allow_null=True, max_length=500)
    description = Text(required=False, allow_null=True, max_length=10_000)
    metadata = Text(required=False, allow_null=True)
    reader_id = Text(required=False, allow_null=True, max_length=32)


class SearchMetaIn(serializers.Serializer):
    limit = serializers.IntegerField(required=False, min_value=1, default=20)
    page = serializers.IntegerField(required=False, min_value=1, default=1)


class SearchIn(serializers.Serializer):
    """``VectorSearchRequestSchema``."""

    query = Text(max_length=10_000, error_messages={"required": "Field required", "null": "Input should be a valid string"})
    db_id = Text(required=False, allow_null=True)
    knowledge_id = Text(required=False, allow_null=True)
    vector_db_ids = serializers.ListField(child=Text(), required=False, allow_null=True)
    search_type = Text(required=False, allow_null=True)
    max_results = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=1000)
    filters = JSONObjectIn(required=False, allow_null=True)
    meta = SearchMetaIn(required=False, allow_null=True)
    # This server's addition: true reranks with the deployment's reranker (KNOWLEDGE_RERANKER),
    # false searches without it; absent or null follows the deployment.
    rerank = serializers.BooleanField(required=False, allow_null=True, default=None)


class ContentOut(serializers.Serializer):
    """``ContentResponseSchema``."""

    id = serializers.CharField()
    name = output(serializers.CharField())
    description = output(serializers.CharField())
    type = output(serializers.CharField())
    size = output(serializers.CharField())
    linked_to = output(serializers.CharField())
    metadata = output(ObjectField())
    access_count = output(serializers.IntegerField(min_value=0))
    status = output(serializers.ChoiceField(choices=CONTENT_STATUSES))
    status_message = output(serializers.CharField())
    created_at = output(serializers.DateTimeField())
    updated_at = output(serializers.DateTimeField())
    # This server's additions: where it came from, and how far its ingestion got.
    source_type = output(serializers.ChoiceField(choices=tuple(SourceType.values)))
    url = output(serializers.CharField())
    file_name = output(serializers.CharField())
    chunk_count = output(serializers.IntegerField(min_value=0))
    knowledge_id = output(serializers.CharField())
    user_id = output(serializers.CharField())


class PaginatedContentOut(serializers.Serializer):
    data = ContentOut(many=True)
    meta = PaginationInfoOut()


class ContentStatusOut(serializers.Serializer):
    """``ContentStatusResponse``."""

    id = output(serializers.CharField())
    status = serializers.ChoiceField(choices=CONTENT_STATUSES)
    status_message = serializers.CharField()


class SearchResultOut(serializers.Serializer):
    """``VectorSearchResult``."""

    id = output(serializers.CharField())
    content = serializers.CharField()
    name = output(serializers.CharField())
    meta_data = output(ObjectField())
    usage = output(ObjectField())
    reranking_score = output(serializers.FloatField())
    content_id = output(serializers.CharField())
    content_origin = output(serializers.CharField())
    size = output(serializers.IntegerField(min_value=0))
    score = output(serializers.FloatField())  # this server's: the search's own relevance score


class PaginatedSearchOut(serializers.Serializer):
    data = SearchResultOut(many=True)
    meta = PaginationInfoOut()


class ReaderOut(serializers.Serializer):
    id = serializers.CharField()
    name = output(serializers.CharField())
    description = output(serializers.CharField())
    chunkers = serializers.ListField(child=serializers.CharField())
    content_types = serializers.ListField(child=serializers.CharField())


class ChunkerOut(serializers.Serializer):
    key = serializers.CharField()
    name = output(serializers.CharField())
    description = output(serializers.CharField())
    metadata = output(ObjectField())


class VectorDbOut(serializers.Serializer):
    id = serializers.CharField()
    name = output(serializers.CharField())
    description = output(serializers.CharField())
    search_types = serializers.ListField(child=serializers.CharField())


class SourceOut(serializers.Serializer):
    """``RemoteContentSourceSchema``."""

    id = serializers.CharField()
    name = serializers.CharField()
    type = serializers.CharField()
    metadata = output(ObjectField())
    prefix = output(serializers.CharField())


class KnowledgeConfigOut(serializers.Serializer):
    """``ConfigResponseSchema``."""

    readers = serializers.DictField(child=ReaderOut())
    readersForType = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))  # noqa: N815 (AgentOS's name)
    chunkers = serializers.DictField(child=ChunkerOut())
    filters = serializers.ListField(child=serializers.CharField())
    vector_dbs = VectorDbOut(many=True)
    remote_content_sources = SourceOut(many=True)
    unavailable_readers = ObjectField()
    unavailable_chunkers = ObjectField()


class SourceFolderOut(serializers.Serializer):
    prefix = serializers.CharField()
    name = serializers.CharField()
    is_empty = serializers.BooleanField()


class SourceFileOut(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField()
    size = output(serializers.IntegerField())
    last_modified = output(serializers.CharField())
    content_type = output(serializers.CharField())


class SourceFilesOut(serializers.Serializer):
    """``SourceFilesResponseSchema``."""

    source_id = serializers.CharField()
    source_name = serializers.CharField()
    prefix = output(serializers.CharField())
    folders = SourceFolderOut(many=True)
    files = SourceFileOut(many=True)
    meta = PaginationInfoOut()


def _type(content: Content) -> str | None:
    """AgentOS's ``type``: ``manual`` for a text, the upload's media type, ``url`` for a page."""
    if content.source_type == SourceType.TEXT:
        return "manual"
    if content.source_type == SourceType.URL:
        return "url"
    return content.mime_type or None


def _agno_metadata(content: Content) -> dict[str, Any]:
    """AgentOS's ``metadata._agno`` of a content: a URL's source, the reader it was added with,
    and, once its chunks are embedded and stored, ``vectors_indexed``."""
    agno: dict[str, Any] = {}
    if content.source_type == SourceType.URL:
        agno.update(source_type="url", source_url=content.url)
    if content.reader_id:
        agno["reader_id"] = content.reader_id
    if content.status == ContentStatus.COMPLETED:
        agno["vectors_indexed"] = True
    return agno


def _metadata(content: Content) -> dict[str, Any] | None:
    """The owner's metadata and, under ``_agno``, the server's (None when both are empty)."""
    agno = _agno_metadata(content)
    metadata = {**(content.metadata or {}), **({AGNO_METADATA_KEY: agno} if agno else {})}
    return metadata or None


def render_content(content: Content) -> dict[str, Any]:
    return {
        "id": content.pk,
        "name": content.name or None,
        "description": content.description or None,
        "type": _type(content),
        "size": None if content.size is None else str(content.size),
        "linked_to": None,
        "metadata": _metadata(content),
        "access_count": None,
        "status": content.status,
        "status_message": content.status_message or None,
        "created_at": iso_z(content.created_at),
        "updated_at": iso_z(content.updated_at),
        "source_type": content.source_type,
        "url": content.url or None,
        "file_name": content.file_name or None,
        "chunk_count": content.chunk_count,
        "knowledge_id": content.base_id,
        "user_id": content.user_id,
    }
