"""`octel detect --eval`: labelled corpora in, recall, false alarms, pattern named and lag out.

A corpus folder holds `NAME.label.json` files beside the sessions they label; a folder whose
sub-folders are corpora (the recorded corpus's `dev/` and `heldout/`) is evaluated set by set.
A set folder may say what it is in `about.json` (`{"title": ...}`), printed beside its name, and
that it was never tuned on (`"held_out": true`): the held-out sets and the others are then also
taken together, each pool apart, so held-out figures are never mixed with tuned ones.
With `--baselines`, other projects' stuck rules (`detectors.baselines`) run on the same runs
and are printed beside octel's in the same terms.
"""

from __future__ import annotations

from pathlib import Path

from rich.progress import track
from rich.table import Column, Table

from cli.app import console, err_console
from cli.detect_load import CorpusError, load_stream, read_json
from detectors import REGISTRY
from detectors.baselines import BASELINES, BaselineScore, evaluate_baseline
from detectors.baselines.compare import octel_row
from detectors.evaluation import ON_TIME_TURNS, Evaluation, LabelledRun

__all__ = ["compare", "corpus_sets", "held_out", "load_corpus", "pooled", "print_evaluations", "set_title"]


def load_corpus(folder: Path, *, progress: bool = False) -> list[LabelledRun]:
    """Every labelled run in `folder`, sorted by name."""
    runs = []
    known = {"healthy", *REGISTRY.names()}
    files = sorted(folder.glob("*.label.json"))
    items = track(files, description="reading", console=err_console, transient=True, disable=not progress)
    for label_file in items:
        label = read_json(label_file)
        name = label_file.name.removesuffix(".label.json")
        if not isinstance(label, dict) or label.get("label") not in known:
            raise CorpusError(f"{label_file}: 'label' must be one of {', '.join(sorted(known))}")
        also = label.get("also") or []
        if not isinstance(also, list) or not set(also) <= known:
            raise CorpusError(f"{label_file}: 'also' must list detector names")
        start = label.get("pattern_start", -1)
        if not isinstance(start, int) or isinstance(start, bool):
            raise CorpusError(f"{label_file}: 'pattern_start' must be a message index")
        end = label.get("pattern_end", -1)
        if not isinstance(end, int) or isinstance(end, bool) or (0 <= end < start):
            raise CorpusError(f"{label_file}: 'pattern_end' must be a message index from pattern_start on")
        session = folder / str(label.get("session") or f"{name}.json")
        s = load_stream(session)
        runs.append(
            LabelledRun(name, label["label"], s.messages, s.status, s.permissions, tuple(also), start, end)
        )
    return runs


def corpus_sets(folder: Path, *, progress: bool = False) -> dict[str, list[LabelledRun]]:
    """The folder as one set, or, when it has no labels itself, each labelled sub-folder."""
    if any(folder.glob("*.label.json")):
        return {folder.name: load_corpus(folder, progress=progress)}
    subs = sorted(p for p in folder.iterdir() if p.is_dir() and any(p.glob("*.label.json")))
    return {p.name: load_corpus(p, progress=progress) for p in subs}


def _about(folder: Path) -> dict[str, object]:
    about = folder / "about.json"
    doc = read_json(about) if about.is_file() else {}
    return doc if isinstance(doc, dict) else {}


def set_title(folder: Path) -> str:
    """The set's own description (`about.json`'s title), or ""."""
    return str(_about(folder).get("title", ""))


def held_out(folder: Path) -> bool:
    """The set says it was never tuned on (`about.json`: `"held_out": true`)."""
    return _about(folder).get("held_out") is True


def pooled(evals: dict[str, Evaluation], names: list[str]) -> dict[str, object]:
    """The sets `names` taken together: runs, stuck runs caught, healthy runs called stuck,
    right pattern, caught within `ON_TIME_TURNS` turns of the onset."""
    got = [evals[n] for n in names]
    stuck, caught = sum(e.stuck_runs for e in got), sum(e.stuck_detected for e in got)
    return {
        "sets": names,
        "runs": sum(len(e.runs) for e in got),
        "stuck_runs": stuck,
        "stuck_detected": caught,
        "stuck_recall": caught / stuck if stuck else None,
        "healthy_runs": sum(e.healthy_runs for e in got),
        "false_alarms": [a for e in got for a in e.false_alarms],
        "right_named": sum(e.right_named for e in got),
        "on_time": sum(e.on_time for e in got),
        "mean_overlap": _mean_of([r.overlap for e in got for r in e.runs if r.overlap is not None]),
    }


