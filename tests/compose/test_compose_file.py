"""docker-compose.yml, validated by the real Compose binary and checked for consistency.

Each check reads the model Compose itself resolved (``config --format json``): what a user's
``docker compose up`` would run, with anchors merged and variables filled. The checks are the
stack's promises: both cluster variants valid, images pinned, ports on loopback, health checks,
named volumes, no secret without .env, connections that point at the services that serve them.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import stat
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import COMPOSE_FILE, ENV_EXAMPLE, ROOT, VARIANTS, read_env_file, run_compose, variant_env

AIRFLOW_COMPONENTS = {"airflow-apiserver": "api-server", "airflow-scheduler": "scheduler",
                      "airflow-dag-processor": "dag-processor", "airflow-triggerer": "triggerer"}
#: The connection ids and types fixed by the project's contracts (contracts.md).
CONTRACT_CONNECTIONS = {"kafka_default": "kafka", "zookeeper_default": "generic",
                        "prometheus_default": "http", "spark_default": "spark",
                        "kafka_ops_state": "generic"}
BROKER_SERVICES = {"zookeeper": [f"kafka-{i}" for i in range(1, 5)],
                   "kraft": [f"kraft-{i}" for i in range(1, 4)]}
POOLS_PATH = "/opt/kafka-ops/config/pools.yaml"
#: Secrets compose must refuse to run without (each ${VAR:?...} in the file).
REQUIRED = ["POSTGRES_PASSWORD", "AIRFLOW_FERNET_KEY", "AIRFLOW_JWT_SECRET",
            "AIRFLOW_API_SECRET_KEY", "AIRFLOW_ADMIN_PASSWORD", "AIRFLOW_ONCALL_PASSWORD",
            "MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD", "KAFKA_OPS_S3_ACCESS_KEY",
            "KAFKA_OPS_S3_SECRET_KEY", "KAFKA_OPS_CLUSTER"]


def services(model: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return model["services"]


def env_of(service: dict[str, Any]) -> dict[str, str]:
    return {k: v for k, v in (service.get("environment") or {}).items() if v is not None}


def connections(service: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The AIRFLOW_CONN_* connections of a service, parsed by Airflow's own Connection."""
    from airflow.models.connection import Connection

    conns = {}
    for key, value in env_of(service).items():
        if key.startswith("AIRFLOW_CONN_"):
            conn_id = key.removeprefix("AIRFLOW_CONN_").lower()
            conn = Connection.from_json(value, conn_id=conn_id)
            conns[conn_id] = {"conn_type": conn.conn_type, "host": conn.host, "port": conn.port,
                              "schema": conn.schema, "login": conn.login,
                              "password": conn.password, "extra": conn.extra_dejson}
    return conns


def command_option(command: list[str], option: str) -> str:
    return command[command.index(option) + 1]


# -- Compose validates every variant -----------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
def test_compose_validates_each_variant(variant: str) -> None:
    result = run_compose("config", "-q", env=variant_env(variant))
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variant_runs_exactly_its_own_cluster(rendered: dict, variant: str) -> None:
    names = set(services(rendered[variant]))
    other = "kraft" if variant == "zookeeper" else "zookeeper"
    assert set(BROKER_SERVICES[variant]) <= names
    assert not set(BROKER_SERVICES[other]) & names
    assert ("zookeeper" in names) == (variant == "zookeeper")
    assert {"prometheus", "postgres", "minio", "minio-init", "airflow-init", "spark-master",
            "spark-worker", *AIRFLOW_COMPONENTS} <= names


# -- images ----------------------------------------------------------------------------------
def _pinned(image: str) -> bool:
    name, _, tag = image.rpartition(":")
    return bool(name) and "/" not in tag and tag not in ("", "latest") and "@" not in name


