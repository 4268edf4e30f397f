"""Every module of the package stays small enough to read in one sitting (340 lines at most)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("archiver", "detectors", "telemetry", "tower", "web", "cli")
MAX_LINES = 340


def too_long(root: Path, limit: int = MAX_LINES) -> list[str]:
    """`path: N lines` for each Python module under the packages longer than `limit` lines."""
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            n = len(path.read_text(encoding="utf-8").splitlines())
            if n > limit:
                found.append(f"{path.relative_to(root)}: {n} lines")
    return found


def test_no_module_is_over_340_lines() -> None:
    offenders = too_long(ROOT)
    assert not offenders, "split these modules (340 lines at most):\n" + "\n".join(offenders)


def test_the_limit_counts_lines_and_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "tower").mkdir()
    (tmp_path / "tower" / "fits.py").write_text("x = 1\n" * MAX_LINES)
    (tmp_path / "tower" / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    assert too_long(tmp_path) == [f"tower/long.py: {MAX_LINES + 1} lines"]
