from django.apps import AppConfig


class ApprovalsConfig(AppConfig):
    name = "approvals"
    verbose_name = "Approvals"

    def ready(self) -> None:
        from agents.pipeline.observers import ContinueGate, register_continue_gate, register_run_end

        from .gate import continue_gate
        from .services import approval_resolve_by_continue, approvals_concern_run_end, approvals_on_run_end_observed

        # The run pipeline imports nothing of approvals: a run's end writes its approval rows,
        # and a continue of a run whose approval is pending passes this gate, from here.
        register_run_end("approvals", approvals_on_run_end_observed, applies=approvals_concern_run_end)
        register_continue_gate("approvals", ContinueGate(check=continue_gate, settled=approval_resolve_by_continue))
