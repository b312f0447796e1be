from django.contrib import admin
from django.urls import path, re_path

from core import views as core_views

urlpatterns = [
    path("admin/", admin.site.urls),
    re_path(r"^health/?$", core_views.health, name="health"),
]