def _mean_of(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _print_pooled(title: str, p: dict[str, object]) -> None:
    stuck, caught, named = (
        int(str(p["stuck_runs"])),
        int(str(p["stuck_detected"])),
        int(str(p["right_named"])),
    )
    alarms, names = p["false_alarms"], p["sets"]
    assert isinstance(alarms, list) and isinstance(names, list)
    console.print(
        f"[bold]{title}[/] ({', '.join(map(str, names))}): {p['runs']} runs; "
        f"stuck caught {caught}/{stuck} ({_pct(caught / stuck if stuck else None)}); "
        f"healthy called stuck {len(alarms)}/{p['healthy_runs']}; "
        f"right pattern {named}/{caught} ({_pct(named / caught if caught else None)}); "
        f"within {ON_TIME_TURNS} turns of onset {p['on_time']}/{caught}; "
        f"span overlap {_pct(p['mean_overlap'] if isinstance(p['mean_overlap'], float) else None)}",
        highlight=False,
    )


def compare(ev: Evaluation, runs: list[LabelledRun]) -> list[BaselineScore]:
    """octel's row, then each baseline's, on the same runs."""
    return [octel_row(ev), *(evaluate_baseline(name, runs, make) for name, (_, make) in BASELINES.items())]


def _print_compare(rows: list[BaselineScore]) -> None:
    heads = ("stuck runs flagged", "right pattern", "healthy called stuck", "mean lag", "max lag", "fired at")
    table = Table(*heads, padding=(0, 1))
    table.columns.insert(0, Column("rules", no_wrap=True))
    for b in rows:
        flagged = f"{b.flagged}/{b.stuck_runs} ({_pct(b.recall)})"
        alarms = f"{len(b.false_alarms)}/{b.healthy_runs}"
        table.add_row(
            b.name,
            flagged,
            f"{b.right_pattern}/{b.flagged}",
            alarms,
            _num(b.mean_lag),
            _num(b.max_lag),
            _pct(b.mean_point),
        )
    console.print(table)


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def _print_eval(name: str, ev: Evaluation, title: str = "") -> None:
    about = f" ({title})" if title else ""
    console.print(f"[bold]{name}[/]{about}: {len(ev.runs)} runs", highlight=False)
    # lag: messages after the pattern began; stuck at: share of the run seen when it turned stuck
    heads = ("TP", "FP", "FN", "precision", "recall", "lag", "max lag", f"≤{ON_TIME_TURNS} turns", "stuck at")
    table = Table(*heads, padding=(0, 1))
    table.columns.insert(0, Column("detector", no_wrap=True))
    for d in ev.detectors:
        counts = (str(d["true_positives"]), str(d["false_positives"]), str(d["false_negatives"]))
        table.add_row(
            d["detector"],
            *counts,
            _pct(d["precision"]),
            _pct(d["recall"]),
            _num(d["delay_messages"]),
            _num(d["max_delay_messages"]),
            str(d["on_time"]),
            _pct(d["delay_fraction"]),
        )
    console.print(table)
    alarms = f" ({', '.join(ev.false_alarms)})" if ev.false_alarms else ""
    console.print(
        f"stuck runs caught: {ev.stuck_detected}/{ev.stuck_runs} (recall {_pct(ev.stuck_recall)}); "
        f"right pattern named: {ev.right_named}/{ev.stuck_detected} ({_pct(ev.named_share)}); "
        f"mean lag {_num(ev.mean_lag)} assistant turns after the pattern began, "
        f"within {ON_TIME_TURNS} turns of it: {ev.on_time}/{ev.stuck_detected}, "
        f"stuck at {_pct(ev.mean_point)} of the run, span overlap {_pct(ev.mean_overlap)}; "
        f"healthy runs called stuck: {len(ev.false_alarms)}/{ev.healthy_runs}{alarms}; "
        f"marked suspect: {len(ev.suspect_healthy)}; "
        f"called stuck on the way, then cleared: {len(ev.passing_alarms)}",
        highlight=False,
    )


def print_evaluations(
    evals: dict[str, Evaluation],
    titles: dict[str, str] | None = None,
    baselines: dict[str, list[BaselineScore]] | None = None,
    pools: dict[str, dict[str, object]] | None = None,
) -> None:
    """The tables, set by set (and the comparison with the baselines, when run), then the
    tuning sets and the held-out sets each taken together."""
    for name, ev in evals.items():
        _print_eval(name, ev, (titles or {}).get(name, ""))
        if baselines and name in baselines:
            _print_compare(baselines[name])
    for title, p in (pools or {}).items():
        _print_pooled(title, p)
