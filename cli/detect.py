"""`octel detect FILE|DIR|SESSION_ID` and `octel detect --eval DIR`.

FILE is any shape a session is kept in (`archiver.convert_read`): an archive file, a recorded
run, an `opencode export`, an `opencode run --format json` log, an event capture, a message list.
A Claude Code transcript or stream-json output (`.jsonl`) is read by `archiver.claude`. A file
with no messages gets no verdict; one that is no session is refused (exit 2), or skipped
with a note when it is one file of a folder. DIR scores every such file in it; with `--eval`,
DIR is a labelled corpus (`NAME.label.json` beside `NAME.json`, or naming its session file) and
the command prints each detector's precision, recall and detection delay. Anything else is looked
up as an archived session id in the store. Findings are said as the console says them (one
sentence each, messages numbered from 1, the worst first); the raw evidence is in `--json`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, TypedDict

import typer
from rich.markup import escape
from rich.progress import track
from rich.table import Table

from archiver.convert import Converted
from cli.app import app, console, err_console, fail
from cli.detect_eval import compare, corpus_sets, held_out, load_corpus, pooled, print_evaluations, set_title
from cli.detect_load import CorpusError, load_stored, load_tree
from cli.output import Output, emit, output_options
from cli.tables import archives_of, read_store
from detectors import REGISTRY, Finding, Thresholds, dominant, score, worst_verdict
from detectors.baselines import BaselineScore
from detectors.evaluation import Evaluation, evaluate
from detectors.findings import Verdict, rank_key
from detectors.model import ToolCall
from detectors.score_docs import ComparedReport, EvaluationReport
from telemetry.queries.finding_text import DescribedFinding, Locator, describe
from telemetry.queries.sessions import get_session

__all__ = ["CorpusError", "detect", "load_corpus"]

_COLOUR = {"stuck": "red", "suspect": "yellow", "healthy": "green"}


class Judged(TypedDict, total=False):
    """One session's result, as `--json` prints it: no verdict (and a `reason`) when there was
    nothing to judge; a file of several sessions adds `sessions` and `tree_verdict`."""

    source: str
    session_id: str
    parent_session_id: str | None
    depth: int
    messages: int
    verdict: Verdict | None
    reason: str
    pattern: str | None
    findings: list[DescribedFinding]
    sessions: list[Judged]
    tree_verdict: Verdict | None


def _file_result(path: Path, session: str | None, th: Thresholds, show_all: bool) -> Judged:
    """The chosen session's result (the root unless `session` names another); a file holding
    several sessions also gets `sessions`, each judged on its own, parents before children,
    and `tree_verdict`, the worst of them."""
    chosen, every = load_tree(path, session)
    out = _result(str(path), chosen, th, show_all)
    if session is None and every:
        depth: dict[str, int] = {}
        rows: list[Judged] = []
        for s in every:
            depth[s.session_id] = depth[s.parent_id] + 1 if s.parent_id in depth else 0
            r = _result(s.session_id, s.stream, th, show_all)
            r.pop("source")
            row: Judged = {
                "session_id": s.session_id,
                "parent_session_id": s.parent_id,
                "depth": depth[s.session_id],
            }
            row.update(r)
            rows.append(row)
        out["sessions"] = rows
        out["tree_verdict"] = (
            worst_verdict(Finding.from_dict(f) for r in rows for f in r["findings"])
            if any(r["verdict"] for r in rows)
            else None
        )
    return out


def _result_or_skip(path: Path, session: str | None, th: Thresholds, show_all: bool) -> Judged:
    """A file of a folder; one that is not a session is reported and skipped, not fatal."""
    try:
        return _file_result(path, session, th, show_all)
    except CorpusError as e:
        err_console.print(f"skipped: {e}", highlight=False)
        return {"source": str(path), "messages": 0, "verdict": None, "reason": str(e), "findings": []}


def _session_files(folder: Path) -> list[Path]:
    # every file is read or named, whatever its name: stream-json is kept as .log, .txt, .out…
    return sorted(
        p
        for p in folder.iterdir()
        if p.is_file() and not p.name.startswith(".") and not p.name.endswith(".label.json")
    )


def _locator(stream: Converted) -> Locator:
    """Where each message, part and call id of the stream sits, numbered from 1 as the console
    and `octel sessions show` number them."""
    shaped = [
        {
            "info": {"id": m.id, "role": m.role},
            "parts": [
                {"id": p.part_id, "type": "tool", "tool": p.tool, "callID": p.call_id}
                if isinstance(p, ToolCall)
                else {"id": p.part_id}
                for p in m.parts
            ],
        }
        for m in stream.messages
    ]
    return Locator(shaped)


NO_MESSAGES = "no messages in it: nothing to judge"


def _result(source: str, stream: Converted, th: Thresholds, include_healthy: bool) -> Judged:
    if not stream.messages:  # no verdict at all: "healthy" would claim a run was seen and judged
        return {"source": source, "messages": 0, "verdict": None, "reason": NO_MESSAGES, "findings": []}
    found = score(
        stream.messages,
        status=stream.status,
        permissions=stream.permissions,
        thresholds=th,
        include_healthy=True,
    )
    named = dominant(found)
    summaries = {s.name: s.summary for s in REGISTRY.specs()}
    loc = _locator(stream)
    shown = [f.to_dict() for f in found if include_healthy or f.verdict != "healthy"]
    # the worst first, by the one rank the headline is chosen by
    shown.sort(key=lambda f: rank_key(f["detector"], f["verdict"], f["score"]))
    return {
        "source": source,
        "messages": len(stream.messages),
        "verdict": worst_verdict(found),
        "pattern": named.detector if named is not None else None,
        "findings": [describe(f, loc, summaries.get(f["detector"])) for f in shown],
    }


def _print_results(results: list[Judged]) -> None:
    for r in results:
        if "sessions" in r:  # several sessions in one file: each judged, as a tree
            n = len(r["sessions"])
            console.print(f"[bold]{escape(r['source'])}[/]: {n} sessions", highlight=False)
            for s in r["sessions"]:
                _print_one({**s, "source": "  " * (s["depth"] + 1) + s["session_id"]})
            continue
        _print_one(r)


def _print_one(r: Judged) -> None:
    if r["verdict"] is None:
        console.print(f"[bold]{escape(r['source'])}[/]: no verdict ({r['reason']})", highlight=False)
        return
    colour = _COLOUR[r["verdict"]]
    named = f" ({r['pattern']})" if r.get("pattern") else ""
    head = f"[bold]{escape(r['source'])}[/] ({r['messages']} messages)"
    console.print(f"{head}: [{colour}]{r['verdict']}[/]{named}", highlight=False)
    if r["findings"]:
        # the console's words: a sentence per finding, messages numbered from 1 (raw evidence: --json)
        table = Table("detector", "verdict", "score", "from", "what happened", box=None, padding=(0, 1))
        for f in r["findings"]:
            v = f["verdict"]
            cells = (f"[{_COLOUR[v]}]{v}[/]", f"{f['score']:.2f}", _start(f["start_index"]))
            table.add_row(f["detector"], *cells, escape(_said(f)))
        console.print(table)


def _said(f: DescribedFinding) -> str:
    """The sentence without the place the "from" column already gives."""
    return re.sub(r", from (turn \d+ \(message \d+\)|message \d+)\.$", ".", f["sentence"])


def _start(index: int) -> str:
    return "-" if index < 0 else f"message {index + 1}"


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
        fail(f"{e}; the names are {', '.join(sorted(Thresholds.help()))}", 2)


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
    baselines: Annotated[
        bool, typer.Option("--baselines", help="With --eval: also run OpenHands' and OpenCode's stuck rules.")
    ] = False,
    show_all: Annotated[bool, typer.Option("--all", help="Also list healthy detectors.")] = False,
    session: Annotated[
        str | None, typer.Option(help="Which session of a recorded run (default: root).")
    ] = None,
    threshold: Annotated[
        list[str] | None,
        typer.Option(
            "--threshold",
            "-t",
            metavar="NAME=VALUE",
            help="A detector threshold, repeatable (see the names an unknown one lists).",
        ),
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
            sets = corpus_sets(path, progress=output is Output.table and err_console.is_terminal)
            if not sets:
                fail(f"no *.label.json files in {target} or its folders", 2)
            evals = {name: evaluate(runs, thresholds=th) for name, runs in sets.items()}
            titles = {name: set_title(path / name) if len(sets) > 1 else set_title(path) for name in sets}
            compared = {name: compare(evals[name], runs) for name, runs in sets.items()} if baselines else {}
            docs = {name: _eval_doc(ev, titles[name], compared.get(name)) for name, ev in evals.items()}
            pools = _pools(path, evals) if len(sets) > 1 else {}
            answer = next(iter(docs.values())) if len(docs) == 1 else {"sets": docs, "pooled": pools}
            rows = [{"set": name, **d} for name, ev in evals.items() for d in ev.detectors]
            emit(output, answer, rows, lambda: print_evaluations(evals, titles, compared, pools))
            return
        if path.is_dir():
            files = _session_files(path)
            if not files:
                fail(f"no .json files in {target}", 2)
            quiet = output is not Output.table or not err_console.is_terminal
            items = track(files, description="scoring", console=err_console, transient=True, disable=quiet)
            results = [_result_or_skip(p, session, th, show_all) for p in items]
        elif path.is_file():
            results = [_file_result(path, session, th, show_all)]
        else:
            results = [_result(target, _stored_session(ctx, target), th, show_all)]
    except CorpusError as e:
        fail(str(e), 2)
    rows = [{"source": r["source"], **f} for r in results for f in r["findings"]]
    emit(output, results if path.is_dir() else results[0], rows, lambda: _print_results(results))


def _pools(path: Path, evals: dict[str, Evaluation]) -> dict[str, dict[str, object]]:
    """The tuning sets and the held-out sets (`"held_out": true` in about.json), each pooled."""
    out_of = [n for n in evals if held_out(path / n)]
    tuned = [n for n in evals if n not in out_of]
    groups = (("tuning sets", tuned), ("held-out sets", out_of))
    return {title: pooled(evals, names) for title, names in groups if names}


def _eval_doc(
    ev: Evaluation, title: str, compared: list[BaselineScore] | None
) -> EvaluationReport | ComparedReport:
    if compared is None:
        return {"title": title, **ev.to_dict()}
    return {"title": title, **ev.to_dict(), "baselines": [b.to_dict() for b in compared]}


def _stored_session(ctx: typer.Context, session_id: str) -> Converted:
    with read_store(ctx) as db:
        got = get_session(db, session_id)
        if got is None:
            fail(f"{session_id!r} is neither a file, a folder nor an archived session id")  # not found: 1
        stored = got.session.archive_path
        store = archives_of(ctx, db)
        if store.stat(stored) is None:
            fail(f"the archive of session {session_id} is not there ({stored})")
        return load_stored(store, stored, session_id)
