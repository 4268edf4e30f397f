"""One way every query command prints: a table, `--json`, `--jsonl` or `--csv`.

`output_options` adds the three format flags to a command (as sqlite-utils does), so a format is
added here once for all commands; the command gets `output: Output`. `emit` prints the answer:
its table, the typed model as JSON, or its rows (newline-delimited JSON or CSV, nested fields
flattened as `tokens.input`) through `output_rows`.
"""

from __future__ import annotations

import csv
import enum
import functools
import inspect
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, TypeVar

import orjson
import typer
from pydantic import BaseModel

from cli.app import fail, print_json

__all__ = ["JsonOpt", "Output", "emit", "output_options", "output_rows"]

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]

_F = TypeVar("_F", bound=Callable[..., Any])


class Output(enum.Enum):
    table = "table"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"


_FLAGS = {
    "as_json": (Output.json, "--json", "Print the answer as JSON (the API's model)."),
    "as_jsonl": (Output.jsonl, "--jsonl", "Print one JSON object per row."),
    "as_csv": (Output.csv, "--csv", "Print the rows as CSV (nested fields as tokens.input …)."),
}


def output_options(fn: _F) -> _F:
    """Give a command `--json`, `--jsonl` and `--csv`; it receives the choice as `output`."""
    sig = inspect.signature(fn, eval_str=True)
    kept = [p for p in sig.parameters.values() if p.name != "output"]
    added = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=False,
            annotation=Annotated[bool, typer.Option(flag, help=help_text)],
        )
        for name, (_fmt, flag, help_text) in _FLAGS.items()
    ]

    @functools.wraps(fn)
    def command(*args: Any, **kwargs: Any) -> Any:
        chosen = [_FLAGS[name][0] for name in _FLAGS if kwargs.pop(name, False)]
        if len(chosen) > 1:
            fail("choose one of --json, --jsonl and --csv", 2)
        return fn(*args, output=chosen[0] if chosen else Output.table, **kwargs)

    params = [*kept, *added]
    command.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    return command  # type: ignore[return-value]


# one CSV cell: a JSON scalar (a list or an object is written as its JSON text)
Cell = str | int | float | bool | None


def _flat(row: Mapping[str, Any], prefix: str = "") -> dict[str, Cell]:
    out: dict[str, Cell] = {}
    for k, v in row.items():
        if isinstance(v, Mapping) and v:
            out.update(_flat(v, f"{prefix}{k}."))
        elif isinstance(v, list | dict):
            out[f"{prefix}{k}"] = orjson.dumps(v).decode()
        else:
            out[f"{prefix}{k}"] = v
    return out


def output_rows(rows: Iterable[Mapping[str, Any]], output: Output) -> None:
    """Rows as newline-delimited JSON or as CSV (a header of every column met, in order)."""
    if output is Output.jsonl:
        for row in rows:
            sys.stdout.write(orjson.dumps(row, option=orjson.OPT_NON_STR_KEYS).decode() + "\n")
        return
    flat = [_flat(r) for r in rows]
    columns = list(dict.fromkeys(k for r in flat for k in r))
    writer = csv.DictWriter(sys.stdout, columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(flat)


def _dump(row: Any, exclude: frozenset[str]) -> Mapping[str, Any]:
    if isinstance(row, BaseModel):
        return row.model_dump(mode="json", exclude_unset=True, exclude=set(exclude))
    return dict(row)


def emit(
    output: Output,
    answer: Any,
    rows: Iterable[Any],
    table: Callable[[], None],
    *,
    exclude: frozenset[str] = frozenset(),
) -> None:
    """Print `answer` as the chosen output: `table()` draws it, JSON dumps it, rows go row by row
    (a model row without the fields in `exclude`)."""
    if output is Output.table:
        table()
    elif output is Output.json:
        print_json(answer)
    else:
        output_rows((_dump(r, exclude) for r in rows), output)
