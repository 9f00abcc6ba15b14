"""docker-compose.yml and the Dockerfile, checked statically (no Docker engine runs here).

The compose file is validated against the Compose Specification JSON schema vendored in
tests/data/compose_spec.json (taken from the docker-compose 1.29.2 wheel on PyPI, see
tests/data/README.md); its services are then checked for what the local setup promises:
pinned images, a healthy MinIO before anything uses it, a versioned bucket, and the three
s3spill services pointed at MinIO.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.deploy.policy_check import MODULE_DIR, REPO, blocks, load_module

COMPOSE = REPO / "docker-compose.yml"
DOCKERFILE = REPO / "Dockerfile"
SCHEMA = REPO / "tests" / "data" / "compose_spec.json"
S3SPILL_SERVICES = ("doctor", "demo", "gc")
NON_ROOT_UID = 10001


def _schema_errors(document: Any) -> list[str]:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    validator = jsonschema.Draft201909Validator(schema, format_checker=jsonschema.FormatChecker())
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    return loaded


def test_vendored_schema_is_a_valid_json_schema() -> None:
    """The vendored Compose Specification schema is itself a valid draft 2019-09 schema."""
    jsonschema.Draft201909Validator.check_schema(json.loads(SCHEMA.read_text(encoding="utf-8")))


def test_compose_file_matches_the_compose_specification(compose: dict[str, Any]) -> None:
    """docker-compose.yml validates against the Compose Specification schema with no error."""
    assert _schema_errors(compose) == []


def test_schema_rejects_a_misspelt_service_key(compose: dict[str, Any]) -> None:
    """The schema is strict enough to catch a typo (healtcheck), so passing it means something."""
    broken = copy.deepcopy(compose)
    broken["services"]["minio"]["healtcheck"] = broken["services"]["minio"].pop("healthcheck")
    assert any("healtcheck" in error for error in _schema_errors(broken))


def _image_is_pinned(image: str) -> bool:
    if "@sha256:" in image:
        return re.search(r"@sha256:[0-9a-f]{64}$", image) is not None
    name, _, tag = image.rpartition(":")
    return bool(name) and "/" not in tag and tag not in {"", "latest", "edge", "stable"}


def test_every_image_is_pinned(compose: dict[str, Any]) -> None:
    """Each service image has an exact tag or digest; MinIO and mc are pinned to RELEASE tags."""
    services = compose["services"]
    for name, service in services.items():
        assert _image_is_pinned(service["image"]), (name, service["image"])
    release = re.compile(r":RELEASE\.\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}Z$")
    assert release.search(services["minio"]["image"])
    assert release.search(services["minio-init"]["image"])
    for name in S3SPILL_SERVICES:
        assert "build" in services[name], f"{name} must build the local image, not pull one"


def test_minio_is_healthchecked_before_init(compose: dict[str, Any]) -> None:
    """MinIO has a healthcheck, and the init job waits for it to be healthy."""
    services = compose["services"]
    health = services["minio"]["healthcheck"]
    assert health["test"][0] in {"CMD", "CMD-SHELL"} and "ready" in " ".join(health["test"])
    assert services["minio-init"]["depends_on"]["minio"]["condition"] == "service_healthy"


def test_init_creates_the_bucket_and_enables_versioning(compose: dict[str, Any]) -> None:
    """The one-shot init creates the store's bucket and turns versioning on for that same bucket."""
    services = compose["services"]
    script = " ".join(services["minio-init"]["command"])
    bucket = services["doctor"]["environment"]["S3SPILL_STORE"].removeprefix("s3://").split("/")[0]
    assert f"mc mb --ignore-existing local/{bucket}" in script
    assert f"mc version enable local/{bucket}" in script
    assert services["minio-init"]["restart"] == "no"


def _depends_on_init(services: dict[str, Any], name: str, seen: frozenset[str] = frozenset()) -> bool:
    deps = services[name].get("depends_on", {})
    if deps.get("minio-init", {}).get("condition") == "service_completed_successfully":
        return True
    return any(
        dep not in seen and _depends_on_init(services, dep, seen | {name})
        for dep, spec in deps.items()
        if spec.get("condition") == "service_completed_successfully"
    )


