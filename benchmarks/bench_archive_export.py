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

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pgserver
from bench_archive_store import _archive, _docs

from archiver.redact import Redactor
from telemetry.services.archive_export import export_archives
from telemetry.services.archive_import import import_archives
from telemetry.settings import Settings
from telemetry.store.archive_docs import DatabaseStore
from telemetry.store.db import make_engine
from telemetry.store.migrate import upgrade


def _median(rounds: int, before: Callable[[], None], run: Callable[[], Any]) -> float:
    times = []
    for _ in range(rounds):
        before()
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def measure(new_url: Callable[[], str], tmp: Path, docs: list[dict[str, Any]], rounds: int) -> dict[str, Any]:
    redactor = Redactor(b"k" * 32, ["a-configured-secret-value"])
    source = make_engine(new_url())
    upgrade(source)
    out_dir = tmp / "out"
    try:
        _archive(docs, DatabaseStore(source), source, redactor)
        store = DatabaseStore(source)

        def export() -> None:
            r = export_archives(source, store, out_dir)
            assert not r.failed and not r.differing, r

        def empty() -> None:
            shutil.rmtree(out_dir, ignore_errors=True)

        first = _median(rounds, empty, export)
        again = _median(rounds, lambda: None, export)
        targets: list[Any] = []

        def fresh() -> None:
            eng = make_engine(new_url())
            upgrade(eng)
            targets.append(eng)

        def load() -> None:
            eng = targets[-1]
            settings = Settings(
                data_dir=tmp / "import", database_url=str(eng.url), archive_store="database", _env_file=None
            )  # type: ignore[call-arg]
            report = import_archives(eng, out_dir, settings, redactor)
            assert report.stats.new == len(docs) and not report.skipped, report.to_dict()

        back = _median(rounds, fresh, load)
        for eng in targets:
            eng.dispose()
    finally:
        source.dispose()
    return {
        "export_s": first,
        "export_again_s": again,
        "import_s": back,
        "export_vs_import": first / back,
        "again_vs_export": again / first,
    }


def _databases(engine: str, tmp: Path, stack: ExitStack) -> Callable[[], str] | None:
    """A maker of fresh, empty databases on ``engine`` (None: no PostgreSQL here)."""
    if engine == "postgres":
        if pgserver.pg_binaries() is None:
            print("skipping postgres: " + pgserver.HOW, file=sys.stderr)
            return None
        server = stack.enter_context(pgserver.postgres_server(durable=True))
        return lambda: pgserver.create_database(server)
    made = iter(range(1_000_000))
    return lambda: f"sqlite:///{tmp / f'octel-{next(made)}.db'}"


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sessions", type=int, default=40)
    ap.add_argument("--messages", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--engines", default="sqlite,postgres")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    docs = _docs(args.sessions, args.messages)
    size = sum(len(json.dumps(d)) for d in docs) / 1e6
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="octel-bench-export-") as tmp, ExitStack() as stack:
        for name in args.engines.split(","):
            new_url = _databases(name, Path(tmp), stack)
            if new_url is None:
                continue
            work = Path(tmp) / name
            work.mkdir()
            r = {"engine": name, "documents": len(docs), "mb": round(size, 1)}
            r.update(measure(new_url, work, docs, args.rounds))
            results.append(r)
            if not args.json:
                print(
                    f"{name:9} {len(docs)} documents, {size:.1f} MB: export {r['export_s'] * 1000:7.1f} ms, "
                    f"again {r['export_again_s'] * 1000:7.1f} ms "
                    f"({r['again_vs_export']:.2f}x; target <= 0.5x), "
                    f"import of the files {r['import_s'] * 1000:7.1f} ms "
                    f"(export {r['export_vs_import']:.2f}x of it; target <= 1x)"
                )
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
