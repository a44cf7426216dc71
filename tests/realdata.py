"""Where the real broker files are: `../shared/realdata` beside the project root (CI has it).

Tests that read them skip cleanly when the folder is absent. `REPLOG_REALDATA`
overrides the location.
"""
from __future__ import annotations

import os
from pathlib import Path

REALDATA = Path(os.environ.get("REPLOG_REALDATA", Path(__file__).resolve().parents[1].parent / "shared" / "realdata"))
