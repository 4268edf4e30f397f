"""Where a session's trace is: its trace and span ids, and the link the URL template makes."""

from __future__ import annotations

import string
from typing import TYPE_CHECKING
from urllib.parse import quote

from telemetry.otel_export.spans import span_id, trace_id

if TYPE_CHECKING:  # the settings check templates at every start: the read models load when used
    from telemetry.queries.models import TraceRef

__all__ = ["PLACEHOLDERS", "check_template", "trace_ref"]

PLACEHOLDERS = ("trace_id", "span_id", "project", "session_id")


def check_template(template: str) -> str:
    """The template if usable: an http(s) URL naming `{trace_id}` and only known placeholders."""
    if not template:
        return template
    if not template.startswith(("http://", "https://")):
        raise ValueError("must be an http(s) URL")
    try:
        names = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    except ValueError as e:
        raise ValueError(f"is not a URL template: {e}") from None
    unknown = names - set(PLACEHOLDERS)
    if unknown:
        raise ValueError(f"names {sorted(unknown)}; it may use {{{'}, {'.join(PLACEHOLDERS)}}}")
    if "trace_id" not in names:
        raise ValueError("must contain {trace_id}")
    return template


def trace_ref(root_session_id: str, session_id: str, template: str, project: str) -> TraceRef:
    """The trace id, the session's invoke_agent span id, and the link (None without a template)."""
    from telemetry.queries.models import TraceRef

    tid = f"{trace_id(root_session_id):032x}"
    sid = f"{span_id(root_session_id, f'session:{session_id}'):016x}"
    url = None
    if template:
        url = template.format(
            trace_id=tid, span_id=sid, project=quote(project, safe=""), session_id=session_id
        )
    return TraceRef(trace_id=tid, span_id=sid, url=url)
