"""`octel detect FILE|DIR|SESSION_ID` and `octel detect --eval DIR`.

FILE is any shape a session is kept in (`archiver.convert_read`): an archive file, a recorded
run, an `opencode export`, an `opencode run --format json` log, an event capture, a message list.
A file with no messages gets no verdict; one that is no session is refused (exit 2), or skipped
with a note when it is one file of a folder. DIR scores every such file in it; with `--eval`,
DIR is a labelled corpus (`NAME.label.json` beside `NAME.json`, or naming its session file) and
the command prints each detector's precision, recall and detection delay. Anything else is looked
up as an archived session id in the store.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import track
from rich.table import Column, Table

from archiver.convert import Converted
from archiver.convert_read import NotASession, read_session
from cli.app import app, console, err_console, fail, settings_of
from cli.output import Output, emit, output_options
from cli.tables import read_store
from detectors import REGISTRY, Finding, Thresholds, score, worst_verdict
from detectors.evaluation import Evaluation, LabelledRun, evaluate
from telemetry.queries.sessions import get_session
from telemetry.queries.turns import archive_location

__all__ = ["CorpusError", "detect", "load_corpus", "load_stream"]

_COLOUR = {"stuck": "red", "suspect": "yellow", "healthy": "green"}


class CorpusError(ValueError):
    """A file could not be read as a session or a label; the message says which and why."""


def _read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        return raw.decode("utf-8", errors="replace")
    except (OSError, EOFError) as e:
        raise CorpusError(f"cannot read {path}: {e}") from None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(_read_text(path))
    except ValueError as e:
        raise CorpusError(f"cannot read {path}: {e}") from None


def load_stream(path: Path, session_id: str | None = None) -> Converted:
    """The normalised stream of one file: an archive, a recorded run, an `opencode export`, a
    `opencode run --format json` log, an event capture or a message list."""
    try:
        return read_session(_read_text(path), session_id)
    except NotASession as e:
        raise CorpusError(f"{path} is not a session: {e}") from None


def load_corpus(folder: Path, *, progress: bool = False) -> list[LabelledRun]:
    """Every labelled run in `folder`, sorted by name."""
    runs = []
    known = {"healthy", *REGISTRY.names()}
    files = sorted(folder.glob("*.label.json"))
    items = track(files, description="reading", console=err_console, transient=True, disable=not progress)
    for label_file in items:
        label = _read_json(label_file)
        name = label_file.name.removesuffix(".label.json")
        if not isinstance(label, dict) or label.get("label") not in known:
            raise CorpusError(f"{label_file}: 'label' must be one of {', '.join(sorted(known))}")
        also = label.get("also") or []
        if not isinstance(also, list) or not set(also) <= known:
            raise CorpusError(f"{label_file}: 'also' must list detector names")
        session = folder / str(label.get("session") or f"{name}.json")
        stream = load_stream(session)
        runs.append(
            LabelledRun(name, label["label"], stream.messages, stream.status, stream.permissions, tuple(also))
        )
    return runs


_SESSION_SUFFIXES = (".json", ".json.gz", ".jsonl", ".jsonl.gz", ".ndjson", ".log")


def _result_or_skip(path: Path, session: str | None, th: Thresholds, show_all: bool) -> dict[str, Any]:
    """A file of a folder; one that is not a session is reported and skipped, not fatal."""
    try:
        return _result(str(path), load_stream(path, session), th, show_all)
    except CorpusError as e:
        err_console.print(f"skipped: {e}", highlight=False)
        return {"source": str(path), "messages": 0, "verdict": None, "reason": str(e), "findings": []}


def _session_files(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.iterdir()
        if p.is_file() and p.name.endswith(_SESSION_SUFFIXES) and not p.name.endswith(".label.json")
    )


def _summary(f: Finding) -> str:
    ev = f.evidence
    bits = [f"{k}={ev[k]}" for k in ("signal", "repetitions", "count", "empty_turns", "repeats",
                                       "compactions", "steps", "attempt", "waited_s") if k in ev]  # fmt: skip
    if "signature" in ev:
        bits.append(" | ".join(str(s) for s in ev["signature"])[:80])
    if "permissions" in ev:
        bits.append(",".join(ev["permissions"]))
    return " ".join(bits)


NO_MESSAGES = "no messages in it: nothing to judge"


def _result(source: str, stream: Converted, th: Thresholds, include_healthy: bool) -> dict[str, Any]:
    if not stream.messages:  # no verdict at all: "healthy" would claim a run was seen and judged
        return {"source": source, "messages": 0, "verdict": None, "reason": NO_MESSAGES, "findings": []}
    found = score(stream.messages, status=stream.status, permissions=stream.permissions, thresholds=th,
                  include_healthy=True)  # fmt: skip
    return {
        "source": source,
        "messages": len(stream.messages),
        "verdict": worst_verdict(found),
        "findings": [f.to_dict() for f in found if include_healthy or f.verdict != "healthy"],
    }


def _print_results(results: list[dict[str, Any]]) -> None:
    for r in results:
        if r["verdict"] is None:
            console.print(f"[bold]{r['source']}[/]: no verdict ({r['reason']})")
            continue
        colour = _COLOUR[r["verdict"]]
        console.print(f"[bold]{r['source']}[/] ({r['messages']} messages): [{colour}]{r['verdict']}[/]")
        if not r["findings"]:
            continue
        table = Table("detector", "verdict", "score", "from msg", "evidence", box=None, padding=(0, 1))
        for f in r["findings"]:
            v = f["verdict"]
            cells = (f"[{_COLOUR[v]}]{v}[/]", f"{f['score']:.2f}", _start(f["start_index"]))
            table.add_row(f["detector"], *cells, _summary(Finding(**f)))
        console.print(table)


def _start(index: int) -> str:
    return "-" if index < 0 else str(index)


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"


def _print_eval(ev: Evaluation) -> None:
    # delay: messages after the pattern began; fired at: share of the run seen when it fired
    table = Table("TP", "FP", "FN", "precision", "recall", "delay", "fired at", padding=(0, 1))
    table.columns.insert(0, Column("detector", no_wrap=True))
    for d in ev.detectors:
        delay = "-" if d.delay_messages is None else f"{d.delay_messages:.1f}"
        table.add_row(d.detector, str(d.true_positives), str(d.false_positives), str(d.false_negatives),
                      _pct(d.precision), _pct(d.recall), delay, _pct(d.delay_fraction))  # fmt: skip
    console.print(table)
    console.print(
        f"stuck runs detected: {ev.stuck_detected}/{ev.stuck_runs} (recall {_pct(ev.stuck_recall)}); "
        f"false alarms on healthy runs: {len(ev.false_alarms)}/{ev.healthy_runs}"
        + (f" ({', '.join(ev.false_alarms)})" if ev.false_alarms else ""),
        highlight=False,
    )


def _thresholds(pairs: Iterable[str]) -> Thresholds:
    values: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            fail(f"--threshold expects NAME=VALUE, got {pair!r}", 2)
        values[name.strip()] = value.strip()
    try:
        return Thresholds.from_mapping(values)
    except ValueError as e:
        fail(f"{e}; see docs/detectors.md for the names", 2)


@app.command()
@output_options
def detect(
    ctx: typer.Context,
    target: Annotated[
        str, typer.Argument(help="An archive or recorded-run file, a folder, or a session id.")
    ],
    evaluate_corpus: Annotated[
        bool, typer.Option("--eval", help="TARGET is a labelled corpus: print precision, recall, delay.")
    ] = False,
    show_all: Annotated[bool, typer.Option("--all", help="Also list healthy detectors.")] = False,
    session: Annotated[
        str | None, typer.Option(help="Which session of a recorded run (default: root).")
    ] = None,
    threshold: Annotated[
        list[str] | None,
        typer.Option("--threshold", "-t", help="NAME=VALUE, repeatable (docs/detectors.md)."),
    ] = None,
    output: Output = Output.table,
) -> None:
    """Score sessions with the stuck-agent detectors, or measure the detectors on a labelled corpus.
    `--jsonl` and `--csv` print one row per finding (per detector with `--eval`)."""
    th = _thresholds(threshold or [])
    path = Path(target)
    try:
        if evaluate_corpus:
            if not path.is_dir():
                fail(f"--eval needs a folder of labelled runs; {target!r} is not one", 2)
            runs = load_corpus(path, progress=output is Output.table and err_console.is_terminal)
            if not runs:
                fail(f"no *.label.json files in {target}", 2)
            ev = evaluate(runs, thresholds=th)
            emit(output, ev.to_dict(), [d.to_dict() for d in ev.detectors], lambda: _print_eval(ev))
            return
        if path.is_dir():
            files = _session_files(path)
            if not files:
                fail(f"no .json files in {target}", 2)
            quiet = output is not Output.table or not err_console.is_terminal
            items = track(files, description="scoring", console=err_console, transient=True, disable=quiet)
            results = [_result_or_skip(p, session, th, show_all) for p in items]
        elif path.is_file():
            results = [_result(str(path), load_stream(path, session), th, show_all)]
        else:
            results = [_result(target, _stored_session(ctx, target), th, show_all)]
    except CorpusError as e:
        fail(str(e), 2)
    rows = [{"source": r["source"], **f} for r in results for f in r["findings"]]
    emit(output, results if path.is_dir() else results[0], rows, lambda: _print_results(results))


def _stored_session(ctx: typer.Context, session_id: str) -> Converted:
    with read_store(ctx) as db:
        got = get_session(db, session_id)
    if got is None:
        fail(f"{session_id!r} is neither a file, a folder nor an archived session id", 2)
    stored = got["session"]["archive_path"]
    path = archive_location(settings_of(ctx).archives, stored)
    if path is None or not path.is_file():
        fail(f"the archive of session {session_id} is not there ({stored})")
    return load_stream(path, session_id)
