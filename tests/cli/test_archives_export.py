"""`octel archives export` on the seeded folder store: a v1 file the index names comes out as it
is, every row whose file is gone is reported with its session (exit 1); `--json` is fixed by a
golden file."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from octelrun import Octel

V1 = Path(__file__).parent.parent / "archiver" / "fixtures" / "v1_session.json"


def test_export_of_a_store_with_missing_files(seeded: Octel, golden: Callable[[str, Any], None]) -> None:
    archives = seeded.data_dir / "archives"
    archives.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(V1, archives / "ses_root.json")
    out = seeded.data_dir.parent / "out"
    r = seeded("archives", "export", str(out), "--json")
    assert r.exit_code == 1, r.output
    report = json.loads(r.stdout)
    assert report["written"] == 1 and (out / "ses_root.json").read_bytes() == V1.read_bytes()
    assert report["documents"] == len(report["failed"]) + 1
    golden("archives_export", {**report, "folder": "<dir>"})
    table = seeded("archives", "export", str(out))
    assert table.exit_code == 1 and "1 unchanged" in table.stdout and "is not there" in table.stderr
