"""Every query command prints a table, `--json`, `--jsonl` or `--csv`; piped tables are never cut."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from octelrun import Octel
from storeseed import add, session

from cli.app import console
from cli.archive import _render

QUERIES = [
    ("sessions", "list"),
    ("sessions", "show", "ses_root"),
    ("sessions", "tree", "ses_root"),
    ("cycles", "list"),
    ("cycles", "summary", "--since", "2026-10-01T00:00:00+00:00"),
    ("costs", "--by", "agent"),
    ("runs", "list"),
    ("why", "cyc-2"),
    ("detect", str(Path(__file__).parent.parent / "fixtures" / "opencode" / "doom_loop.json")),
]


@pytest.mark.parametrize("args", QUERIES, ids=lambda a: " ".join(a[:2]))
def test_jsonl_and_csv_print_the_same_rows(seeded: Octel, args: tuple[str, ...]) -> None:
    lines = seeded(*args, "--jsonl")
    assert lines.exit_code == 0, lines.output + lines.stderr
    rows = [json.loads(line) for line in lines.stdout.splitlines()]
    table = seeded(*args, "--csv")
    assert table.exit_code == 0, table.stderr
    parsed = list(csv.DictReader(io.StringIO(table.stdout)))
    assert len(parsed) == len(rows)
    for row, flat in zip(rows, parsed, strict=True):
        for k, v in row.items():
            if not isinstance(v, dict | list) and k != "elapsed_s":  # the clock moves between runs
                assert flat[k] == ("" if v is None else str(v)), k
    assert seeded.json(*args)  # and the whole answer as JSON


def test_formats_exclude_each_other(seeded: Octel) -> None:
    r = seeded("sessions", "list", "--json", "--csv")
    assert r.exit_code == 2 and "choose one of" in r.stderr


def test_csv_flattens_nested_fields(seeded: Octel) -> None:
    [row, *_] = csv.DictReader(io.StringIO(seeded("sessions", "list", "--csv").stdout))
    assert {"tokens.input", "tokens.cache_write", "cache_hit_ratio"} <= set(row)


def test_piped_tables_neither_wrap_nor_cut(octel: Octel) -> None:
    title = "A very long title that a narrow terminal would wrap or cut " * 4
    add(octel.engine, session("ses_long_title_" + "x" * 60, title=title.strip(), label="l" * 120))
    r = octel.runner.invoke(  # no COLUMNS: the width a pipe gets
        __import__("cli").app,
        ["--data-dir", str(octel.data_dir), "--database-url", octel.url, "sessions", "list"],
    )
    assert r.exit_code == 0, r.output
    assert "…" not in r.stdout
    [line] = [x for x in r.stdout.splitlines() if "ses_long_title_" in x]
    assert "x" * 60 in line and "l" * 120 in line


def test_piped_archive_table_keeps_whole_paths(octel: Octel) -> None:
    assert octel("sessions", "list").exit_code == 0  # the command set the piped width
    path = "/very/long/archive/folder/" + "deep/" * 30 + "ses_abc.json"
    with console.capture() as cap:
        _render({"root_session_id": "ses_abc", "complete": True, "files": [path], "sessions": 1})
    assert path in cap.get().replace("\n", "") and path in cap.get() and "…" not in cap.get()
