"""The knowledge app's answer to the agents' question "which bases are there, and how do I search
one by name" (``agents.knowledge.KnowledgeBases``), registered when the app starts.

``/config`` and the admin's agent form list the shared bases (the deployment's default one
always among them); an agent naming a base searches it as the run's user sees it, their own
base of that name first (``BaseSource``).
"""
from __future__ import annotations

from django.conf import settings

from agents.knowledge import KnowledgeBaseInfo
from .models import KnowledgeBase
from .services import BaseSource, base_get_or_create
from .services.bases import readable


class DatabaseBases:
    def bases(self) -> list[KnowledgeBaseInfo]:
        base_get_or_create(name=settings.KNOWLEDGE_DEFAULT_BASE)
        shared = readable(KnowledgeBase.objects, None).order_by("name")  # None: the shared rows
        return [KnowledgeBaseInfo(id=base.pk, name=base.name, description=base.description or None) for base in shared]

    def source(self, name: str) -> BaseSource:
        return BaseSource(name)
