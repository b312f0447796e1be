from django.urls import include, path

from . import shared_views, token_views, views

app_name = "chat"

urlpatterns = [
    path("", views.chat_home, name="home"),
    path("s/<str:session_id>/", views.chat_session, name="session"),
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", views.LogoutView.as_view(), name="logout"),
    path("memories/", views.chat_memories, name="memories"),
    path("learnings/", views.chat_learnings, name="learnings"),
    path("documents/", views.chat_documents, name="documents"),
    path("documents/<str:content_id>/", views.chat_document, name="document"),
    path("runs/<str:run_id>/sources/<int:search>/<int:hit>/", views.chat_run_source, name="run-source"),
    path("approvals/", views.chat_approvals, name="approvals"),
    path("usage/", views.chat_usage, name="usage"),
    path("traces/<str:run_id>/", views.chat_trace, name="trace"),
    path("schedules/", views.chat_schedules, name="schedules"),
    path("evals/", views.chat_evals, name="evals"),
    path("shared/<str:token>/", shared_views.chat_shared, name="shared"),
    path("tokens/", token_views.chat_tokens, name="tokens"),
    path("api/", include("chat.api.urls")),
]
