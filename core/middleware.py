"""Middleware of our own."""
from __future__ import annotations

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.http import HttpResponse
from whitenoise.middleware import WhiteNoiseMiddleware


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    """WhiteNoise that stays asynchronous under ASGI.

    WhiteNoise's own middleware is synchronous only, which makes Django run every request's
    whole middleware chain in a worker thread and hop back for async views. This one answers
    static paths (reading the file in a thread, whole: static assets are small) and passes every
    other request straight on without leaving the event loop.
    """

    async_capable = True
    sync_capable = True

    def __init__(self, get_response=None, settings=None):
        if settings is None:
            from django.conf import settings as django_settings

            settings = django_settings
        super().__init__(get_response, settings=settings)
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request):
        if self.is_async:
            return self.__acall__(request)
        return super().__call__(request)

    def _static_file(self, request):
        return self.find_file(request.path_info) if self.autorefresh else self.files.get(request.path_info)

    async def __acall__(self, request):
        static_file = self._static_file(request)
        if static_file is None:
            return await self.get_response(request)
        return await sync_to_async(self._serve_whole, thread_sensitive=False)(static_file, request)

    @staticmethod
    def _serve_whole(static_file, request) -> HttpResponse:
        found = static_file.get_response(request.method, request.META)
        body = b""
        if found.file is not None:
            with found.file as handle:
                body = handle.read()
        response = HttpResponse(body, status=int(found.status))
        del response["Content-Type"]
        for key, value in found.headers:
            response[key] = value
        return response
