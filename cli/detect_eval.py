"""`octel detect --eval`: labelled corpora in, recall, false alarms, pattern named and lag out.

A corpus folder holds `NAME.label.json` files beside the sessions they label; a folder whose
sub-folders are corpora (the recorded corpus's `dev/` and `heldout/`) is evaluated set by set.
A set folder may say what it is in `about.json` (`{"title": ...}`), printed beside its name.
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
from detectors.evaluation import Evaluation, LabelledRun

__all__ = ["compare", "corpus_sets", "load_corpus", "print_evaluations", "set_title"]


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
        session = folder / str(label.get("session") or f"{name}.json")
        s = load_stream(session)
        runs.append(
            LabelledRun(name, label["label"], s.messages, s.status, s.permissions, tuple(also), start)
        )
    return runs


def corpus_sets(folder: Path, *, progress: bool = False) -> dict[str, list[LabelledRun]]:
    """The folder as one set, or, when it has no labels itself, each labelled sub-folder."""
    if any(folder.glob("*.label.json")):
        return {folder.name: load_corpus(folder, progress=progress)}
    subs = sorted(p for p in folder.iterdir() if p.is_dir() and any(p.glob("*.label.json")))
    return {p.name: load_corpus(p, progress=progress) for p in subs}


def set_title(folder: Path) -> str:
    """The set's own description (`about.json`'s title), or ""."""
    about = folder / "about.json"
    if not about.is_file():
        return ""
    doc = read_json(about)
    return str(doc.get("title", "")) if isinstance(doc, dict) else ""


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
    table = Table("TP", "FP", "FN", "precision", "recall", "lag", "max lag", "stuck at", padding=(0, 1))
    table.columns.insert(0, Column("detector", no_wrap=True))
    for d in ev.detectors:
        counts = (str(d.true_positives), str(d.false_positives), str(d.false_negatives))
        table.add_row(
            d.detector,
            *counts,
            _pct(d.precision),
            _pct(d.recall),
            _num(d.delay_messages),
            _num(d.max_delay_messages),
            _pct(d.delay_fraction),
        )
    console.print(table)
    alarms = f" ({', '.join(ev.false_alarms)})" if ev.false_alarms else ""
    console.print(
        f"stuck runs caught: {ev.stuck_detected}/{ev.stuck_runs} (recall {_pct(ev.stuck_recall)}); "
        f"right pattern named: {ev.right_named}/{ev.stuck_detected} ({_pct(ev.named_share)}); "
        f"mean lag {_num(ev.mean_lag)} assistant turns after the pattern began, "
        f"stuck at {_pct(ev.mean_point)} of the run; "
        f"healthy runs called stuck: {len(ev.false_alarms)}/{ev.healthy_runs}{alarms}; "
        f"marked suspect: {len(ev.suspect_healthy)}; "
        f"called stuck on the way, then cleared: {len(ev.passing_alarms)}",
        highlight=False,
    )


def print_evaluations(
    evals: dict[str, Evaluation],
    titles: dict[str, str] | None = None,
    baselines: dict[str, list[BaselineScore]] | None = None,
) -> None:
    """The tables, set by set (and the comparison with the baselines, when run)."""
    for name, ev in evals.items():
        _print_eval(name, ev, (titles or {}).get(name, ""))
        if baselines and name in baselines:
            _print_compare(baselines[name])
