"""An error read through a pipe is one line, however long the path it names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_a_piped_error_with_a_long_path_is_one_line(tmp_path: Path) -> None:
    gone = tmp_path.joinpath(*(["a_rather_long_folder_name"] * 6), "nope")
    env = {**os.environ, "COLUMNS": "80", "OCTEL_DATA_DIR": str(tmp_path / "data")}
    r = subprocess.run(
        [sys.executable, "-m", "cli", "import", "claude", str(gone)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert r.returncode == 2
    [line] = [x for x in r.stderr.splitlines() if x.strip()]
    assert str(gone) in line and "not a folder" in line
