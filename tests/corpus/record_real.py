"""Record the corpus of real runs: every scenario script against one real `opencode serve`.

    python tests/corpus/record_real.py                 # all runs -> tests/corpus/real/{dev,heldout}
    python tests/corpus/record_real.py --only doom_00 ok_poll_01 --out /tmp/x
    python tests/corpus/record_real.py --fresh         # the fresh held-out set -> real/fresh
    python tests/corpus/record_real.py --third         # the third held-out set -> real/third
    python tests/corpus/record_real.py --replica       # the fresh scripts drawn again -> real/replica
    python tests/corpus/record_real.py --fourth        # the fourth held-out set (thrash) -> real/fourth
    python tests/corpus/record_real.py --fifth         # the fifth held-out set (lag) -> real/fifth
    python tests/corpus/record_real.py --lag-dev       # development runs for the lag -> real/dev

Runs go `--workers` at a time on one server (about 10 minutes on two cores). Each recorded run
is written as compact JSON with a `NAME.label.json` beside it: the label, other detectors that
may fairly fire, a note, and `pattern_start`, the message index where the stuck pattern begins.

The split is made once, by name, before any tuning: within each label, runs are ordered by the
SHA-256 of their name and every third (positions 0, 3, 6, ...) is held out, so each pattern
keeps at least a third of its runs out of the development set. Tune thresholds on `dev/` only.

`--fresh` records the second held-out set (`real_fresh*.py`, all of it held out, written after
the first held-out set had been looked at) into `fresh/`, and writes `fresh/MANIFEST.sha256`
(`sha256sum -c` format) so that any later change to a frozen file shows. `--third` does the same
for the third held-out set (`real_third.py`) into `third/`, and `--replica` for the fresh set's
scripts drawn again under new names (`real_replica.py`) into `replica/`, and `--fourth` for the
thrash and its healthy twins (`real_fourth.py`) into `fourth/`, and `--fifth` for the thrash, the
stretch without progress and the healthy runs that grind longest (`real_fifth.py`) into `fifth/`.
`--lag-dev` records the development runs of those patterns (`real_lag_dev.py`, written after the
fifth set was frozen) into `dev/` whole, unsplit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

_HERE = Path(__file__).parent
for _p in (_HERE, _HERE.parent, _HERE.parent / "e2e"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from opencode_harness import find_or_install, opencode_server  # noqa: E402
from real_fifth import fifth_runs  # noqa: E402
from real_fourth import fourth_runs  # noqa: E402
from real_fresh import fresh_stuck_runs  # noqa: E402
from real_fresh_ok import fresh_healthy_runs  # noqa: E402
from real_healthy import healthy_runs  # noqa: E402
from real_lag_dev import lag_dev_runs  # noqa: E402
from real_recorder import RoutingLLM, record_all  # noqa: E402
from real_replica import replica_runs  # noqa: E402
from real_stuck import stuck_runs  # noqa: E402
from real_third import third_runs  # noqa: E402

__all__ = [
    "FIFTH",
    "FOURTH",
    "FRESH",
    "LAG_DEV",
    "OUT",
    "REPLICA",
    "THIRD",
    "all_runs",
    "fifth",
    "fourth",
    "fresh_runs",
    "label_of",
    "lag_dev",
    "manifest",
    "record",
    "replica",
    "split",
    "third",
]

OUT = _HERE / "real"
FRESH = "fresh"
THIRD = "third"
REPLICA = "replica"
FOURTH = "fourth"
FIFTH = "fifth"
LAG_DEV = "lag-dev"  # recorded into dev/


def all_runs(project: str) -> list[dict[str, Any]]:
    runs = stuck_runs(project) + healthy_runs(project)
    names = [r["name"] for r in runs]
    assert len(set(names)) == len(names), "run names must be unique"
    return runs


def fresh_runs(project: str) -> list[dict[str, Any]]:
    runs = fresh_stuck_runs(project) + fresh_healthy_runs(project)
    names = [r["name"] for r in runs] + [r["name"] for r in all_runs(project)]
    assert len(set(names)) == len(names), "run names must be unique"
    return runs


def third(project: str) -> list[dict[str, Any]]:
    runs = third_runs(project)
    names = [r["name"] for r in runs] + [r["name"] for r in all_runs(project) + fresh_runs(project)]
    assert len(set(names)) == len(names), "run names must be unique"
    return runs


def fourth(project: str) -> list[dict[str, Any]]:
    runs = fourth_runs(project)
    earlier = all_runs(project) + fresh_runs(project) + third(project) + replica(project)
    names = [r["name"] for r in runs] + [r["name"] for r in earlier]
    assert len(set(names)) == len(names), "run names must be unique"
    return runs


def fifth(project: str) -> list[dict[str, Any]]:
    runs = fifth_runs(project)
    earlier = all_runs(project) + fresh_runs(project) + third(project) + replica(project) + fourth(project)
    names = [r["name"] for r in runs] + [r["name"] for r in earlier]
    assert len(set(names)) == len(names), "run names must be unique"
    return runs


def lag_dev(project: str) -> list[dict[str, Any]]:
    runs = lag_dev_runs(project)
    earlier = all_runs(project) + fresh_runs(project) + third(project) + replica(project) + fifth(project)
    names = [r["name"] for r in runs] + [r["name"] for r in earlier + fourth(project)]
    assert len(set(names)) == len(names), "run names must be unique"
    return runs


def replica(project: str) -> list[dict[str, Any]]:
    runs = replica_runs(project)
    names = [r["name"] for r in runs] + [r["name"] for r in all_runs(project) + fresh_runs(project)]
    assert len(set(names)) == len(names), "run names must be unique"
    return runs


def _held(project: str, which: str) -> list[dict[str, Any]]:
    sets = {FRESH: fresh_runs, THIRD: third, REPLICA: replica, FOURTH: fourth, FIFTH: fifth, LAG_DEV: lag_dev}
    return sets.get(which, all_runs)(project)


def manifest(folder: Path) -> str:
    """`sha256sum` lines for every file of a set, sorted by name."""
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.name != "MANIFEST.sha256")
    return "".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}\n" for p in files)


def split(runs: list[dict[str, Any]]) -> dict[str, str]:
    """name -> "dev" | "heldout", fixed by the names alone (see the module docstring)."""
    by_label: dict[str, list[str]] = defaultdict(list)
    for r in runs:
        by_label[r["label"]].append(r["name"])
    out = {}
    for names in by_label.values():
        ordered = sorted(names, key=lambda n: hashlib.sha256(n.encode()).hexdigest())
        for k, n in enumerate(ordered):
            out[n] = "heldout" if k % 3 == 0 else "dev"
    return out


def label_of(run: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    """The label file: `begins` (a root turn) becomes the index of that turn's message."""
    msgs = doc["messages"].get(doc["root_id"], [])
    start = -1
    if run["begins"] >= 0:
        assistant = [k for k, m in enumerate(msgs) if m.get("info", {}).get("role") == "assistant"]
        start = assistant[min(run["begins"], len(assistant) - 1)] if assistant else -1
    return {
        "label": run["label"],
        "also": run.get("also", []),
        "note": run["note"],
        "pattern_start": start,
        **({"pattern_end": len(msgs) - 1} if start >= 0 else {}),  # the stall lasts to the run's end
        "recorded_from": "opencode serve 1.18.33 with the scripted fake LLM",
    }


