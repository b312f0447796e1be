from django.apps import AppConfig


class ImporterConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "importer"
    verbose_name = "Agno import"

    def ready(self) -> None:
        from . import jobs

        del jobs  # imported for its job handler's registration (agents.services.jobs.job_handler)
