from django.apps import AppConfig


class TracesConfig(AppConfig):
    name = "traces"
    verbose_name = "Traces"

    def ready(self) -> None:
        from agents.pipeline.observers import register_hooks_ran, register_run_start

        from .tracing import background_hooks_trace, trace_on_run_start

        # The pipeline imports nothing of traces: a run's trace follows its events from here, and
        # its background post-hooks, run later in their job, are a trace of their own.
        register_run_start("traces", trace_on_run_start)
        register_hooks_ran("traces", background_hooks_trace)