def save(out: Path, where: dict[str, str], run: dict[str, Any], doc: dict[str, Any]) -> None:
    folder = out / where[run["name"]]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{run['name']}.json").write_text(json.dumps(doc, separators=(",", ":")))
    (folder / f"{run['name']}.label.json").write_text(json.dumps(label_of(run, doc), indent=1) + "\n")


def record(
    out: Path, only: list[str] | None = None, workers: int = 8, redo: bool = False, fresh: bool | str = False
) -> list[dict[str, Any]]:
    """Record the runs (all, or those named) into `out/dev` and `out/heldout`, each as it ends;
    runs already there are kept unless `redo`, so a stopped recording resumes."""
    binary, why = find_or_install()
    if binary is None:
        raise SystemExit(f"opencode-ai is not available: {why}")
    llm = RoutingLLM().start()
    try:
        with tempfile.TemporaryDirectory() as tmp, opencode_server(binary, Path(tmp), llm.url) as oc:
            which = (FRESH if fresh is True else fresh) or ""
            runs = _held(str(oc.project), which)
            folder = "dev" if which == LAG_DEV else which
            where = {r["name"]: folder for r in runs} if which else split(runs)
            if only:
                runs = [r for r in runs if r["name"] in set(only)]
            if not redo:
                runs = [r for r in runs if not (out / where[r["name"]] / f"{r['name']}.json").exists()]
            record_all(oc.url, llm, runs, lambda r, d: save(out, where, r, d), workers)
    finally:
        llm.stop()
    return runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--redo", action="store_true", help="record runs already in --out again")
    ap.add_argument("--part", default="1/1", help="K/N: record only every N-th run, from the K-th")
    ap.add_argument("--fresh", action="store_true", help="the fresh held-out set, into OUT/fresh")
    ap.add_argument("--third", action="store_true", help="the third held-out set, into OUT/third")
    ap.add_argument("--replica", action="store_true", help="the fresh scripts drawn again, into OUT/replica")
    ap.add_argument("--fourth", action="store_true", help="the fourth held-out set (thrash), into OUT/fourth")
    ap.add_argument("--fifth", action="store_true", help="the fifth held-out set (lag), into OUT/fifth")
    ap.add_argument("--lag-dev", action="store_true", help="development runs for the lag, into OUT/dev")
    args = ap.parse_args()
    # stopped from outside: still stop the server (the harness does it on the way out)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    t = time.monotonic()
    k, n = (int(x) for x in args.part.split("/"))
    which = FRESH if args.fresh else THIRD if args.third else REPLICA if args.replica else ""
    which = FOURTH if args.fourth else FIFTH if args.fifth else LAG_DEV if args.lag_dev else which
    only = args.only or [r["name"] for r in _held("", which)[k - 1 :: n]]
    try:
        runs = record(args.out, only, args.workers, args.redo, which)
        if which and which != LAG_DEV:
            (args.out / which / "MANIFEST.sha256").write_text(manifest(args.out / which))
    except BaseException:
        os._exit(1)  # the server is stopped by now; do not wait for runs still being driven
    print(f"recorded {len(runs)} runs in {time.monotonic() - t:.0f} s into {args.out}", flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
