"""Archive export benchmark: `octel archives export` of a database store against
`octel import archives` of the same files into another database store (the way back), on
SQLite and a real PostgreSQL, in one run.

Three timings per engine, each the median of ``--rounds``: the export into an empty folder
(read, validate, write, fsync, read back), the export again into the same folder (every file
left as it is), and the import of that folder into a fresh database store (read, validate,
redact, store, index, read back).

Target: an export takes no longer than the import of what it wrote; exporting again takes at
most half of the first export.
Run: python benchmarks/bench_archive_export.py [--sessions 40] [--messages 100] [--rounds 3]
     [--engines sqlite,postgres] [--json]
"""

from __future__ import annotations

import shutil
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import archive_setup
from archive_setup import archive_documents, migrated, redactor

from telemetry.services.index.archive_export import export_archives
from telemetry.services.index.archive_import import import_archives
from telemetry.settings import Settings
from telemetry.store.archive_docs import DatabaseStore


def _median(rounds: int, before: Callable[[], None], run: Callable[[], Any]) -> float:
    times = []
    for _ in range(rounds):
        before()
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def measure(new_url: Callable[[], str], tmp: Path, docs: list[dict[str, Any]], rounds: int) -> dict[str, Any]:
    red = redactor()
    out_dir = tmp / "out"
    with migrated(new_url()) as source, ExitStack() as targets:
        archive_documents(docs, DatabaseStore(source), source, red)
        store = DatabaseStore(source)

        def export() -> None:
            r = export_archives(source, store, out_dir)
            assert not r.failed and not r.differing, r

        def empty() -> None:
            shutil.rmtree(out_dir, ignore_errors=True)

        first = _median(rounds, empty, export)
        again = _median(rounds, lambda: None, export)
        fresh: list[Any] = []

        def make() -> None:
            fresh.append(targets.enter_context(migrated(new_url())))

        def load() -> None:
            eng = fresh[-1]
            settings = Settings(
                data_dir=tmp / "import", database_url=str(eng.url), archive_store="database", _env_file=None
            )  # type: ignore[call-arg]
            report = import_archives(eng, out_dir, settings, red)
            assert report.stats.new == len(docs) and not report.skipped, report.to_dict()

        back = _median(rounds, make, load)
    return {
        "export_s": first,
        "export_again_s": again,
        "import_s": back,
        "export_vs_import": first / back,
        "again_vs_export": again / first,
    }


def _line(r: dict[str, Any]) -> str:
    return (
        f"export {r['export_s'] * 1000:7.1f} ms, "
        f"again {r['export_again_s'] * 1000:7.1f} ms "
        f"({r['again_vs_export']:.2f}x; target <= 0.5x), "
        f"import of the files {r['import_s'] * 1000:7.1f} ms "
        f"(export {r['export_vs_import']:.2f}x of it; target <= 1x)"
    )


def main() -> int:
    return archive_setup.main(__doc__, measure, _line, rounds=3, prefix="octel-bench-export-")


if __name__ == "__main__":
    raise SystemExit(main())
