"""Makes the copies in tuning/ and heldout/ from the transcripts as their repositories hold them
(SOURCES.md names each): strings over ``LONG`` characters (tool output, file contents, prompts
pasted whole) are cut, and a transcript over ``CAP`` bytes ends at the last line that splits no
answer (no message id on both sides of the cut). Usage, ids, models, times and structure are
kept as written. Run: ``python trim.py SRC DEST``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

LONG = 400
CAP = 200_000
MARK = " …[trimmed for the corpus]"


def _cut(v: Any) -> Any:
    if isinstance(v, str) and len(v) > LONG:
        return v[:LONG] + MARK
    if isinstance(v, list):
        return [_cut(x) for x in v]
    if isinstance(v, dict):
        return {k: _cut(x) for k, x in v.items()}
    return v


def _id(obj: Any) -> str | None:
    msg = obj.get("message") if isinstance(obj, dict) else None
    return msg.get("id") if isinstance(msg, dict) and obj.get("type") == "assistant" else None


def trim(text: str) -> str:
    lines = [
        json.dumps(_cut(json.loads(s)), ensure_ascii=False, separators=(",", ":"))
        for s in text.splitlines()
        if s.strip()
    ]
    ids = [_id(json.loads(s)) for s in lines]
    out, size = [], 0
    for s in lines:
        if size + len(s.encode()) + 1 > CAP:
            # back to a cut that splits no answer
            while out and ids[len(out) - 1] is not None and ids[len(out) - 1] in ids[len(out) :]:
                out.pop()
            break
        out.append(s)
        size += len(s.encode()) + 1
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    src, dest = Path(sys.argv[1]), Path(sys.argv[2])
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(trim(src.read_text(encoding="utf-8")), encoding="utf-8")
