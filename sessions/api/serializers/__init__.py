"""Input and output serializers of the /sessions and /memories families (AgentOS 3.1.10 shapes).

Output serializers list every field AgentOS sends, in its order, and render plain dicts that
the ``*_data`` functions build from our rows the way AgentOS builds them from its own
(``agno.os.schema``): which id a session carries, default values of absent run keys, and so
on. Views drop null keys afterwards where AgentOS declares ``response_model_exclude_none``.
"""
from core.api.schema import PaginationInfoOut

from .common import (
    RUN_STATUSES,
    SESSION_TYPES,
    ErrorOut,
    ValidationErrorOut,
    drop_nulls,
    errors,
    iso_z,
    render,
)
from .memories import (
    DeleteMemoriesIn,
    MemoryIn,
    MemoryOut,
    OptimizeMemoriesIn,
    OptimizeMemoriesOut,
    PaginatedMemoriesOut,
    PaginatedUserStatsOut,
    UserStatsOut,
    memory_data,
    render_memory,
)
from .runs import (
    RunOut,
    RunPreviewOut,
    TeamRunOut,
    WorkflowRunOut,
    classify_run,
    render_run,
    run_by_own_kind,
    run_preview_data,
    stored_run,
)
from .sessions import (
    AgentSessionDetailOut,
    CreateSessionIn,
    DeleteSessionsIn,
    PaginatedSessionsOut,
    RenameSessionIn,
    SessionOut,
    TeamSessionDetailOut,
    UpdateSessionIn,
    WorkflowSessionDetailOut,
    render_session_detail,
    session_item_data,
)

__all__ = [
    "render",
    "RUN_STATUSES",
    "SESSION_TYPES",
    "AgentSessionDetailOut",
    "CreateSessionIn",
    "DeleteMemoriesIn",
    "DeleteSessionsIn",
    "ErrorOut",
    "MemoryIn",
    "MemoryOut",
    "OptimizeMemoriesIn",
    "OptimizeMemoriesOut",
    "PaginatedMemoriesOut",
    "PaginatedSessionsOut",
    "PaginatedUserStatsOut",
    "PaginationInfoOut",
    "RenameSessionIn",
    "RunOut",
    "RunPreviewOut",
    "SessionOut",
    "TeamRunOut",
    "TeamSessionDetailOut",
    "UpdateSessionIn",
    "UserStatsOut",
    "ValidationErrorOut",
    "WorkflowRunOut",
    "WorkflowSessionDetailOut",
    "classify_run",
    "drop_nulls",
    "errors",
    "iso_z",
    "memory_data",
    "render_memory",
    "render_run",
    "render_session_detail",
    "run_by_own_kind",
    "run_preview_data",
    "session_item_data",
    "stored_run",
]
