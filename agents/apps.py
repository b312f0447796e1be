from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = "Agents"

    def ready(self) -> None:
        from django.conf import settings

        from engine.aio import configure_tool_threads
        from core.db import release_connections

        # The runtime reads no settings: the pool its sync tools run in is sized from here, and a
        # tool thread hands back any pooled connection its tool used (a past-sessions search),
        # so TOOL_THREADS idle threads never hold the process's DB_POOL_MAX_SIZE connections.
        configure_tool_threads(settings.TOOL_THREADS, after_each=release_connections)
        _register_agents()
        _register_memory_writer()
        _register_run_jobs()
        _declare_refusals()


def _register_agents() -> None:
    from agents.api.presenters import agent_summary, team_summary, workflow_summary
    from agents.registry import (
        agent_get, agent_list, code_agents, code_teams, code_workflows, team_get, team_list, workflow_get, workflow_list,
    )
    from agents.knowledge import knowledge_instances
    from agents.quick_prompts import quick_prompts_for
    from core.components import ComponentKind, register, register_config_section

    register(ComponentKind(kind="agent", family="agents", session_type="agent", list=agent_list, get=agent_get, summary=agent_summary, code=code_agents))
    register(ComponentKind(kind="team", family="teams", session_type="team", list=team_list, get=team_get, summary=team_summary, code=code_teams))
    register(ComponentKind(
        kind="workflow", family="workflows", session_type="workflow", list=workflow_list, get=workflow_get, summary=workflow_summary, code=code_workflows,
    ))
    register_config_section("knowledge", knowledge_instances)
    register_config_section("quick_prompts", quick_prompts_for)


def _register_memory_writer() -> None:
    from agents.memories import memory_text_write
    from sessions.services import memory_writer_register

    memory_writer_register(memory_text_write)


def _register_run_jobs() -> None:
    # Before the scheduler's observers of the same jobs (INSTALLED_APPS order): a schedule run
    # follows its run's row, which these hooks write.
    from agents.pipeline.run_jobs import run_job_types_register

    run_job_types_register()


def _declare_refusals() -> None:
    """The client errors of packages that cannot subclass core's DomainError, as every surface
    tells them (core.errors): the engine's refusals of a request, and the job queue's."""
    from core.errors import declare_domain_error
    from engine import InvalidContinuation
    from engine.factory import FactoryPermissionError, FactoryValidationError

    from jobs.services.jobs import IdempotencyConflict, QueueFull, SessionBusy

    declare_domain_error(InvalidContinuation, status=400, code="invalid_continuation")
    declare_domain_error(FactoryValidationError, status=400, code="factory_input_invalid")
    declare_domain_error(FactoryPermissionError, status=403, code="factory_forbidden")
    # The queue's (jobs.services.jobs: the jobs app imports nothing of core's errors' users, so they are declared here).
    declare_domain_error(QueueFull, status=429, code="queue_full", retry_after=5)
    declare_domain_error(SessionBusy, status=409, code="session_busy")
    declare_domain_error(IdempotencyConflict, status=409, code="idempotency_conflict")
