"""The wheel carries what `octel serve` needs at run time: migrations, templates, static files."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_ships_migrations_templates_and_static(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    (wheel,) = tmp_path.glob("octel-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for want in (
        "telemetry/store/migrations/env.py",
        "telemetry/store/migrations/script.py.mako",
        "telemetry/store/migrations/versions/0001_initial_schema.py",
        "web/app.py",
        "detectors/__init__.py",
        "archiver/__init__.py",
    ):
        assert want in names, want
    shipped_web = {n for n in names if n.startswith(("web/templates/", "web/static/"))}
    on_disk = {
        p.relative_to(ROOT).as_posix()
        for d in ("web/templates", "web/static")
        for p in (ROOT / d).rglob("*")
        if p.is_file()
    }
    assert on_disk <= shipped_web
    assert not any(n.startswith(("tests/", "benchmarks/")) for n in names)
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "octel = cli:main" in zipfile.ZipFile(wheel).read(entry).decode()
