from django.apps import AppConfig


class TracesConfig(AppConfig):
    name = "traces"
    verbose_name = "Traces"

    def ready(self) -> None:
        from agents.pipeline.observers import register_run_start

        from .tracing import trace_on_run_start

        # The pipeline imports nothing of traces: a run's trace follows its events from here.
        register_run_start("traces", trace_on_run_start)