def _dockerfile_bases(path: Path) -> list[str]:
    """FROM images of a Dockerfile with ARG defaults substituted."""
    args, bases = {}, []
    for line in path.read_text().splitlines():
        if m := re.match(r"ARG (\w+)=(\S+)", line):
            args[m.group(1)] = m.group(2)
        elif m := re.match(r"FROM (\S+)", line):
            bases.append(re.sub(r"\$\{(\w+)\}", lambda g: args[g.group(1)], m.group(1)))
    return bases


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_image_is_pinned(rendered: dict, variant: str) -> None:
    for name, svc in services(rendered[variant]).items():
        assert _pinned(svc["image"]), f"{name}: image {svc['image']!r} has no pinned tag"
        build = svc.get("build")
        if build:
            # Built locally, never pulled: a registry namespace we do not own could serve
            # anything under our image's name.
            assert svc.get("pull_policy") == "build", f"{name} may be pulled instead of built"
            for arg, value in build.get("args", {}).items():
                if arg.endswith("_IMAGE"):
                    assert _pinned(value), f"{name}: build arg {arg}={value!r} is not pinned"
            dockerfile = Path(build["context"]) / build["dockerfile"]
            for base in _dockerfile_bases(dockerfile):
                assert _pinned(base), f"{dockerfile}: FROM {base!r} is not pinned"
    assert "latest" not in COMPOSE_FILE.read_text()


def test_the_kafka_ops_image_matches_the_projects_pins(rendered: dict) -> None:
    """The image installs the project with the Airflow the project pins, on a Python it
    supports, and copies only files that exist (the build would fail on a missing one)."""
    svc = services(rendered["zookeeper"])["airflow-scheduler"]
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    airflow_pin = next(d for d in pyproject["project"]["optional-dependencies"]["airflow"]
                       if d.startswith("apache-airflow=="))
    version = airflow_pin.split("==")[1]
    base = svc["build"]["args"]["AIRFLOW_IMAGE"]
    assert re.fullmatch(rf"apache/airflow:{re.escape(version)}-python3\.(1[1-9])", base), base
    dockerfile = (ROOT / svc["build"]["dockerfile"]).read_text()
    assert f"ARG AIRFLOW_VERSION={version}" in dockerfile
    assert f"ARG AIRFLOW_IMAGE={base}" in dockerfile
    for src in re.findall(r"^COPY (?:--\S+ )*(.+) \S+$", dockerfile, re.MULTILINE):
        for path in src.split():
            assert (ROOT / path).exists(), f"the Dockerfile copies {path}, which does not exist"


def test_the_kafka_ops_image_owns_its_volume_mount_points(rendered: dict) -> None:
    """A named volume starts as a copy of the image's directory; one the image lacks is
    created root-owned, and the Airflow user could not write there."""
    svcs = services(rendered["zookeeper"])
    dockerfile = (ROOT / svcs["airflow-scheduler"]["build"]["dockerfile"]).read_text()
    made = set(re.findall(r"(/opt/\S+)", " ".join(re.findall(r"mkdir -p ([^&]+)", dockerfile))))
    for name, svc in svcs.items():
        if svc["image"] != svcs["airflow-scheduler"]["image"]:
            continue
        for vol in svc.get("volumes") or []:
            if vol["type"] == "volume" and vol["target"] != "/opt/airflow/logs":  # in the base
                assert vol["target"] in made, f"{name}: {vol['target']} not created in the image"


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_broker_image_owns_the_log_dir(rendered: dict, variant: str) -> None:
    for name in BROKER_SERVICES[variant]:
        svc = services(rendered[variant])[name]
        log_dir = env_of(svc)["KAFKA_LOG_DIRS"]
        assert any(v["target"] == log_dir and v["type"] == "volume" for v in svc["volumes"])
        dockerfile = (Path(svc["build"]["context"]) / svc["build"]["dockerfile"]).read_text()
        assert f"mkdir -p {log_dir} && chown appuser {log_dir}" in dockerfile


# -- network, health, volumes ---------------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
def test_published_ports_listen_on_loopback_only(rendered: dict, variant: str) -> None:
    published = 0
    for name, svc in services(rendered[variant]).items():
        for port in svc.get("ports") or []:
            assert port.get("host_ip") == "127.0.0.1", f"{name} publishes {port} beyond loopback"
            published += 1
    assert published >= 5


