from django.apps import AppConfig


class ImporterConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "importer"
    verbose_name = "Agno import"

    def ready(self) -> None:
        from core.services.userdata import userdata_erasing

        from . import jobs
        from .erasure import on_userdata_erasing

        del jobs  # imported for its job handler's registration (jobs.registry.job_handler)
        # A user's erasure takes them out of the imports that name them too.
        userdata_erasing.connect(on_userdata_erasing, dispatch_uid="importer.erasure")
