"""Workspace's access boundary, as Agno v3's: root containment and the credential refusal list."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from engine import Workspace


def tools_of(workspace: Workspace):
    return {f.name: f for f in workspace.functions()}


def read(workspace: Workspace, path: str) -> str:
    return tools_of(workspace)["read_file"].execute({"path": path})


def make(root: Path, relative: str, text: str = "SECRET=1\n") -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


REFUSED = [
    ".env", ".env.local", ".env.production", "prod.env", "config/.env",
    "server.pem", "tls/private.key", "id_rsa", "id_rsa.pub", "id_ed25519",
    ".ssh/config", ".aws/credentials", ".kube/config", "home/.ssh/known_hosts",
    ".npmrc", ".netrc", ".git-credentials", "credentials.json", "config/credentials.json",
    "secrets.yaml", "secrets.yml", "service_account.json", "service_account_prod.json",
    "infra/prod.tfvars", "terraform.tfvars.json", ".pgpass", "token.json",
]


@pytest.mark.parametrize("relative", REFUSED)
def test_credential_files_are_refused(tmp_path, relative):
    make(tmp_path, relative)
    assert read(Workspace(tmp_path), relative) == f"Error: path is excluded from this workspace: {relative}"


@pytest.mark.parametrize("relative", [".env.example", ".env.sample", ".env.template", ".env.dist", "example.env", "env.example"])
def test_committed_env_templates_are_readable(tmp_path, relative):
    make(tmp_path, relative, "API_KEY=\n")
    assert read(Workspace(tmp_path), relative) == "     1\tAPI_KEY="


@pytest.mark.parametrize("relative", ["credentials.py", "secrets.py", "docs/secrets.md", "src/credentials/loader.py"])
def test_ordinary_source_with_credential_like_names_is_readable(tmp_path, relative):
    make(tmp_path, relative, "x = 1\n")
    assert read(Workspace(tmp_path), relative) == "     1\tx = 1"


def test_refusal_does_not_reveal_whether_the_file_exists(tmp_path):
    assert read(Workspace(tmp_path), ".env.missing") == "Error: path is excluded from this workspace: .env.missing"
    assert read(Workspace(tmp_path), "missing.txt") == "Error: file not found: missing.txt"


@pytest.mark.parametrize("relative", ["../outside.txt", "a/../../outside.txt", "/etc/passwd", "C:/Windows/win.ini", "", "bad\x00name"])
def test_paths_escaping_the_root_are_refused(tmp_path, relative):
    root = tmp_path / "root"
    root.mkdir()
    make(tmp_path, "outside.txt", "nope")
    assert read(Workspace(root), relative) == "Error: path escapes workspace root"


def test_symlink_to_an_excluded_file_is_refused(tmp_path):
    make(tmp_path, ".env")
    os.symlink(tmp_path / ".env", tmp_path / "notes.txt")
    workspace = Workspace(tmp_path)

    assert read(workspace, "notes.txt") == "Error: path is excluded from this workspace: notes.txt"
    listed = json.loads(tools_of(workspace)["list_files"].execute({}))
    assert listed["files"] == []


def test_symlink_leaving_the_root_is_refused(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    make(tmp_path, "outside.txt", "nope")
    os.symlink(tmp_path / "outside.txt", root / "link.txt")

    assert read(Workspace(root), "link.txt") == "Error: path escapes workspace root"


def test_allow_paths_re_allows_named_paths_only(tmp_path):
    make(tmp_path, "config/credentials.json", '{"ok": true}\n')
    make(tmp_path, ".ssh/config", "Host x\n")
    make(tmp_path, ".ssh/id_rsa")
    make(tmp_path, "other/credentials.json")
    workspace = Workspace(tmp_path, allow_paths=["config/credentials.json", ".ssh"])

    assert read(workspace, "config/credentials.json") == '     1\t{"ok": true}'
    assert read(workspace, ".ssh/config") == "     1\tHost x"
    # Exclude patterns still apply to names beneath an allowed directory.
    assert read(workspace, ".ssh/id_rsa") == "Error: path is excluded from this workspace: .ssh/id_rsa"
    assert read(workspace, "other/credentials.json") == "Error: path is excluded from this workspace: other/credentials.json"


def test_allow_paths_outside_the_root_is_a_configuration_error(tmp_path):
    with pytest.raises(ValueError, match="not a path inside the workspace"):
        Workspace(tmp_path, allow_paths=["../elsewhere"])


def test_listing_and_search_hide_excluded_entries(tmp_path):
    make(tmp_path, "notes.md", "the password is hunter2\n")
    make(tmp_path, ".env", "password=hunter2\n")
    make(tmp_path, ".aws/credentials", "password hunter2\n")
    make(tmp_path, "node_modules/pkg/readme.md", "hunter2\n")
    make(tmp_path, ".env.example", "PASSWORD=\n")
    tools = tools_of(Workspace(tmp_path))

    listed = json.loads(tools["list_files"].execute({"recursive": True}))
    assert [f["path"] for f in listed["files"]] == [".env.example", "notes.md"]
    found = json.loads(tools["search_content"].execute({"query": "hunter2"}))
    assert [f["file"] for f in found["files"]] == ["notes.md"]
    assert tools["list_files"].execute({"directory": ".aws"}) == "Error: directory is excluded from this workspace: .aws"


def test_write_is_refused_for_excluded_paths_and_needs_confirmation_by_default(tmp_path):
    tools = tools_of(Workspace(tmp_path))

    assert tools["write_file"].requires_confirmation
    assert not tools["read_file"].requires_confirmation
    assert tools["write_file"].execute({"path": ".env", "content": "X=1"}) == "Error: path is excluded from this workspace: .env"
    assert tools["write_file"].execute({"path": "out/report.md", "content": "hi"}) == "Wrote 2 chars to out/report.md"
    assert (tmp_path / "out/report.md").read_text() == "hi"
    assert not (tmp_path / ".env").exists()


def test_allowed_and_confirm_partition_the_tools(tmp_path):
    workspace = Workspace(tmp_path, allowed=["read"], confirm=["write"])
    assert {n: f.requires_confirmation for n, f in tools_of(workspace).items()} == {"read_file": False, "write_file": True}
    with pytest.raises(ValueError, match="both allowed and confirm"):
        Workspace(tmp_path, allowed=["read"], confirm=["read"])


DIFFERENTIAL_PATHS = [
    ".env", ".env.local", "prod.env", "config/.env", "server.pem", "tls/private.key", "id_rsa", "id_rsa.pub",
    ".ssh/config", ".ssh/id_rsa", ".aws/credentials", ".kube/config", ".npmrc", ".netrc", ".git-credentials",
    "credentials.json", "cfg/credentials.json", "secrets.yaml", "service_account_x.json", "a.tfvars",
    ".env.example", ".env.sample", ".env.template", ".env.dist", "credentials.py", "secrets.py", "notes.txt",
    "build/index.html", "build/.env", "node_modules/a.js", "dist/x.txt", "src/.git/config", "ok/readme.md",
]


@pytest.mark.parametrize("allow_paths", [[], ["cfg/credentials.json", ".ssh", "build"]])
def test_boundary_matches_the_agno_reference_implementation(tmp_path, allow_paths):
    agno_workspace = pytest.importorskip("agno.tools.workspace")
    for relative in DIFFERENTIAL_PATHS:
        make(tmp_path, relative, "x\n")
    os.symlink(tmp_path / ".env", tmp_path / "link.txt")
    reference = agno_workspace.Workspace(str(tmp_path), allow_paths=allow_paths or None)
    ours = tools_of(Workspace(tmp_path, allow_paths=allow_paths))

    for relative in [*DIFFERENTIAL_PATHS, "link.txt", "../x", "missing.env", "dir/../.env"]:
        assert ours["read_file"].execute({"path": relative}) == reference.read_file(relative), relative
    listed = json.loads(ours["list_files"].execute({"recursive": True}))
    assert [f["path"] for f in listed["files"]] == [f["path"] for f in json.loads(reference.list_files(".", recursive=True))["files"]]


def write(workspace: Workspace, path: str, content: str) -> str:
    return tools_of(workspace)["write_file"].execute({"path": path, "content": content})


@pytest.fixture
def planted(tmp_path) -> tuple[Path, Path]:
    """A workspace root, and a file outside it that a planted link points at."""
    root = tmp_path / "root"
    root.mkdir()
    victim = make(tmp_path, "outside/victim.txt", "untouched")
    return root, victim


def test_write_does_not_follow_a_planted_tmp_link_out_of_the_root(planted):
    root, victim = planted
    os.symlink(victim, root / "notes.txt.tmp")

    assert write(Workspace(root), "notes.txt", "pwned") == "Wrote 5 chars to notes.txt"
    assert victim.read_text() == "untouched"
    assert (root / "notes.txt").read_text() == "pwned"
    assert not (root / "notes.txt").is_symlink()
    assert sorted(p.name for p in root.iterdir()) == ["notes.txt", "notes.txt.tmp"]


def test_write_through_a_symlinked_parent_writes_nothing_outside_the_root(planted):
    root, victim = planted
    (root / "real").mkdir()
    os.symlink(root / "real", root / "linked")
    os.symlink(victim, root / "real" / "notes.txt.tmp")
    os.symlink(victim.parent, root / "out")
    workspace = Workspace(root)

    assert write(workspace, "linked/notes.txt", "pwned") == "Wrote 5 chars to linked/notes.txt"
    assert write(workspace, "out/new.txt", "pwned") == "Error: path escapes workspace root"
    assert (root / "real" / "notes.txt").read_text() == "pwned"
    assert victim.read_text() == "untouched"
    assert sorted(p.name for p in victim.parent.iterdir()) == ["victim.txt"]
