from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import pre_migrate


def ensure_vector_extension(sender: AppConfig, using: str = "default", **kwargs: object) -> None:
    """Create pgvector's extension before any migration needs the ``vector`` type.

    A pre_migrate hook rather than a migration operation, because pytest-django's
    no-migrations mode still sends pre_migrate but skips migration operations.
    """
    from django.db import connections

    connection = connections[using]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Platform"

    def ready(self) -> None:
        from .api import openapi  # noqa: F401  (registers the drf-spectacular extensions)

        pre_migrate.connect(ensure_vector_extension, sender=self)
