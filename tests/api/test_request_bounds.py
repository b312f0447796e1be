"""Request size bounds on the run forms, and the number of sessions a user may hold (issue 17, 8)."""
from __future__ import annotations

import json

import httpx
import pytest

from jobs.models import Job
from sessions.models import Run, Session
from tests.factories import make_session

pytestmark = pytest.mark.django_db(transaction=True)


def run_url(base: str, agent_id: str = "assistant") -> str:
    return f"{base}/agents/{agent_id}/runs"


def stored() -> tuple[int, int, int]:
    return (Run.objects.unscoped("test").count(), Session.objects.unscoped("test").count(), Job.objects.unscoped("test").count())


@pytest.fixture
def small_uploads(settings, tmp_path):
    settings.UPLOAD_MAX_FILE_BYTES = 1000
    settings.UPLOAD_MAX_TOTAL_BYTES = 1500
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)  # where Django's own handlers would spill a file
    return tmp_path


FILE_TOO_LARGE = "File too large: an uploaded file may take at most 1000 bytes"
UPLOADS_TOO_LARGE = "Uploads too large: a request's uploads may take at most 1500 bytes in total"


def inline(size: int) -> dict:
    """An inline media item whose JSON takes exactly ``size`` bytes."""
    item = {"content": "", "mime_type": "image/png"}
    item["content"] = "A" * (size - len(json.dumps(item)))
    return item


class TestUploads:
    def test_a_file_at_the_bound_is_read_and_one_byte_more_is_refused(self, live_api, small_uploads) -> None:
        def post(size: int) -> httpx.Response:
            return httpx.post(
                run_url(live_api), data={"message": "read this", "stream": "false", "user_id": "alice", "images": json.dumps([inline(500)])},
                files=[("files", ("note.txt", b"x" * size, "text/plain"))], timeout=30,
            )

        at_the_bound = post(1000)
        assert at_the_bound.status_code == 200, at_the_bound.text
        assert at_the_bound.json()["input"]["files"] == [{"mime_type": "text/plain", "filename": "note.txt", "format": "txt", "content": "x" * 1000}]
        over = post(1001)
        assert (over.status_code, over.json()) == (413, {"detail": FILE_TOO_LARGE})

    @pytest.mark.parametrize(
        ("form", "files", "detail"),
        [
            ({}, [("files", ("big.txt", b"x" * 1001, "text/plain"))], FILE_TOO_LARGE),
            ({}, [("files", ("a.txt", b"x" * 800, "text/plain")), ("files", ("b.png", b"x" * 800, "image/png"))], UPLOADS_TOO_LARGE),
            ({}, [("videos", ("clip.mp4", b"x" * 1001, "video/mp4"))], FILE_TOO_LARGE),  # a file part of any name
            ({"images": json.dumps([inline(1001)])}, [], FILE_TOO_LARGE),
            ({"audio": json.dumps([inline(800)]), "videos": json.dumps([inline(800)])}, [], UPLOADS_TOO_LARGE),
            ({"images": json.dumps([inline(800)])}, [("files", ("a.txt", b"x" * 800, "text/plain"))], UPLOADS_TOO_LARGE),
            ({"background": "true"}, [("files", ("big.txt", b"x" * 1001, "text/plain"))], FILE_TOO_LARGE),
        ],
    )
    def test_an_upload_over_a_bound_is_413_and_nothing_is_stored(self, live_api, small_uploads, form, files, detail) -> None:
        response = httpx.post(
            run_url(live_api), data={"message": "read this", "stream": "false", "user_id": "alice", **form}, files=files or None, timeout=30,
        )
        assert (response.status_code, response.json()) == (413, {"detail": detail})
        assert stored() == (0, 0, 0)
        assert list(small_uploads.iterdir()) == []

    def test_form_fields_over_djangos_bound_are_413_in_either_encoding(self, live_api, settings) -> None:
        settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 5000
        form = {"message": "hi", "stream": "false", "user_id": "alice", "session_state": json.dumps({"k": "v" * 6000})}
        expected = (413, {"detail": "Request body too large: at most 5000 bytes apart from uploaded files"})

        urlencoded = httpx.post(run_url(live_api), data=form, timeout=30)
        multipart = httpx.post(run_url(live_api), data=form, files=[("files", ("a.txt", b"x", "text/plain"))], timeout=30)
        assert (urlencoded.status_code, urlencoded.json()) == expected
        assert (multipart.status_code, multipart.json()) == expected
        assert stored() == (0, 0, 0)


