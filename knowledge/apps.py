from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "knowledge"
    verbose_name = "Knowledge"

    def ready(self) -> None:
        # Registers the ingestion job's handler in every process that runs jobs.
        import importlib

        importlib.import_module("knowledge.services.ingestion")
        # Agents name bases and /config lists them through this provider.
        from agents.knowledge import register_knowledge_bases

        from .provider import DatabaseBases

        register_knowledge_bases(DatabaseBases())
