from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = "Agents"

    def ready(self) -> None:
        from django.conf import settings

        from agents.runtime.aio import configure_tool_threads

        # The runtime reads no settings: the pool its sync tools run in is sized from here.
        configure_tool_threads(settings.TOOL_THREADS)
