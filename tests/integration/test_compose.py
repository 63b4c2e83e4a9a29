"""docker-compose.yml and the Dockerfile: the stack agrees with pyproject's pins and with what the code reads.

The compose file is rendered by Compose itself (``docker compose config --format json``, else the
legacy ``docker-compose config``) with a ``.env`` made from ``.env.example`` the way docs/deploy.md
says, and the rendered services are checked: versions, the Airflow connections (resolved by the
hooks the platform uses), the settings' environment variables, shared volumes, health checks and
start order. No Docker engine is needed; the test skips only when neither Compose is installed.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker-compose.yml"
DOCKERFILE = REPO / "Dockerfile"
ENV_EXAMPLE = REPO / ".env.example"
SETTINGS = REPO / "plugins" / "contract_platform" / "settings.py"

AIRFLOW_SERVICES = (
    "airflow-init",
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
)
LONG_RUNNING_AIRFLOW = AIRFLOW_SERVICES[1:]
CELERY_WORKERS = ("airflow-worker-1", "airflow-worker-2")  # the celery profile
REQUIRED_SERVICES = ("postgres", "rabbitmq", "spark-master", "spark-worker", *AIRFLOW_SERVICES)
PATH_SETTINGS = ("CONTRACT_PLATFORM_HOME", "CONTRACT_ARCHIVE_DIR", "CONTRACT_DOCS_DIR")
SECRET = re.compile(r"(KEY|SECRET|PASSWORD)$")
TEST_SECRET = "ci-placeholder-{name}-0123456789"
FERNET = "m1Qqk3WcR0L5nq2yA0r9s2zv3K6P8m0b1c2d3e4f5g4="  # a well-formed key that protects nothing


# --- rendering -----------------------------------------------------------------------------------


def compose_command() -> tuple[list[str], bool]:
    """(argv prefix, renders JSON): the Compose v2 plugin if present, else legacy docker-compose."""
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"], True
    legacy = shutil.which("docker-compose")
    if legacy:
        return [legacy], False
    pytest.skip(
        "neither `docker compose` (the Compose v2 plugin) nor `docker-compose` is on PATH; "
        "install one (Debian: apt-get install -y docker-compose) to check docker-compose.yml"
    )


def env_example() -> dict[str, str]:
    values = {}
    for line in ENV_EXAMPLE.read_text("utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            values[name.strip()] = value.strip()
    return values


def filled_env() -> dict[str, str]:
    """.env.example with its empty secrets filled, as docs/deploy.md tells a user to do."""
    values = env_example()
    for name, value in values.items():
        if not value:
            values[name] = FERNET if name == "FERNET_KEY" else TEST_SECRET.format(name=name.lower())
    return values


def render(tmp_path: Path, env: dict[str, str], profiles: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    command, as_json = compose_command()
    env_file = tmp_path / ".env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in env.items()), "utf-8")
    argv = [*command, "--env-file", str(env_file), "-f", str(COMPOSE_FILE), "--project-directory", str(REPO)]
    for profile in profiles:
        argv += ["--profile", profile]
    argv.append("config")
    if as_json:
        argv += ["--format", "json"]
    # A clean environment: the caller's AIRFLOW_CONN_* or passwords must not leak into the rendering.
    clean = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=clean, cwd=REPO)


def rendered(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, f"compose config failed:\n{result.stderr}"
    return dict(json.loads(result.stdout) if result.stdout.lstrip().startswith("{") else yaml.safe_load(result.stdout))


@pytest.fixture(scope="module")
def config(tmp_path_factory) -> dict[str, Any]:
    return rendered(render(tmp_path_factory.mktemp("compose"), filled_env()))


@pytest.fixture(scope="module")
def celery_config(tmp_path_factory) -> dict[str, Any]:
    """The stack with the celery profile, as docs/deploy.md#celeryexecutor sets it in .env."""
    env = filled_env() | {"AIRFLOW_EXECUTOR": "CeleryExecutor"}
    return rendered(render(tmp_path_factory.mktemp("compose-celery"), env, profiles=("celery",)))