@pytest.mark.parametrize("variant", VARIANTS)
def test_long_running_services_have_health_checks(rendered: dict, variant: str) -> None:
    svcs = services(rendered[variant])
    for name, svc in svcs.items():
        if svc.get("restart") == "no":  # one-shot: others wait for it to complete
            waiting = [n for n, s in svcs.items()
                       if (s.get("depends_on") or {}).get(name, {}).get("condition")
                       == "service_completed_successfully"]
            assert waiting, f"one-shot {name} is awaited by no service"
        else:
            test = (svc.get("healthcheck") or {}).get("test")
            assert test and test[0] in ("CMD", "CMD-SHELL"), f"{name} has no health check"
            assert svc.get("restart") == "unless-stopped", name
        for dep, how in (svc.get("depends_on") or {}).items():
            assert how["condition"] in ("service_healthy", "service_completed_successfully"), \
                f"{name} starts when {dep} merely started"


@pytest.mark.parametrize("variant", VARIANTS)
def test_state_lives_in_named_volumes_and_binds_are_read_only(rendered: dict,
                                                              variant: str) -> None:
    model = rendered[variant]
    for name, svc in services(model).items():
        for vol in svc.get("volumes") or []:
            if vol["type"] == "volume":
                assert vol["source"] in model["volumes"], f"{name}: {vol['source']} undeclared"
            else:
                assert vol["type"] == "bind" and vol.get("read_only"), \
                    f"{name}: a writable bind mount {vol['source']}"
                source = Path(vol["source"])
                assert source.is_relative_to(ROOT), f"{name} mounts {source} from outside"
                if source.relative_to(ROOT).parts[0] not in ("dags", "plugins"):
                    assert source.exists(), f"{name} mounts {source}, which does not exist"
    data = {"postgres": "/var/lib/postgresql/data", "minio": "/data",
            "prometheus": "/prometheus"}
    data.update({b: "/var/lib/kafka/data" for b in BROKER_SERVICES[variant]})
    for name, target in data.items():
        mounts = {v["target"]: v["type"] for v in services(model)[name]["volumes"]}
        assert mounts.get(target) == "volume", f"{name} keeps {target} outside a named volume"


# -- secrets ----------------------------------------------------------------------------------
@pytest.mark.parametrize("missing", REQUIRED)
def test_compose_refuses_to_run_without_each_secret(tmp_path: Path, missing: str) -> None:
    values = read_env_file(ENV_EXAMPLE)
    assert missing in values, f".env.example does not document {missing}"
    env_file = tmp_path / ".env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in values.items() if k != missing))
    result = run_compose("config", "-q", env_file=env_file)
    assert result.returncode != 0
    assert missing in result.stderr


def test_no_default_secret_in_the_compose_file() -> None:
    text = COMPOSE_FILE.read_text()
    for key, value in read_env_file(ENV_EXAMPLE).items():
        if value.startswith("change-me"):
            assert value not in text
            assert re.search(rf"\$\{{{key}:\?", text), f"{key} is not required by compose"
            assert not re.search(rf"\$\{{{key}:?-", text), f"{key} has a default"


def test_make_env_fills_every_placeholder_with_fresh_values(tmp_path: Path,
                                                            rendered: dict) -> None:
    env_file = tmp_path / ".env"
    shutil.copy(ENV_EXAMPLE, env_file)
    result = subprocess.run(["bash", str(ROOT / "docker" / "make-env.sh"), str(env_file)],
                            capture_output=True, text=True, timeout=30, check=True)
    values = read_env_file(env_file)
    placeholders = [k for k, v in read_env_file(ENV_EXAMPLE).items() if v.startswith("change-me")]
    assert placeholders and not [k for k in placeholders if "change-me" in values[k]]
    assert len(base64.urlsafe_b64decode(values["AIRFLOW_FERNET_KEY"])) == 32  # a Fernet key
    assert len({values[k] for k in placeholders}) == len(placeholders)
    assert not any(values[k] in result.stdout for k in placeholders), "make-env printed a secret"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    check = run_compose("config", "--format", "json", env_file=env_file)
    assert check.returncode == 0, check.stderr
    model = json.loads(check.stdout)
    state = connections(model["services"]["airflow-scheduler"])["kafka_ops_state"]
    assert state["password"] == values["KAFKA_OPS_S3_SECRET_KEY"]
    for name, svc in model["services"].items():
        assert not [k for k, v in env_of(svc).items() if "change-me" in v], name


