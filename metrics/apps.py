from django.apps import AppConfig


class MetricsConfig(AppConfig):
    name = "metrics"
    verbose_name = "Metrics"

    def ready(self) -> None:
        from . import tasks

        del tasks  # imported for its job handler's registration (jobs.registry.job_handler)
