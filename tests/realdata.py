"""Where the real broker files are: `../shared/realdata` beside the project root (CI has it).

Tests that read them skip cleanly when the folder is absent. `REPLOG_REALDATA`
overrides the location.
"""
from __future__ import annotations

import os
from pathlib import Path

REALDATA = Path(os.environ.get("REPLOG_REALDATA", Path(__file__).resolve().parents[1].parent / "shared" / "realdata"))


def real_files(pattern: str, *, required: bool = True) -> list[Path]:
    """Real files matching `pattern`; skips the test when the real data is absent.

    With `required`, a pattern that matches nothing in the real data fails the
    test (the data set is known); otherwise it skips too.
    """
    import pytest
    if not REALDATA.is_dir():
        pytest.skip("no real data")
    files = sorted(REALDATA.glob(pattern))
    if not files and not required:
        pytest.skip(f"no {pattern} in the real data")
    assert files, f"the real data holds no {pattern}"
    return files