def test_one_shot_services_refuse_placeholder_secrets(rendered: dict) -> None:
    """.env.example must validate, so its placeholders are values: the services that first
    use them stop the stack instead of running with a password anyone can read."""
    svcs = services(rendered["zookeeper"])
    assert "change-me" in svcs["airflow-init"]["command"][2] and "exit 1" in \
        svcs["airflow-init"]["command"][2]
    assert "*change-me*" in svcs["minio-init"]["command"][0]


# -- Airflow --------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
def test_airflow_connections_follow_the_contracts(rendered: dict, variant: str) -> None:
    svcs = services(rendered[variant])
    per_service = [connections(svcs[name]) for name in ["airflow-init", *AIRFLOW_COMPONENTS]]
    assert all(c == per_service[0] for c in per_service), "Airflow components disagree"
    conns = per_service[0]
    expected = dict(CONTRACT_CONNECTIONS)
    if variant == "kraft":  # no zookeeper_default: the DAGs take the Admin API backend
        del expected["zookeeper_default"]
    assert {k: v["conn_type"] for k, v in conns.items()} == expected


@pytest.mark.parametrize("variant", VARIANTS)
def test_connections_point_at_the_services_that_serve_them(rendered: dict, variant: str) -> None:
    svcs = services(rendered[variant])
    conns = connections(svcs["airflow-scheduler"])

    servers = conns["kafka_default"]["extra"]["bootstrap.servers"].split(",")
    assert sorted(s.split(":")[0] for s in servers) == sorted(BROKER_SERVICES[variant])
    for server in servers:
        host = server.split(":")[0]
        broker = env_of(svcs[host])
        advertised = dict(reversed(listener.split("://")) for listener in
                          broker["KAFKA_ADVERTISED_LISTENERS"].split(","))
        assert server in advertised, f"{server} is not a listener {host} advertises"
        listener = advertised[server]
        assert broker["KAFKA_INTER_BROKER_LISTENER_NAME"] == listener
        assert f"{listener}://0.0.0.0:{server.split(':')[1]}" in broker["KAFKA_LISTENERS"]

    if variant == "zookeeper":
        zk = conns["zookeeper_default"]
        chroot = zk["extra"].get("chroot", "")
        assert zk["port"] == int(env_of(svcs[zk["host"]])["ZOOKEEPER_CLIENT_PORT"])
        for broker in BROKER_SERVICES[variant]:
            assert env_of(svcs[broker])["KAFKA_ZOOKEEPER_CONNECT"] == \
                f"{zk['host']}:{zk['port']}{chroot}"

    prom = conns["prometheus_default"]
    assert prom["host"] == "prometheus" and prom["port"] == 9090 and prom["schema"] == "http"
    assert not any("web.listen-address" in a for a in svcs["prometheus"]["command"])

    spark = conns["spark_default"]
    master_url = f"{spark['host']}:{spark['port']}"
    master = svcs["spark-master"]["command"]
    assert master_url == f"spark://{command_option(master, '--host')}:" \
                         f"{command_option(master, '--port')}"
    assert svcs["spark-worker"]["command"][-1] == master_url

    state = conns["kafka_ops_state"]
    bucket = re.fullmatch(r"s3://([a-z0-9.-]+)/\S+", state["extra"]["url"]).group(1)
    endpoint = state["extra"]["storage_options"]["client_kwargs"]["endpoint_url"]
    assert endpoint == "http://minio:9000"
    assert command_option(svcs["minio"]["command"], "--address") == ":9000"
    init = svcs["minio-init"]
    assert f"mc mb --ignore-existing local/{bucket}" in init["command"][0]
    init_env = env_of(init)
    assert (state["login"], state["password"]) == (init_env["KAFKA_OPS_S3_ACCESS_KEY"],
                                                   init_env["KAFKA_OPS_S3_SECRET_KEY"])
    assert state["login"] != init_env["MINIO_ROOT_USER"], "Airflow must not hold MinIO's root"
    policy = json.loads((ROOT / "docker/minio/kafka-ops-state-policy.json").read_text())
    resources = {r for s in policy["Statement"] for r in s["Resource"]}
    assert resources == {f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"}


def test_airflow_components_share_one_image_dags_and_plugins(rendered: dict) -> None:
    svcs = services(rendered["zookeeper"])
    images = {svcs[n]["image"] for n in [*AIRFLOW_COMPONENTS, "airflow-init", "spark-master",
                                         "spark-worker"]}
    assert len(images) == 1, "Airflow and Spark must run one image (same Spark, same Python)"
    for name, command in AIRFLOW_COMPONENTS.items():
        svc = svcs[name]
        assert svc["command"] == [command]
        env = env_of(svc)
        mounts = {v["target"]: v for v in svc["volumes"]}
        assert mounts[env["AIRFLOW__CORE__DAGS_FOLDER"]]["source"] == str(ROOT / "dags")
        assert mounts["/opt/airflow/plugins"]["source"] == str(ROOT / "plugins")
        # The provider finds the analysis job it submits at <plugins>/../spark_jobs.
        assert mounts["/opt/airflow/spark_jobs"]["source"] == str(ROOT / "spark_jobs")
        assert (ROOT / "spark_jobs" / "balance_analysis.py").is_file()
        users = dict(u.split(":") for u in env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"].split(","))
        for approver in env["AIRFLOW__KAFKA_OPS__APPROVERS"].split(","):
            assert approver.split(":")[0] in users, f"approver {approver} is no Airflow user"
        assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == \
            "http://airflow-apiserver:8080/execution/"
        assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].endswith("@postgres:5432/airflow")
    api_ports = [p["target"] for p in svcs["airflow-apiserver"]["ports"]]
    assert api_ports == [8080]


@pytest.mark.parametrize("variant", VARIANTS)
def test_artifacts_are_shared_with_the_spark_worker(rendered: dict, variant: str) -> None:
    """The Spark analysis runs on spark-worker and reads the snapshots the Airflow tasks
    wrote: the artifacts Variable must be the same named volume at the same path in both."""
    svcs = services(rendered[variant])
    path = env_of(svcs["airflow-scheduler"])["AIRFLOW_VAR_KAFKA_OPS_ARTIFACTS"]
    for name in [*AIRFLOW_COMPONENTS, "spark-worker"]:
        mounts = {v["target"]: v for v in svcs[name]["volumes"]}
        assert mounts[path]["type"] == "volume" and mounts[path]["source"] == "kafka-ops-artifacts"


def test_pools_are_off_until_an_operator_turns_them_on(rendered: dict) -> None:
    """The stack starts pool-less (a plain rebalance over every broker); the guide's "Add a
    pool" sets the Variable to the mounted file."""
    for variant in VARIANTS:
        assert "AIRFLOW_VAR_KAFKA_OPS_POOLS" not in env_of(
            services(rendered[variant])["airflow-scheduler"])
    guide = (ROOT / "docs" / "operator-guide.md").read_text()
    assert "airflow variables set kafka_ops_pools " + POOLS_PATH in guide


def test_the_pools_file_fits_the_bundled_cluster(rendered: dict) -> None:
    from kafka_ops.model import Broker, ClusterModel, Partition
    from kafka_ops.pools import load_pools

    svcs = services(rendered["zookeeper"])
    mount = next(v for v in svcs["airflow-scheduler"]["volumes"] if v["target"] == POOLS_PATH)
    pools = load_pools(mount["source"])
    envs = {b: env_of(svcs[b]) for b in BROKER_SERVICES["zookeeper"]}
    brokers = [Broker(id=int(e["KAFKA_BROKER_ID"]), rack=e["KAFKA_BROKER_RACK"])
               for e in envs.values()]
    rf = max(int(e["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"]) for e in envs.values())
    default_rf = int(envs["kafka-1"]["KAFKA_DEFAULT_REPLICATION_FACTOR"])
    ids = sorted(b.id for b in brokers)
    cluster = ClusterModel(brokers, [
        Partition("__consumer_offsets", 0, tuple(ids[:rf]), ids[0], tuple(ids[:rf])),
        Partition("analytics.clicks", 0, tuple(ids[:default_rf]), ids[0], tuple(ids[:default_rf])),
    ])
    pools.validate(cluster)
    racks = {b.id: b.rack for b in brokers}
    for pool in pools.pools.values():
        assert len({racks[b] for b in pool.brokers}) >= min(rf, 2), f"{pool.name} on one rack"


# -- brokers and Prometheus ----------------------------------------------------------------
def _agent(env: dict[str, str]) -> tuple[int, str]:
    m = re.search(r"-javaagent:(\S+?\.jar)=(\d+):(\S+)", env["KAFKA_OPTS"])
    assert m, "no JMX exporter agent in KAFKA_OPTS"
    return int(m.group(2)), m.group(3)


@pytest.mark.parametrize("variant", VARIANTS)
def test_brokers_have_racks_ids_and_loopback_listeners(rendered: dict, variant: str) -> None:
    svcs = services(rendered[variant])
    id_key = "KAFKA_BROKER_ID" if variant == "zookeeper" else "KAFKA_NODE_ID"
    ids, racks = [], set()
    for name in BROKER_SERVICES[variant]:
        env = env_of(svcs[name])
        ids.append(int(env[id_key]))
        racks.add(env["KAFKA_BROKER_RACK"])
        external = [listener for listener in env["KAFKA_ADVERTISED_LISTENERS"].split(",")
                    if listener.startswith("EXTERNAL://")]
        port = int(external[0].rsplit(":", 1)[1])
        assert external == [f"EXTERNAL://127.0.0.1:{port}"]
        assert [(p["host_ip"], int(p["published"]), p["target"]) for p in svcs[name]["ports"]] \
            == [("127.0.0.1", port, port)]
    assert len(set(ids)) == len(ids) >= 3 and len(racks) >= 2
    if variant == "kraft":
        voters = env_of(svcs["kraft-1"])["KAFKA_CONTROLLER_QUORUM_VOTERS"]
        assert voters == ",".join(f"{i}@kraft-{i}:9093" for i in ids)


@pytest.mark.parametrize("variant", VARIANTS)
def test_prometheus_scrapes_every_broker_agent(rendered: dict, variant: str) -> None:
    svcs = services(rendered[variant])
    mount = next(v for v in svcs["prometheus"]["volumes"]
                 if v["target"] == "/etc/prometheus/prometheus.yml")
    config = yaml.safe_load(Path(mount["source"]).read_text())
    targets = {}
    for job in config["scrape_configs"]:
        for static in job["static_configs"]:
            for target in static["targets"]:
                targets[target] = static.get("labels", {})
    from kafka_ops.monitor.sources import PrometheusConfig

    broker_label = PrometheusConfig("http://prometheus:9090").broker_label  # what the snapshot reads
    assert [j["job_name"] for j in config["scrape_configs"]] == ["kafka"]
    id_key = "KAFKA_BROKER_ID" if variant == "zookeeper" else "KAFKA_NODE_ID"
    expected = {}
    for name in BROKER_SERVICES[variant]:
        env = env_of(svcs[name])
        port, rules = _agent(env)
        rules_mount = next(v for v in svcs[name]["volumes"] if rules.startswith(v["target"]))
        assert (Path(rules_mount["source"]) / Path(rules).relative_to(rules_mount["target"])
                ).is_file(), f"{name}: exporter rules {rules} not mounted"
        expected[f"{name}:{port}"] = {broker_label: env[id_key], "rack": env["KAFKA_BROKER_RACK"]}
    assert targets == expected


@pytest.mark.parametrize("variant", VARIANTS)
def test_prometheus_accepts_its_config(variant: str) -> None:
    """Prometheus' own checker (promtool, from Debian's prometheus package) on the file the
    variant mounts."""
    promtool = shutil.which("promtool")
    if promtool is None:
        if os.environ.get("CI"):
            pytest.fail("promtool missing: scripts/setup.sh installs Debian's prometheus")
        pytest.skip("promtool (Debian's prometheus package) is not installed")
    config = ROOT / "docker" / "prometheus" / f"prometheus-{variant}.yml"
    result = subprocess.run([promtool, "check", "config", str(config)], capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("variant", VARIANTS)
def test_tools_in_broker_health_checks_do_not_load_the_agent(rendered: dict,
                                                             variant: str) -> None:
    """KAFKA_OPTS carries the agent; a Kafka tool started with it would try to bind the
    agent's port, which the broker holds, and fail: health checks must clear it."""
    for name in BROKER_SERVICES[variant]:
        test = services(rendered[variant])[name]["healthcheck"]["test"]
        assert test[0] == "CMD-SHELL" and test[1].startswith("KAFKA_OPTS= ")


# -- what the DAGs and plugins expect --------------------------------------------------------
#: Named by the DAGs/plugins but optional: zookeeper_default (absent: Admin API backend, by
#: contract), kafka_ops_oncall (the on-call webhook; without it the notifier only writes its
#: inbox file), kafka_ops_pools (absent: no pools; the KRaft variant has none).
OPTIONAL_CONNECTIONS = {"zookeeper_default", "kafka_ops_oncall"}
OPTIONAL_VARIABLES = {"kafka_ops_pools"}
CONN_PATTERNS = [
    r"""\b(?:\w*conn_id|default_conn_name)\s*(?::\s*[\w| ]+)?=\s*["']([\w.-]+)["']""",  # defaults
    r"""["']\w*conn_id["']\s*:\s*Param\(\s*["']([\w.-]+)["']""",  # DAG Params
]
VARIABLE_PATTERN = r"""Variable\.get\(\s*["']([\w.-]+)["']"""


def _referenced(patterns: list[str]) -> set[str]:
    found: set[str] = set()
    for folder in ("dags", "plugins"):
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text()
            for pattern in patterns:
                found.update(re.findall(pattern, text))
    return found


@pytest.mark.parametrize("variant", VARIANTS)
def test_dags_use_only_provisioned_connections_and_variables(rendered: dict,
                                                             variant: str) -> None:
    """Every connection id and Variable the DAGs and plugins name as a literal (conn_id
    defaults, DAG Params, Variable.get) is provisioned by the stack, or optional."""
    env = env_of(services(rendered[variant])["airflow-scheduler"])
    conns = {k.removeprefix("AIRFLOW_CONN_").lower() for k in env if k.startswith("AIRFLOW_CONN_")}
    variables = {k.removeprefix("AIRFLOW_VAR_").lower() for k in env
                 if k.startswith("AIRFLOW_VAR_")}
    assert _referenced(CONN_PATTERNS) - conns - OPTIONAL_CONNECTIONS == set()
    assert _referenced([VARIABLE_PATTERN]) - variables - OPTIONAL_VARIABLES == set()


def test_the_spark_driver_is_reachable_from_the_worker(rendered: dict) -> None:
    """In the stack the driver runs in airflow-scheduler (LocalExecutor, client mode) and the
    executors on spark-worker connect back to it: it must not advertise a loopback address.
    The provider pins nothing: the address comes from `[kafka_ops] spark_driver_host`."""
    planning = ROOT / "plugins" / "kafka_ops_provider" / "operators" / "planning.py"
    scheduler = services(rendered["zookeeper"])["airflow-scheduler"]
    conns = connections(scheduler)
    assert conns["spark_default"]["host"].startswith("spark://")
    loopback = ("127.0.0.1", "localhost")
    texts = [planning.read_text(), *(p.read_text() for p in (ROOT / "dags").glob("*.py"))]
    pinned = [m for t in texts for m in re.findall(
        r"""["'](spark\.driver\.host|spark\.driver\.bindAddress|SPARK_LOCAL_IP)["']\s*:\s*["']([^"']+)""",
        t) if m[1] in loopback]
    assert not pinned, f"pinned to loopback whatever the master: {pinned}"
    env = scheduler["environment"]
    assert env["AIRFLOW__KAFKA_OPS__SPARK_DRIVER_HOST"] == scheduler["hostname"]
    assert env["AIRFLOW__KAFKA_OPS__SPARK_DRIVER_BIND_ADDRESS"] not in loopback
    assert 'conf.get("kafka_ops", "spark_driver_host"' in planning.read_text()


def test_the_guides_local_spark_override_validates(tmp_path: Path) -> None:
    """The operator guide's docker-compose.override.yml (the Spark gap's workaround) is valid
    and switches only the scheduler's spark_default to local[*]."""
    guide = (ROOT / "docs" / "operator-guide.md").read_text()
    block = re.search(r"```yaml\n# docker-compose.override.yml\n(.*?)```", guide, re.DOTALL)
    assert block, "the guide lost its override example"
    override = tmp_path / "docker-compose.override.yml"
    override.write_text(block.group(1))
    result = run_compose("-f", str(override), "config", "--format", "json",
                         env=variant_env("zookeeper"))
    assert result.returncode == 0, result.stderr
    svcs = json.loads(result.stdout)["services"]
    assert connections(svcs["airflow-scheduler"])["spark_default"]["host"] == "local[*]"
    assert connections(svcs["airflow-triggerer"])["spark_default"]["host"] == "spark://spark-master"


def _provider_hook(default_conn_name: str) -> type:
    """The Airflow provider's hook class for a connection (found by its default_conn_name,
    as Airflow's own hook registry does); skips until the provider is merged here."""
    import importlib
    import pkgutil
    import sys

    hooks_dir = ROOT / "plugins" / "kafka_ops_provider" / "hooks"
    if not hooks_dir.is_dir():
        pytest.skip("the Airflow provider (airflow branch) is not merged here")
    if str(ROOT / "plugins") not in sys.path:
        sys.path.insert(0, str(ROOT / "plugins"))  # what Airflow does for its plugins folder
    for info in pkgutil.iter_modules([str(hooks_dir)]):
        module = importlib.import_module(f"kafka_ops_provider.hooks.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and getattr(value, "default_conn_name", None) \
                    == default_conn_name and value.__module__ == module.__name__:
                return value
    pytest.fail(f"no hook of the provider has default_conn_name {default_conn_name!r}")


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_providers_hooks_read_the_stacks_connections(rendered: dict, variant: str,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    """The provider's own hooks, given exactly the environment the Airflow containers get,
    find the cluster (and the right backend), Prometheus and the state store."""
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path))
    env = env_of(services(rendered[variant])["airflow-scheduler"])
    for key, value in env.items():
        if key.startswith(("AIRFLOW_CONN_", "AIRFLOW_VAR_")):
            monkeypatch.setenv(key, value)
    cluster = _provider_hook("kafka_default")().cluster_connection()
    if variant == "zookeeper":
        assert (cluster.zookeeper, cluster.bootstrap_servers) == ("zookeeper:2181", None)
    else:
        assert cluster.zookeeper is None
        assert cluster.bootstrap_servers == ",".join(f"{b}:9092" for b in BROKER_SERVICES["kraft"])
    assert _provider_hook("prometheus_default")().settings()["url"] == "http://prometheus:9090"
    url, options = _provider_hook("kafka_ops_state")().location()
    assert url == "s3://kafka-ops-state/executions"
    assert (options["key"], options["secret"]) == (env_of(services(rendered[variant])["minio-init"])
                                                   ["KAFKA_OPS_S3_ACCESS_KEY"],
                                                   read_env_file(ENV_EXAMPLE)["KAFKA_OPS_S3_SECRET_KEY"])
    assert options["client_kwargs"]["endpoint_url"] == "http://minio:9000"
