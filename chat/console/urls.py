"""Mounted at /admin/ ahead of the admin's own routes; every page needs a staff login."""
from django.contrib import admin
from django.urls import path

from . import views

urlpatterns = [
    path("dashboard/", admin.site.admin_view(views.dashboard), name="console-dashboard"),
    path("dashboard/metrics-refresh/", admin.site.admin_view(views.metrics_refresh), name="console-metrics-refresh"),
    path("dashboard/metrics-refresh/status/", admin.site.admin_view(views.metrics_refresh_status), name="console-metrics-refresh-status"),
    path("workflows/", admin.site.admin_view(views.workflows), name="console-workflows"),
    path("userdata/", admin.site.admin_view(views.userdata), name="console-userdata"),
    path("userdata/export/", admin.site.admin_view(views.userdata_export), name="console-userdata-export"),
    path("userdata/erase/", admin.site.admin_view(views.userdata_erase_view), name="console-userdata-erase"),
]
