"""Container packaging: the Dockerfile and the Docker MCP catalog manifest (server.yaml).

Where a Docker daemon answers, the image is built and its entry point run; everywhere else (this
machine has the Docker client but no daemon) both files are checked statically: the base image is
pinned, the image runs as a non-root user, its entry point and default command run here, and every
environment variable they document is one anvil reads.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from anvil.cli.serve import parse
from tests.conftest import anvil_subprocess_env

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = REPO / "Dockerfile"
MANIFEST = REPO / "server.yaml"
PINNED = re.compile(r"^[a-z0-9./-]+(:\d+\.\d+\.\d+[A-Za-z0-9.-]*)?(@sha256:[0-9a-f]{64})?$")


def instructions(path: Path = DOCKERFILE) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    joined: list[str] = []
    pending = ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        joined.append(pending + line)
        pending = ""
    return [(text.split(None, 1)[0].upper(), text.split(None, 1)[1].strip()) for text in joined]


def final_stage() -> list[tuple[str, str]]:
    steps = instructions()
    last_from = max(i for i, (name, _) in enumerate(steps) if name == "FROM")
    return steps[last_from:]


def exec_form(name: str) -> list[str]:
    (args,) = [args for instruction, args in final_stage() if instruction == name]
    value = json.loads(args)  # exec form: a JSON array, no shell in between
    assert isinstance(value, list) and all(isinstance(item, str) for item in value)
    return value


def image_env() -> dict[str, str]:
    found: dict[str, str] = {}
    for name, args in final_stage():
        if name == "ENV":
            for pair in shlex.split(args):
                key, _, value = pair.partition("=")
                found[key] = value
    return found


def anvil_source() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in (REPO / "anvil").rglob("*.py"))


def manifest() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    return document


def entry_point() -> list[str]:
    """The image's entry point, run with this checkout's interpreter (``anvil`` is ``python -m anvil``)."""
    command = exec_form("ENTRYPOINT")
    assert command[0] == "anvil"
    return [sys.executable, "-m", "anvil", *command[1:]]


# --- the Dockerfile ------------------------------------------------------------------------------


def test_the_base_image_is_pinned_to_an_exact_version_or_digest() -> None:
    bases = [args.split()[0] for name, args in instructions() if name == "FROM"]
    assert bases
    for base in bases:
        assert PINNED.match(base) and (":" in base or "@sha256:" in base), base
        assert not base.endswith(":latest") and "python" in base.split("/")[-1]


def test_the_image_runs_as_a_user_that_is_not_root() -> None:
    users = [args for name, args in final_stage() if name == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    names = [name for name, _ in final_stage()]
    assert names.index("USER") < names.index("ENTRYPOINT")


def test_the_default_command_is_the_http_server_bound_for_a_container_with_a_token() -> None:
    assert exec_form("ENTRYPOINT") == ["anvil", "serve"]
    args = parse(exec_form("CMD"))
    assert args["http"] and args["host"] == "0.0.0.0" and args["token_env"]


def test_the_entry_point_answers_help_and_version_here(anvil_env: dict[str, str]) -> None:
    env = anvil_subprocess_env(anvil_env)
    shown = subprocess.run([*entry_point(), "--help"], env=env, capture_output=True, text=True, timeout=60,
                           stdin=subprocess.DEVNULL)
    version = subprocess.run([*entry_point(), "--version"], env=env, capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL)
    assert shown.returncode == 0 and "get_next_task" in shown.stdout and "--stdio" in shown.stdout
    assert version.returncode == 0 and version.stdout.startswith("anvil ")


def test_the_default_command_runs_and_refuses_to_serve_without_its_token(anvil_env: dict[str, str]) -> None:
    env = anvil_subprocess_env(anvil_env)
    token_env = parse(exec_form("CMD"))["token_env"]
    env.pop(token_env, None)
    proc = subprocess.run([*entry_point(), *exec_form("CMD")], env=env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "token_env_unset" in proc.stderr and token_env in proc.stderr


def test_every_variable_the_image_sets_is_one_anvil_reads_or_the_token_it_names() -> None:
    source = anvil_source()
    token_env = parse(exec_form("CMD"))["token_env"]
    env = image_env()
    assert env["ANVIL_ROOT"] == "/project" and env["ANVIL_STATE_LAYOUT"] == "local"
    for name in env:
        if name.startswith(("PYTHON", "PIP_")):
            continue  # the interpreter's and pip's own
        assert f'"{name}"' in source, f"{name} is set in the image but anvil never reads it"
    assert token_env in DOCKERFILE.read_text(encoding="utf-8")


def test_the_build_context_leaves_out_state_tests_and_environments() -> None:
    ignored = (REPO / ".dockerignore").read_text(encoding="utf-8").split()
    for entry in (".git", ".venv", "tests", ".anvil", ".ci"):
        assert entry in ignored


# --- the catalog manifest ------------------------------------------------------------------------


def test_the_manifest_runs_the_images_stdio_server_on_the_mounted_project() -> None:
    document = manifest()
    assert (document["name"], document["type"]) == ("anvil", "server")
    args = parse(document["run"]["command"])
    assert args["stdio"] and not args["http"]
    (volume,) = document["run"]["volumes"]
    assert volume.endswith(":" + image_env()["ANVIL_ROOT"])
    assert re.fullmatch(r"[0-9a-f]{40}", document["source"]["commit"])


def test_every_placeholder_names_a_declared_parameter_and_every_variable_is_read_by_anvil() -> None:
    document = manifest()
    parameters = document["config"]["parameters"]
    placeholders = re.findall(r"\{\{anvil\.(\w+)[^}]*\}\}", MANIFEST.read_text(encoding="utf-8"))
    assert placeholders and set(placeholders) <= set(parameters["properties"])
    assert "project_path" in parameters["required"]
    source = anvil_source()
    for variable in document["config"].get("env", []):
        assert f'"{variable["name"]}"' in source


def test_the_manifests_stdio_command_serves_until_its_client_closes(anvil_env: dict[str, str]) -> None:
    handshake = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    proc = subprocess.run([*entry_point(), *manifest()["run"]["command"]], env=anvil_subprocess_env(anvil_env),
                          input=handshake + "\n", capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    reply = json.loads(proc.stdout.splitlines()[0])
    assert reply["result"]["serverInfo"]["name"] == "anvil"


def test_item_16_the_image_installs_the_postgresql_extra_and_records_its_build() -> None:
    """Issue 24 item 16: without the postgres extra, ANVIL_DATABASE_URL ended the server with exit 1."""
    import tomllib

    installs = [args for name, args in final_stage() if name == "RUN" and "pip install" in args]
    assert installs and any(re.search(r"""pip install[^&]*["']?\.\[postgres\]["']?""", args) for args in installs)
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert any(dependency.startswith("psycopg") for dependency in extras["postgres"])
    copied = " ".join(args for name, args in final_stage() if name == "COPY")
    assert "setup.py" in copied, "the build step that records the build's identity (anvil/_build.json)"


TITLE_LOWERCASE_WORDS = ("and", "for")


def test_item_16_the_manifest_passes_the_docker_mcp_registrys_own_checks() -> None:
    """Issue 24 item 16: the checks of docker/mcp-registry's `cmd/validate` that need no network: the name, the
    title (no "MCP" or "Server", every word capitalised but "and" and "for"), a pinned lowercase commit,
    parameters named after the server, secret names, and a run.user; prettier's formatting below."""
    document = manifest()
    assert re.fullmatch(r"[a-z0-9-]+", document["name"])
    title = document["about"]["title"]
    assert "MCP" not in title and "Server" not in title
    assert all(word[0] == word[0].upper() for word in title.split() if word not in TITLE_LOWERCASE_WORDS), title
    assert document["type"] == "server" and re.fullmatch(r"[a-f0-9]{40}", str(document["source"]["commit"]).lower())
    for variable in document["config"].get("env", []):
        value = str(variable.get("value", ""))
        assert not value.startswith("{{") or value.startswith("{{" + document["name"] + "."), value
    for secret in document["config"].get("secrets", []):
        assert re.fullmatch(r"[A-Za-z0-9_-]+\.[A-Za-z0-9._-]+", secret["name"])
    user = document["run"]["user"]
    assert user == "{{anvil.container_user}}" and "container_user" in document["config"]["parameters"]["properties"]


def test_item_16_the_manifest_is_formatted_as_prettier_formats_it() -> None:
    from tests.external import PRETTIER_HOWTO, prettier, require

    found = prettier()
    require(found, "prettier", PRETTIER_HOWTO)
    checked = subprocess.run([str(found), "--check", str(MANIFEST)], capture_output=True, text=True, timeout=120,
                             stdin=subprocess.DEVNULL, cwd=REPO)
    assert checked.returncode == 0, checked.stdout + checked.stderr


# --- a real build, where a daemon answers ----------------------------------------------------------


def docker_daemon() -> bool:
    docker = shutil.which("docker")
    if docker is None:
        return False
    probe = subprocess.run([docker, "info"], capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    return probe.returncode == 0


@pytest.mark.skipif(not docker_daemon(), reason="no Docker daemon answers here (the files are checked statically)")
def test_the_image_builds_and_its_entry_point_runs() -> None:
    tag = "anvil-test:packaging"
    build = subprocess.run(["docker", "build", "-t", tag, str(REPO)], capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stderr[-3000:]
    try:
        shown = subprocess.run(["docker", "run", "--rm", tag, "--help"], capture_output=True, text=True, timeout=120)
        who = subprocess.run(["docker", "run", "--rm", "--entrypoint", "id", tag, "-u"], capture_output=True,
                             text=True, timeout=120)
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, timeout=120)
    assert shown.returncode == 0 and "get_next_task" in shown.stdout
    assert who.stdout.strip() not in ("", "0")
