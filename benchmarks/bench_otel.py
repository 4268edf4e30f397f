"""What exporting session trees as traces costs, next to reading the same archives.

One run archives TREES copies of captured OpenCode trees (a subagent tree and a doom loop, each
copy with its own ids) into a fresh SQLite store, starts a local OTLP/HTTP receiver in a process
of its own (it decodes every request, as a backend would), then measures, in REPEATS rounds of
the three in turn (best of the rounds, and the median of each round's ratio), in wall time and
this process's CPU time:
- read:    the baseline, loading each tree alone (`load_tree`: its index rows, its cycle, its
           archive documents from the store and the files), as a reader of one tree does;
- batched: the same documents read as the export reads them (`iter_trees`: the index rows and
           cycles of a batch of trees in two queries), to show what the export's own reading
           saves and what its other stages add;
- export:  octel's whole export of the same trees (read, map to spans, encode protobuf, POST to
           the receiver and wait for its answer);
and, apart, the export's mapping (archive documents to encoded Span messages, as it sends them)
and three ways to encode the same span records: octel's record encoder, the SDK's (finished
ReadableSpans and its exporter's encoder, what octel did before) and opentelemetry-proto messages
built in bulk. It prints spans per second and the export's extra cost as a share of the
read (target: at most 50 %). Memory: with a backend that never answers, a background exporter
with a queue of QUEUE trees is handed 10x and 100x QUEUE trees; the peak Python heap
(tracemalloc) must not grow with the backlog, only with the queue. It prints the load average
before and after the rounds, and the garbage collector's time in each stage: on a shared machine
a figure means little without them.

    python benchmarks/bench_otel.py [--trees 200] [--repeats 7] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import httpx

sys.path[:0] = [str(Path(__file__).parents[1] / "tests" / "otel")]

from otel_store import FIXTURES, Captured  # noqa: E402
from proto_bulk import bulk_request  # noqa: E402
from sdk_reference import sdk_request  # noqa: E402
from sqlmodel import Session  # noqa: E402

from telemetry.archive_store import archive_store  # noqa: E402
from telemetry.archiving import archive_session_tree_async  # noqa: E402
from telemetry.otel_export.background import BackgroundExporter  # noqa: E402
from telemetry.otel_export.conventions import SCHEMA_URL  # noqa: E402
from telemetry.otel_export.export import TreeExporter  # noqa: E402
from telemetry.otel_export.mapping import encoded_tree_spans, tree_spans  # noqa: E402
from telemetry.otel_export.otlp_http import OTLPConfig, OTLPSender  # noqa: E402
from telemetry.otel_export.resource import SCOPE_NAME, SCOPE_VERSION, encoder_for, resource_attributes  # noqa: E402
from telemetry.otel_export.sources import iter_trees, load_tree  # noqa: E402
from telemetry.settings import Settings  # noqa: E402
from telemetry.store.db import make_engine  # noqa: E402
from telemetry.store.migrate import upgrade  # noqa: E402

OVERHEAD_TARGET = 0.5
BATCH = 100  # trees a query, iter_trees' default
SCENARIOS = ("subagent_tree", "doom_loop", "tool_errors")


def _receiver(port_out: Any, hang: bool) -> None:
    from otlp_receiver import OTLPReceiver

    rx = OTLPReceiver(keep=False)
    if hang:
        rx.release.clear()
    with rx:
        port_out.put(rx.endpoint)
        while True:
            time.sleep(3600)


def _start_receiver(hang: bool = False) -> tuple[multiprocessing.Process, str]:
    q: Any = multiprocessing.Queue()
    p = multiprocessing.Process(target=_receiver, args=(q, hang), daemon=True)
    p.start()
    return p, str(q.get(timeout=30))


def _copy(run: dict[str, Any], n: int) -> dict[str, Any]:
    text = json.dumps(run)
    for sid in [s["id"] for s in run["sessions"] if isinstance(s, dict) and "id" in s]:
        text = text.replace(sid, f"{sid[:-6]}{n:06d}")
    return dict(json.loads(text))


async def _seed(settings: Settings, trees: int) -> list[str]:
    runs = [json.loads((FIXTURES / f"{name}.json").read_text()) for name in SCENARIOS]
    roots = []
    for i in range(trees):
        run = _copy(runs[i % len(runs)], i)
        async with httpx.AsyncClient(transport=httpx.MockTransport(Captured(run).handle)) as http:
            out = await archive_session_tree_async(
                run["root_id"], settings=settings, server_url="http://opencode.test", http=http
            )
        assert out.ok, out.errors
        roots.append(run["root_id"])
    return roots


def _best(fn: Any, repeats: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


class _GCClock:
    """Seconds the garbage collector ran, and its passes, while ``on`` (gc.callbacks)."""

    def __init__(self) -> None:
        self.on = False
        self.seconds = 0.0
        self.passes = 0
        self._t0 = 0.0
        gc.callbacks.append(self._tick)

    def _tick(self, phase: str, info: dict[str, int]) -> None:
        if not self.on:
            return
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._t0
            self.passes += 1

    def close(self) -> None:
        gc.callbacks.remove(self._tick)


def _rounds(stages: dict[str, Any], repeats: int) -> dict[str, Any]:
    """[wall, CPU] seconds (best of the rounds) of stages run in turn, ``repeats`` rounds, so a
    busy spell on a shared machine hits them all. CPU time is this process's own: the receiver's
    decoding is the backend's work. Also each round's wall and CPU times (the median of the
    rounds' ratios is steadier than best vs best) and the garbage collector's time per stage."""
    walls: dict[str, list[float]] = {k: [] for k in stages}
    cpus: dict[str, list[float]] = {k: [] for k in stages}
    outs: dict[str, Any] = {}
    gcs = {k: [0.0, 0] for k in stages}
    clock = _GCClock()
    try:
        for _ in range(repeats):
            for name, fn in stages.items():
                clock.on, clock.seconds, clock.passes = True, 0.0, 0
                w, c = time.perf_counter(), time.process_time()
                outs[name] = fn()
                walls[name].append(time.perf_counter() - w)
                cpus[name].append(time.process_time() - c)
                clock.on = False
                gcs[name][0] += clock.seconds
                gcs[name][1] += clock.passes
    finally:
        clock.close()
    return {
        "best": {k: (min(walls[k]), min(cpus[k])) for k in stages},
        "out": outs,
        "walls": walls,
        "cpus": cpus,
        "gc_seconds_per_round": {k: v[0] / repeats for k, v in gcs.items()},
        "gc_passes_per_round": {k: v[1] / repeats for k, v in gcs.items()},
    }


def _median_ratio(times: dict[str, list[float]], num: str, den: str) -> float:
    return statistics.median(y / x for x, y in zip(times[den], times[num], strict=True))


class _Watched(OTLPSender):
    """A sender that says when its first request leaves."""

    def __init__(self, config: OTLPConfig) -> None:
        super().__init__(config)
        self.posted = threading.Event()

    def post(self, body: bytes) -> Any:
        self.posted.set()
        return super().post(body)


def _memory(settings: Settings, roots: list[str], queue: int) -> dict[str, float]:
    proc, endpoint = _start_receiver(hang=True)
    os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
    peaks = {}
    try:
        for factor in (1, 10, 100):  # the first warms up (imports, caches): not counted
            cfg = settings.model_copy(update={"otel_queue_trees": queue})
            tracemalloc.start()
            sender = _Watched(OTLPConfig.from_env(timeout=3))
            bg = BackgroundExporter(cfg, sender=sender, attempts=1)
            for i in range(queue * factor):
                bg.submit(roots[i % len(roots)])
            # the peak once the thread has its first request in flight to the silent backend
            # (its trees read, mapped and encoded): the same point for both backlogs
            sender.posted.wait(timeout=30)
            time.sleep(0.2)
            peaks[f"peak_bytes_{factor}x_queue"] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            bg.close(timeout=0)  # the backend never answers: leave without the exit grace
            if bg._thread is not None:
                bg._thread.join(timeout=30)  # its request times out; then the thread ends
    finally:
        proc.kill()
    peaks.pop("peak_bytes_1x_queue")
    peaks["peak_ratio_100x_vs_10x"] = peaks["peak_bytes_100x_queue"] / peaks["peak_bytes_10x_queue"]
    return peaks


def run(trees: int, repeats: int, queue: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp) / "data", _env_file=None)  # type: ignore[call-arg]
        roots = asyncio.run(_seed(settings, trees))
        engine = make_engine(settings.db_url)
        upgrade(engine)
        store = archive_store(settings, engine)
        proc, endpoint = _start_receiver()
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
        try:

            def read() -> int:
                with Session(engine) as db:
                    return sum(len(load_tree(db, settings.archives, r).docs) for r in roots)

            def read_batched() -> int:
                with Session(engine) as db:
                    return sum(len(t.docs) for t in iter_trees(db, store, roots))

            def export() -> int:
                ex = TreeExporter(settings, engine, attempts=1)
                try:
                    results = ex.export_roots(roots)
                finally:
                    ex.shutdown()
                assert all(x.dropped == 0 for x in results)
                return sum(x.exported for x in results)

            with Session(engine) as db:
                trees_loaded = [load_tree(db, settings.archives, r) for r in roots]
            resource = resource_attributes(settings.otel_service_name)
            meta = {
                "resource_schema_url": SCHEMA_URL,
                "scope_name": SCOPE_NAME,
                "scope_version": SCOPE_VERSION,
                "scope_schema_url": SCHEMA_URL,
            }

            def mapping() -> int:
                enc = encoder_for(settings.otel_service_name)
                return sum(len(encoded_tree_spans(t.docs, enc, cycle=t.cycle)) for t in trees_loaded)

            records = [tree_spans(t.docs, cycle=t.cycle) for t in trees_loaded]

            def encode() -> int:
                enc = encoder_for(settings.otel_service_name)
                return sum(len(enc.encode(r)) for r in records)

            def encode_sdk() -> int:
                return sum(len(sdk_request(r, resource, **meta).SerializeToString()) for r in records)

            def encode_bulk() -> int:
                return sum(len(bulk_request(r, resource, **meta).SerializeToString()) for r in records)

            load_before = os.getloadavg()
            got = _rounds({"read": read, "batched": read_batched, "export": export}, repeats)
            load_after = os.getloadavg()
            best = got["best"]
            (t_read, c_read), (t_batched, c_batched), (t_export, c_export) = (
                best["read"],
                best["batched"],
                best["export"],
            )
            sessions, spans = got["out"]["read"], got["out"]["export"]
            assert got["out"]["batched"] == sessions, "the batched read reads other documents"
            t_map, _ = _best(mapping, repeats)
            t_encode, wire = _best(encode, repeats)
            t_sdk, sdk_wire = _best(encode_sdk, repeats)
            t_bulk, bulk_wire = _best(encode_bulk, repeats)
            assert wire == sdk_wire == bulk_wire, "the three encodings differ in size"
        finally:
            proc.kill()
        memory = _memory(settings, roots, queue)
        engine.dispose()
    overhead = (t_export - t_read) / t_read
    return {
        "trees": trees,
        "sessions": sessions,
        "spans": spans,
        "read_seconds": round(t_read, 4),
        "export_seconds": round(t_export, 4),
        "map_encode_seconds": round(t_map, 4),
        "encode_seconds": round(t_encode, 4),
        "sdk_encode_seconds": round(t_sdk, 4),
        "proto_bulk_encode_seconds": round(t_bulk, 4),
        "protobuf_bytes": wire,
        "spans_per_second": round(spans / t_export),
        "export_overhead_vs_read": round(overhead, 3),
        "export_vs_read": round(t_export / t_read, 3),
        "read_cpu_seconds": round(c_read, 4),
        "export_cpu_seconds": round(c_export, 4),
        "export_vs_read_cpu": round(c_export / c_read, 3),
        "median_round_export_vs_read": round(_median_ratio(got["walls"], "export", "read"), 3),
        "median_round_export_vs_read_cpu": round(_median_ratio(got["cpus"], "export", "read"), 3),
        "batched_read_seconds": round(t_batched, 4),
        "batched_read_cpu_seconds": round(c_batched, 4),
        "batched_read_vs_read_cpu": round(c_batched / c_read, 3),
        "export_vs_batched_read_cpu": round(c_export / c_batched, 3),
        # what the export does beyond its own reading (map, encode, send), as a share of the read
        "export_beyond_its_read_vs_read_cpu": round((c_export - c_batched) / c_read, 3),
        "gc_seconds_per_read": round(got["gc_seconds_per_round"]["read"], 4),
        "gc_seconds_per_export": round(got["gc_seconds_per_round"]["export"], 4),
        "gc_passes_per_read": got["gc_passes_per_round"]["read"],
        "gc_passes_per_export": got["gc_passes_per_round"]["export"],
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "repeats": repeats,
        "overhead_target": OVERHEAD_TARGET,
        "queue_trees": queue,
        **{k: round(v, 3) for k, v in memory.items()},
    }


def main() -> None:
    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)  # the silent backend is on purpose
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--queue", type=int, default=50)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    out = run(a.trees, a.repeats, a.queue)
    if a.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{out['trees']} trees, {out['sessions']} sessions, {out['spans']} spans")
    print(f"read (baseline)   {out['read_seconds']:.3f} s (each tree alone: index rows, cycle, archives)")
    batched, share = out["batched_read_seconds"], out["batched_read_vs_read_cpu"]
    print(f"read in batches   {batched:.3f} s (as the export reads: index rows and cycles of {BATCH} trees")
    print(f"                  a query; CPU {share:.2f}x the baseline's)")
    print(f"export            {out['export_seconds']:.3f} s  ({out['spans_per_second']:,} spans/s)")
    print(f"  of which map    {out['map_encode_seconds']:.3f} s (archive documents to encoded spans)")
    enc, wire = out["encode_seconds"], out["protobuf_bytes"]
    print(f"encode records    {enc:.3f} s (octel's record encoder, protobuf: {wire:,} B)")
    print(f"encode, the SDK   {out['sdk_encode_seconds']:.3f} s (ReadableSpans + the exporter's encoder)")
    print(f"encode, in bulk   {out['proto_bulk_encode_seconds']:.3f} s (opentelemetry-proto messages)")
    share, target = out["export_overhead_vs_read"], OVERHEAD_TARGET
    print(f"export adds       {share:.0%} of the read, {out['export_vs_read']:.2f}x (target <= {target:.0%})")
    cpu_read, cpu_export = out["read_cpu_seconds"], out["export_cpu_seconds"]
    ratio = out["export_vs_read_cpu"]
    print(f"CPU, this process read {cpu_read:.3f} s, export {cpu_export:.3f} s, {ratio:.2f}x")
    wall_med, cpu_med = out["median_round_export_vs_read"], out["median_round_export_vs_read_cpu"]
    print(f"median of {out['repeats']} rounds: export/read {wall_med:.2f}x wall, {cpu_med:.2f}x CPU")
    beyond, vs_own = out["export_beyond_its_read_vs_read_cpu"], out["export_vs_batched_read_cpu"]
    print(
        f"beyond its own read, the export (map, encode, send) adds {beyond:.0%} of the baseline read "
        f"in CPU; it is {vs_own:.2f}x the batched read"
    )
    gc_r, gc_e = out["gc_seconds_per_read"], out["gc_seconds_per_export"]
    print(
        f"garbage collector per round: read {gc_r * 1000:.1f} ms ({out['gc_passes_per_read']:.1f} passes), "
        f"export {gc_e * 1000:.1f} ms ({out['gc_passes_per_export']:.1f} passes)"
    )
    before, after = out["load_average_before"], out["load_average_after"]
    print(f"load average (1, 5, 15 min) before {before}, after {after}")
    small, large = out["peak_bytes_10x_queue"] / 1e6, out["peak_bytes_100x_queue"] / 1e6
    print(
        f"memory, silent backend, queue {out['queue_trees']}: peak {small:.2f} MB at 10x the queue, "
        f"{large:.2f} MB at 100x ({out['peak_ratio_100x_vs_10x']:.2f}x)"
    )


if __name__ == "__main__":
    main()
