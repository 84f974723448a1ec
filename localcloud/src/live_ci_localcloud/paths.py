"""Where the local cloud keeps its files (task logs, Lambda environment logs)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# scripts/localstack.sh sets it to <work>/localstack/localcloud.
STATE_DIR_ENV = "LIVE_CI_LOCALCLOUD_DIR"


def state_dir() -> Path:
    path = Path(os.environ.get(STATE_DIR_ENV) or Path(tempfile.gettempdir()) / "live-ci-localcloud")
    path.mkdir(parents=True, exist_ok=True)
    return path