class TestMessages:
    def test_a_message_over_the_bound_is_413_and_nothing_is_stored(self, live_api, settings) -> None:
        settings.RUN_MAX_MESSAGE_CHARS = 50
        for stream in ("false", "true"):
            response = httpx.post(run_url(live_api), data={"message": "é" * 51, "stream": stream, "user_id": "alice"}, timeout=30)
            assert (response.status_code, response.json()) == (413, {"detail": "message too long: at most 50 characters"})
        assert stored() == (0, 0, 0)
        at_the_bound = httpx.post(run_url(live_api), data={"message": "é" * 50, "stream": "false", "user_id": "alice"}, timeout=30)
        assert at_the_bound.status_code == 200

    def test_a_continue_input_over_the_bound_is_413(self, live_api, settings) -> None:
        settings.RUN_MAX_MESSAGE_CHARS = 50
        first = httpx.post(run_url(live_api), data={"message": "hello", "stream": "false", "user_id": "alice", "session_id": "s-c"}, timeout=30).json()
        continued = f"{run_url(live_api)}/{first['run_id']}/continue"
        for field in ("input", "additional_instructions"):
            response = httpx.post(continued, data={field: "y" * 51, "session_id": "s-c", "stream": "false", "user_id": "alice"}, timeout=30)
            assert (response.status_code, response.json()) == (413, {"detail": f"{field} too long: at most 50 characters"})
        assert list(Run.objects.for_user("alice").values_list("pk", flat=True)) == [first["run_id"]]


class TestSessionLimit:
    LIMIT_REACHED = {"detail": "Session limit reached: a user may hold at most 2 sessions. Delete some to start new ones."}

    @pytest.fixture
    def full(self, settings, live_api) -> str:
        """alice holds as many sessions as she may, one with a run in it."""
        settings.MAX_SESSIONS_PER_USER = 2
        make_session("alice", session_id="a-1", component_id="assistant")
        done = httpx.post(run_url(live_api), data={"message": "hi", "stream": "false", "user_id": "alice", "session_id": "a-2"}, timeout=30)
        assert done.status_code == 200, done.text
        return live_api

    @pytest.mark.parametrize(
        "request_one_more",
        [
            pytest.param(lambda base: httpx.post(f"{base}/sessions", json={"user_id": "alice", "session_name": "x"}), id="create"),
            pytest.param(lambda base: httpx.post(f"{base}/sessions", json={"user_id": "alice", "session_id": "a-3"}), id="create-with-id"),
            pytest.param(lambda base: httpx.post(run_url(base), data={"message": "hi", "stream": "false", "user_id": "alice"}, timeout=30), id="run"),
            pytest.param(lambda base: httpx.post(run_url(base), data={"message": "hi", "user_id": "alice", "session_id": "a-3"}, timeout=30), id="streamed-run"),
            pytest.param(lambda base: httpx.post(run_url(base), data={"message": "hi", "stream": "false", "background": "true", "user_id": "alice"}, timeout=30), id="background-run"),
            pytest.param(lambda base: httpx.post(f"{base}/agents/assistant/sessions/a-2/fork", params={"user_id": "alice"}, timeout=30), id="fork"),
        ],
    )
    def test_one_session_more_is_409_and_nothing_is_stored(self, full, request_one_more) -> None:
        response = request_one_more(full)
        assert (response.status_code, response.json()) == (409, self.LIMIT_REACHED)
        assert sorted(Session.objects.for_user("alice").values_list("pk", flat=True)) == ["a-1", "a-2"]
        assert (Run.objects.unscoped("test").count(), Job.objects.unscoped("test").count()) == (1, 0)

    def test_only_new_sessions_of_that_user_are_refused(self, full) -> None:
        refused = httpx.post(f"{full}/sessions", json={"user_id": "alice", "session_id": "a-3"})
        assert (refused.status_code, refused.json()) == (409, self.LIMIT_REACHED)
        again = httpx.post(run_url(full), data={"message": "more", "stream": "false", "user_id": "alice", "session_id": "a-1"}, timeout=30)
        assert again.status_code == 200, again.text
        bobs = httpx.post(f"{full}/sessions", json={"user_id": "bob", "session_id": "b-1"})
        assert bobs.status_code == 201, bobs.text
