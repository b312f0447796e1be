"""Knowledge bases, their contents (documents) and the chunks contents are split into.

Every table is owned (``core.tenancy.OwnedModel``). A base with ``user_id`` None is shared (an
operator's, or the code's); contents in it belong to the user who added them, or to nobody
(shared, readable by every user). Chunks copy their content's owner and base, so a search is
scoped and filtered on the chunk table alone, in the same query as the vector scan.
"""
from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from core.tenancy import OwnedModel

from .fields import EmbeddingField

# The width of the embedding column. pgvector's HNSW index needs one fixed dimension per
# column, so every embedder a base uses must produce vectors of this size (the default
# all-MiniLM-L6-v2 does; OpenAI's text-embedding-3 models are asked for it).
VECTOR_DIMENSIONS = 384


def new_id() -> str:
    return str(uuid.uuid4())


class KnowledgeBase(OwnedModel):
    id = models.CharField(max_length=64, primary_key=True, default=new_id)
    name = models.CharField(max_length=255)
    description = models.TextField(blank=True, default="")
    # The embedder searches use; chunks of other embedders (a re-embedding under way) are
    # written beside them and take over when ``knowledge_reembed`` switches this.
    embedder_id = models.CharField(max_length=255)
    dimensions = models.PositiveSmallIntegerField(default=VECTOR_DIMENSIONS)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "knowledge_bases"
        constraints = [
            models.UniqueConstraint(fields=["user_id", "name"], name="knowledge_base_name_per_user"),
            models.UniqueConstraint(fields=["name"], condition=models.Q(user_id__isnull=True), name="knowledge_base_name_shared"),
        ]

    def __str__(self) -> str:
        return self.name


class SourceType(models.TextChoices):
    UPLOAD = "upload"
    URL = "url"
    TEXT = "text"


class ContentStatus(models.TextChoices):
    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"


class Content(OwnedModel):
    id = models.CharField(max_length=64, primary_key=True, default=new_id)
    base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="contents")
    name = models.CharField(max_length=500, blank=True, default="")
    description = models.TextField(blank=True, default="")
    source_type = models.CharField(max_length=16, choices=SourceType.choices)
    url = models.URLField(max_length=2000, blank=True, default="")
    file_name = models.CharField(max_length=500, blank=True, default="")
    mime_type = models.CharField(max_length=255, blank=True, default="")
    size = models.BigIntegerField(null=True, blank=True)
    content_hash = models.CharField(max_length=64, blank=True, default="", db_index=True)
    metadata = models.JSONField(default=dict, blank=True)
    # How to read and split it (None: chosen by type); kept for a refresh.
    reader_id = models.CharField(max_length=32, blank=True, default="")
    chunker = models.CharField(max_length=32, blank=True, default="")
    chunk_size = models.PositiveIntegerField(null=True, blank=True)
    chunk_overlap = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=ContentStatus.choices, default=ContentStatus.PROCESSING)
    status_message = models.TextField(blank=True, default="")
    embedder_id = models.CharField(max_length=255, blank=True, default="")
    chunk_count = models.PositiveIntegerField(default=0)
    # The ingestion job that last processed it (agents.models.Job id).
    job_id = models.CharField(max_length=64, blank=True, default="")
    # The original bytes (an upload, a text, a fetched page): a refresh reads them again. Left
    # out of every list (selectors defer it).
    data = models.BinaryField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "knowledge_contents"
        indexes = [
            models.Index(fields=["user_id", "base", "-created_at"], name="content_user_base_created"),
            models.Index(fields=["user_id", "base", "content_hash"], name="content_user_base_hash"),
        ]

    def __str__(self) -> str:
        return self.name or self.file_name or self.url or self.id


class Chunk(OwnedModel):
    # An integer key: SQLite's full-text table (FTS5) refers to chunks by rowid.
    id = models.BigAutoField(primary_key=True)
    base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="chunks")
    content = models.ForeignKey(Content, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    text = models.TextField()
    metadata = models.JSONField(default=dict, blank=True)
    embedding = EmbeddingField(dimensions=VECTOR_DIMENSIONS)
    embedder_id = models.CharField(max_length=255)
    dimensions = models.PositiveSmallIntegerField(default=VECTOR_DIMENSIONS)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "knowledge_chunks"
        constraints = [
            models.UniqueConstraint(fields=["user_id", "content", "embedder_id", "index"], name="chunk_index_per_content_embedder"),
        ]
        indexes = [
            models.Index(fields=["user_id", "base", "embedder_id"], name="chunk_user_base_embedder"),
            models.Index(fields=["content", "embedder_id"], name="chunk_content_embedder"),
        ]

    def __str__(self) -> str:
        return f"{self.content_id} #{self.index}"