def test_s3spill_services_run_doctor_demo_and_gc_against_minio(compose: dict[str, Any]) -> None:
    """doctor, demo and gc run the right commands against MinIO, after the bucket exists."""
    services = compose["services"]
    commands = {name: services[name]["command"] for name in S3SPILL_SERVICES}
    assert commands["doctor"] == ["doctor"]
    assert commands["demo"] == ["demo", "--store", "s3://s3spill/dev"]
    assert commands["gc"][-4:] == ["gc", "run", "--apply", "--all"]
    for name in S3SPILL_SERVICES:
        env = services[name]["environment"]
        assert env["AWS_ENDPOINT_URL"] == "http://minio:9000"
        assert env["S3SPILL_STORE"].startswith("s3://")
        assert _depends_on_init(services, name), f"{name} may start before the bucket exists"


def test_s3spill_services_are_locked_down(compose: dict[str, Any]) -> None:
    """The s3spill containers run as the image's non-root uid, read-only, with no capabilities."""
    for name in S3SPILL_SERVICES:
        service = compose["services"][name]
        assert service["user"] == f"{NON_ROOT_UID}:{NON_ROOT_UID}"
        assert service["read_only"] is True
        assert service["cap_drop"] == ["ALL"]
        assert "no-new-privileges:true" in service["security_opt"]


def test_ports_are_published_on_loopback_only(compose: dict[str, Any]) -> None:
    """Every published port is bound to 127.0.0.1, never to all interfaces."""
    for service in compose["services"].values():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), port


# ------------------------------------------------------------------------------------------
# Dockerfile


def _stages(text: str) -> list[list[tuple[str, str]]]:
    """Instructions grouped by stage, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", text)
    stages: list[list[tuple[str, str]]] = []
    for raw in joined.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        if word.upper() == "FROM":
            stages.append([])
        if stages:
            stages[-1].append((word.upper(), rest.strip()))
    return stages


def test_dockerfile_is_multi_stage_on_a_digest_pinned_base() -> None:
    """Both stages start from the same python:3.11 slim base pinned by exact tag and digest."""
    stages = _stages(DOCKERFILE.read_text(encoding="utf-8"))
    assert len(stages) >= 2
    bases = [stage[0][1].split()[0] for stage in stages]
    pinned = re.compile(r"^python:3\.11\.\d+-slim(-[a-z]+)?@sha256:[0-9a-f]{64}$")
    assert all(pinned.match(base) for base in bases), bases
    assert len(set(bases)) == 1


def test_final_stage_is_non_root_without_build_tools() -> None:
    """The runtime stage copies the built venv, drops pip, installs no compiler and runs as uid 10001."""
    final = _stages(DOCKERFILE.read_text(encoding="utf-8"))[-1]
    text = " ".join(f"{word} {rest}" for word, rest in final)
    users = [rest for word, rest in final if word == "USER"]
    assert users and users[-1].split(":")[0] == str(NON_ROOT_UID)
    assert "COPY --from=build" in text
    assert not re.search(r"apt-get install|build-essential|gcc|pip install", text)
    assert "pip uninstall" in text
    entrypoint = [rest for word, rest in final if word == "ENTRYPOINT"]
    assert entrypoint and json.loads(entrypoint[-1]) == ["s3spill"]


def test_image_uid_matches_the_cronjob_and_compose(compose: dict[str, Any]) -> None:
    """The uid the image runs as is the one the Kubernetes CronJob and compose expect."""
    job = blocks(load_module(MODULE_DIR), "resource", "kubernetes_cron_job_v1")["gc"]
    pod = job["spec"][0]["job_template"][0]["spec"][0]["template"][0]["spec"][0]
    assert pod["security_context"][0]["run_as_user"] == NON_ROOT_UID
    assert pod["container"][0]["security_context"][0]["run_as_user"] == NON_ROOT_UID
    assert compose["services"]["gc"]["user"] == f"{NON_ROOT_UID}:{NON_ROOT_UID}"


def test_docker_build_context_is_minimal() -> None:
    """.dockerignore excludes everything except what the build stage copies."""
    lines = [
        line.strip()
        for line in (REPO / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines[0] == "*"
    allowed = {line.removeprefix("!").rstrip("/") for line in lines if line.startswith("!")}
    assert allowed == {"pyproject.toml", "README.md", "s3spill"}
    copied = re.findall(r"^COPY (?!--from)(.+) \S+$", DOCKERFILE.read_text(encoding="utf-8"), re.M)
    for sources in copied:
        for source in sources.split():
            assert Path(source).parts[0] in allowed, source
