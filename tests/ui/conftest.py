"""The view's tests import the plugin package the way Airflow does: from the plugins folder."""

from __future__ import annotations

import sys
from pathlib import Path

PLUGINS = str(Path(__file__).resolve().parents[2] / "plugins")
if PLUGINS not in sys.path:
    sys.path.insert(0, PLUGINS)
