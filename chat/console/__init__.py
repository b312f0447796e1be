"""The operator console's own pages in the Django admin: the dashboard and per-user data.

They live beside the chat UI because both are the project's browser front-ends; the numbers
come from ``selectors``, the writes from the owning apps' services.
"""