def service(config: dict[str, Any], name: str) -> dict[str, Any]:
    return dict(config["services"][name])


def environment(svc: dict[str, Any]) -> dict[str, str]:
    env = svc.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.partition("=")[::2] for item in env)
    return {key: "" if value is None else str(value) for key, value in env.items()}


def mounts(svc: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """target -> (type, source), from the short (v1) or long (v2) volume syntax."""
    found = {}
    for volume in svc.get("volumes", []):
        if isinstance(volume, str):
            source, target = volume.split(":")[:2]
            kind = "bind" if source.startswith(("/", ".")) else "volume"
        else:
            source, target, kind = volume.get("source", ""), volume["target"], volume.get("type", "volume")
        found[target] = (kind, source)
    return found


def depends(svc: dict[str, Any]) -> dict[str, str]:
    value = svc.get("depends_on") or {}
    if isinstance(value, list):
        return {name: "service_started" for name in value}
    return {name: (spec or {}).get("condition", "service_started") for name, spec in value.items()}


# --- what the repository pins and reads ---------------------------------------------------------


def pyproject_requirement(name: str) -> Requirement:
    data = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    for text in data["project"]["dependencies"]:
        requirement = Requirement(text)
        if requirement.name == name:
            return requirement
    raise AssertionError(f"{name} is not a dependency in pyproject.toml")


def pinned_pyspark() -> str:
    (spec,) = pyproject_requirement("pyspark").specifier
    assert spec.operator == "==", f"pyspark must be pinned with ==, not {spec}"
    return spec.version


def settings_env_names() -> set[str]:
    """Every environment variable contract_platform.settings reads (os.environ.get / os.environ[...] / getenv)."""
    names = set()
    for node in ast.walk(ast.parse(SETTINGS.read_text("utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "getenv"):
            args = node.args
        elif isinstance(node, ast.Subscript):
            args = [node.slice]
        else:
            continue
        names |= {
            a.value for a in args[:1] if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.isupper()
        }
    return names


def dockerfile_stages() -> dict[str, str]:
    """stage name -> base image, with the global ARG defaults substituted."""
    args: dict[str, str] = {}
    stages: dict[str, str] = {}
    for line in DOCKERFILE.read_text("utf-8").splitlines():
        if match := re.match(r"^ARG\s+(\w+)=(\S+)", line):
            args.setdefault(match.group(1), match.group(2))
        elif match := re.match(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?", line, re.IGNORECASE):
            image = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], match.group(1))
            stages[match.group(2) or image] = image
    return stages


# --- tests ---------------------------------------------------------------------------------------


def test_every_service_of_the_stack_is_there(config):
    missing = set(REQUIRED_SERVICES) - set(config["services"])
    assert not missing, f"docker-compose.yml lacks {sorted(missing)}"
    assert re.fullmatch(r"rabbitmq:[\w.\-]*management", service(config, "rabbitmq")["image"])


def test_airflow_image_follows_the_pyproject_pin():
    base = dockerfile_stages()["airflow"]
    match = re.fullmatch(r"apache/airflow:(\d+\.\d+\.\d+)-python(\d+\.\d+)", base)
    assert match, f"the airflow stage must build FROM apache/airflow:<version>-python<X.Y>, not {base}"
    airflow_version, python_version = match.groups()
    pin = pyproject_requirement("apache-airflow").specifier
    assert pin.contains(airflow_version), f"image Airflow {airflow_version} is outside pyproject's apache-airflow{pin}"
    requires_python = SpecifierSet(
        tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]["requires-python"]
    )
    assert requires_python.contains(f"{python_version}.0"), f"image Python {python_version} outside {requires_python}"


def test_airflow_services_run_the_platform_image(config):
    images = {service(config, name)["image"] for name in AIRFLOW_SERVICES}
    assert len(images) == 1, f"Airflow services run different images: {images}"
    for name in AIRFLOW_SERVICES:
        build = service(config, name)["build"]
        assert Path(build["context"]).resolve() == REPO and build.get("target") == "airflow", name
        assert environment(service(config, name))["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor", name


def test_the_default_stack_starts_no_celery_service(config):
    """Compose v2 leaves an inactive profile's services out; docker-compose 1.29 lists them with their profile."""
    for name in ("redis", *CELERY_WORKERS):
        if name in config["services"]:
            assert service(config, name).get("profiles") == ["celery"], name


def test_the_celery_profile_runs_two_prefork_workers_on_redis(celery_config):
    from contract_platform_airflow.settings import celery_environment

    config = celery_config
    assert {"redis", *CELERY_WORKERS} <= set(config["services"])
    names = (*AIRFLOW_SERVICES, *CELERY_WORKERS)
    for name in names:
        env = environment(service(config, name))
        assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor", name
        expected = celery_environment("redis://redis:6379/0", env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"])
        assert {key: env.get(key) for key in expected} == expected, name
    images = {service(config, name)["image"] for name in names}
    assert len(images) == 1, f"workers and Airflow services run different images: {images}"
    hostnames = [service(config, name).get("hostname") for name in CELERY_WORKERS]
    assert all(hostnames) and len(set(hostnames)) == len(hostnames), hostnames
    scheduler_mounts = mounts(service(config, "airflow-scheduler"))
    for name in CELERY_WORKERS:
        worker = service(config, name)
        command = " ".join(worker["command"])
        assert "airflow celery worker" in command and "--pool" not in command, command  # the default prefork pool
        assert depends(worker).get("redis") == "service_healthy", name
        for setting in PATH_SETTINGS:
            path = environment(worker)[setting]
            assert mounts(worker).get(path) == scheduler_mounts[path], f"{name} does not share {setting}"


def test_spark_master_and_worker_run_the_pinned_pyspark_version(config):
    version = pinned_pyspark()
    assert service(config, "spark-master")["image"] == f"apache/spark:{version}"
    stages = dockerfile_stages()
    assert stages["spark-dist"] == f"apache/spark:{version}"
    worker = service(config, "spark-worker")
    assert worker["build"].get("target") == "spark-worker"
    assert (
        "SPARK_VERSION" not in (worker["build"].get("args") or {})
        or worker["build"]["args"]["SPARK_VERSION"] == version
    )
    dockerfile = DOCKERFILE.read_text("utf-8")
    assert re.search(r"^FROM airflow AS spark-worker$", dockerfile, re.MULTILINE), (
        "the worker must share Airflow's Python"
    )
    assert "COPY --from=spark-dist" in dockerfile and "/opt/spark" in dockerfile


def test_dockerfile_installs_java_and_the_platform():
    dockerfile = DOCKERFILE.read_text("utf-8")
    assert "openjdk-17-jre-headless" in dockerfile
    assert re.search(
        r"pip install [^\n]*\"apache-airflow==\$\{AIRFLOW_VERSION\}\" \"/opt/contract-platform/src\[celery\]\"",
        dockerfile,
    )
    for folder in ("plugins", "contracts", "dags", "spark_jobs"):
        assert re.search(rf"^COPY [^\n]*\b{folder} ", dockerfile, re.MULTILINE), f"the image does not copy {folder}/"
    ignore = [line.strip() for line in (REPO / ".dockerignore").read_text("utf-8").splitlines()]
    assert "*" in ignore and not any(line.startswith("!.env") for line in ignore), (
        ".env must never enter the build context"
    )


def test_connections_are_set_on_every_airflow_service_under_the_hooks_ids(config):
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    from contract_platform_airflow.hooks.rabbitmq import RabbitMQHook
    from contract_platform_airflow.hooks.registry import RegistryHook

    conn_ids = (SparkSubmitHook.default_conn_name, RabbitMQHook.default_conn_name, RegistryHook.default_conn_name)
    assert conn_ids == ("spark_default", "rabbitmq_default", "contract_registry_default")
    for name in AIRFLOW_SERVICES:
        env = environment(service(config, name))
        missing = [
            f"AIRFLOW_CONN_{conn_id.upper()}" for conn_id in conn_ids if not env.get(f"AIRFLOW_CONN_{conn_id.upper()}")
        ]
        assert not missing, f"{name} lacks {missing}"
    first = environment(service(config, AIRFLOW_SERVICES[0]))
    for name in AIRFLOW_SERVICES[1:]:
        env = environment(service(config, name))
        same = ("AIRFLOW__CORE__FERNET_KEY", "AIRFLOW__API_AUTH__JWT_SECRET", "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN")
        assert {k: env[k] for k in same} == {k: first[k] for k in same}, f"{name} disagrees with {AIRFLOW_SERVICES[0]}"


def test_connections_resolve_to_the_compose_services(config, monkeypatch):
    """Each hook, given the rendered AIRFLOW_CONN_* values, reaches the right service, port and mode."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    from contract_platform_airflow.hooks.rabbitmq import RabbitMQHook
    from contract_platform_airflow.hooks.registry import RegistryHook

    env = environment(service(config, "airflow-scheduler"))
    for key, value in env.items():
        if key.startswith("AIRFLOW_CONN_"):
            monkeypatch.setenv(key, value)
    secrets = filled_env()

    spark = SparkSubmitHook(conn_id=SparkSubmitHook.default_conn_name)._connection
    master_command = " ".join(service(config, "spark-master")["command"])
    port = re.search(r"--port (\d+)", master_command)
    assert spark["master"] == f"spark://spark-master:{port.group(1) if port else 7077}"
    assert spark["deploy_mode"] == "client"
    assert "spark-master" in config["services"]

    registry = RegistryHook().get_url()
    assert registry == f"postgresql+psycopg2://registry:{secrets['REGISTRY_DB_PASSWORD']}@registry-db:5432/registry"
    registry_db = environment(service(config, "registry-db"))
    assert (registry_db["POSTGRES_USER"], registry_db["POSTGRES_DB"]) == ("registry", "registry")
    assert registry_db["POSTGRES_PASSWORD"] == secrets["REGISTRY_DB_PASSWORD"]
    assert env["CONTRACT_REGISTRY_URL"] == registry

    broker = RabbitMQHook().get_url()
    user, password = secrets["RABBITMQ_USER"], secrets["RABBITMQ_PASSWORD"]
    assert broker == f"amqp://{user}:{password}@rabbitmq:5672/%2F"
    rabbit = environment(service(config, "rabbitmq"))
    assert (rabbit["RABBITMQ_DEFAULT_USER"], rabbit["RABBITMQ_DEFAULT_PASS"]) == (user, password)
    assert env["CONTRACT_RABBITMQ_URL"] == broker


def test_the_settings_environment_is_set_and_the_paths_are_shared_volumes(config):
    names = settings_env_names()
    assert set(PATH_SETTINGS) | {"CONTRACT_CATALOG", "CONTRACT_REGISTRY_URL", "CONTRACT_RABBITMQ_URL"} <= names
    worker = service(config, "spark-worker")
    worker_env, worker_mounts = environment(worker), mounts(worker)
    for name in AIRFLOW_SERVICES:
        svc = service(config, name)
        env, svc_mounts = environment(svc), mounts(svc)
        unset = sorted(n for n in names if not env.get(n))
        assert not unset, f"{name} does not set {unset}"
        for setting in PATH_SETTINGS:
            path = env[setting]
            assert worker_env.get(setting) == path, f"{setting} differs between {name} and spark-worker"
            assert path in svc_mounts and svc_mounts[path][0] == "volume", f"{name}: {setting}={path} is not a volume"
            assert worker_mounts.get(path) == svc_mounts[path], f"{setting}: spark-worker does not mount {path}"
            assert svc_mounts[path][1] in config["volumes"]
    assert len({worker_mounts[environment(worker)[s]][1] for s in PATH_SETTINGS}) == len(PATH_SETTINGS)


def test_the_dead_letter_naming_net_is_the_platform_s_default(config):
    from contract_platform.retirement.discovery import DEFAULT_DEAD_LETTER_SUFFIXES

    for name in AIRFLOW_SERVICES:
        env = environment(service(config, name))
        assert tuple(env["CONTRACT_DEAD_LETTER_SUFFIXES"].split(",")) == DEFAULT_DEAD_LETTER_SUFFIXES, name
        assert env["CONTRACT_RABBITMQ_MANAGEMENT_URL"] == "http://rabbitmq:15672", name


def test_health_checks_and_start_order(config):
    for name in ("postgres", "registry-db", "rabbitmq", "spark-master", "spark-worker", *LONG_RUNNING_AIRFLOW):
        healthcheck = service(config, name).get("healthcheck") or {}
        assert healthcheck.get("test") and not healthcheck.get("disable"), f"{name} has no health check"
    init = service(config, "airflow-init")
    assert depends(init) == {
        "postgres": "service_healthy",
        "registry-db": "service_healthy",
        "rabbitmq": "service_healthy",
    }
    script = " ".join(init.get("command") or [])
    assert "airflow db migrate" in script and "airflow users create" in script and "--role Admin" in script
    for name in LONG_RUNNING_AIRFLOW:
        order = depends(service(config, name))
        assert order.get("airflow-init") == "service_completed_successfully", name
        assert order.get("postgres") == "service_healthy" and order.get("registry-db") == "service_healthy", name
    assert depends(service(config, "spark-worker")) == {"spark-master": "service_healthy"}
    assert (
        service(config, "airflow-scheduler").get("hostname") == "airflow-scheduler"
    )  # Spark executors call the driver


def test_secrets_are_required_and_never_committed(tmp_path):
    example = env_example()
    secrets = sorted(name for name in example if SECRET.search(name))
    assert {"FERNET_KEY", "JWT_SECRET", "AIRFLOW_DB_PASSWORD", "REGISTRY_DB_PASSWORD", "RABBITMQ_PASSWORD"} <= set(
        secrets
    )
    assert {name: example[name] for name in secrets} == dict.fromkeys(secrets, ""), ".env.example must not hold secrets"
    result = render(tmp_path, {k: v for k, v in example.items() if v})
    assert result.returncode != 0, "compose rendered without secrets: a secret has a default"
    assert ".env.example" in result.stderr and re.search(r"set \w+ in \.env", result.stderr)


def test_no_secret_value_is_written_into_the_compose_file():
    text = COMPOSE_FILE.read_text("utf-8")
    for name in env_example():
        if SECRET.search(name):
            assert re.search(rf"\$\{{{name}:\?", text), f"{name} must be read as ${{{name}:?...}}"
            assert not re.search(rf"\$\{{{name}:-", text), f"{name} must not have a default"


def test_two_activity_recorders_share_one_queue_and_its_limits(config):
    """One records, the other waits to take over (docs/retirement-audit.md#restarts-standby-and-the-buffer):
    the same command and settings, so the same queue, registry and buffer limits, each with its health check."""
    from contract_platform import settings

    first, second = service(config, "activity-recorder"), service(config, "activity-recorder-standby")
    assert first["command"] == second["command"] and "contractctl record-activity" in " ".join(first["command"])
    assert environment(first) == environment(second)
    assert environment(first)["CONTRACT_RECORDER_MAX_EVENTS"] == str(settings.DEFAULT_RECORDER_MAX_EVENTS)
    assert environment(first)["CONTRACT_RECORDER_MAX_BYTES"] == str(settings.DEFAULT_RECORDER_MAX_BYTES)
    for recorder in (first, second):
        assert recorder["healthcheck"]["test"][-2:] == ["record-activity", "--status"]
        assert recorder.get("restart") == "unless-stopped"
