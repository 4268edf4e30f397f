"""The span names and attribute keys octel exports, declared once as data.

Names follow the OpenTelemetry GenAI semantic conventions at `SEMCONV_VERSION`; the
OpenInference keys alongside them (`openinference.span.kind`, `llm.token_count.*`, `session.id`)
are what Arize Phoenix reads to give a span its kind and to sum tokens. docs/otel.md lists every
attribute in `ATTRIBUTES`, and a test keeps the two in step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["ATTRIBUTES", "SCHEMA_URL", "SEMCONV_VERSION", "Attribute", "documented_keys"]

SEMCONV_VERSION = "1.44.0"
SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"

SpanName = Literal["dispatch_cycle", "invoke_agent", "chat", "execute_tool", "event", "resource"]


@dataclass(frozen=True, slots=True)
class Attribute:
    key: str
    on: tuple[SpanName, ...]
    meaning: str
    content: bool = False  # only exported with OCTEL_OTEL_CONTENT=1


_AGENT: tuple[SpanName, ...] = ("invoke_agent",)
_CHAT: tuple[SpanName, ...] = ("chat",)
_TOOL: tuple[SpanName, ...] = ("execute_tool",)
_ALL: tuple[SpanName, ...] = ("dispatch_cycle", "invoke_agent", "chat", "execute_tool")

ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute("service.name", ("resource",), "The service name setting (`OCTEL_OTEL_SERVICE_NAME`)."),
    Attribute(
        "openinference.project.name",
        ("resource",),
        "The same name: Phoenix files the trace under this project.",
    ),
    Attribute(
        "gen_ai.operation.name",
        ("invoke_agent", "chat", "execute_tool"),
        "`invoke_agent`, `chat` or `execute_tool`.",
    ),
    Attribute(
        "gen_ai.conversation.id", ("invoke_agent", "chat", "execute_tool"), "The root session id of the tree."
    ),
    Attribute(
        "session.id",
        _ALL,
        "The root session id again (OpenInference: Phoenix groups traces into sessions by it).",
    ),
    Attribute(
        "gen_ai.agent.name",
        _AGENT,
        "The agent of the session (`build`, `general`, a subagent's name; "
        "Claude Code: `main`, a subagent's type).",
    ),
    Attribute("gen_ai.agent.id", _AGENT, "The session id of this agent's own session."),
    Attribute(
        "gen_ai.provider.name", ("invoke_agent", "chat"), "The model provider (OpenCode's `providerID`)."
    ),
    Attribute("gen_ai.request.model", _CHAT, "The model asked for (OpenCode's `modelID`)."),
    Attribute("gen_ai.response.model", _CHAT, "The model that answered (the same id; OpenCode records one)."),
    Attribute("gen_ai.response.id", _CHAT, "The assistant message id."),
    Attribute("gen_ai.response.finish_reasons", _CHAT, "The turn's finish reason as a one-element list."),
    Attribute(
        "gen_ai.usage.input_tokens",
        _CHAT,
        "Input tokens including cache reads and writes (the convention's meaning).",
    ),
    Attribute("gen_ai.usage.output_tokens", _CHAT, "Output tokens including reasoning tokens."),
    Attribute("gen_ai.usage.cache_read.input_tokens", _CHAT, "Input tokens read from the provider's cache."),
    Attribute(
        "gen_ai.usage.cache_creation.input_tokens", _CHAT, "Input tokens written to the provider's cache."
    ),
    Attribute("gen_ai.usage.reasoning.output_tokens", _CHAT, "Reasoning tokens."),
    Attribute(
        "gen_ai.tool.name",
        _TOOL,
        "The tool (`bash`, `read`, `task`, …; Claude Code: `Bash`, `Read`, `Agent`, …).",
    ),
    Attribute("gen_ai.tool.call.id", _TOOL, "The tool call id the model gave."),
    Attribute("gen_ai.tool.type", _TOOL, "Always `function`."),
    Attribute("gen_ai.tool.call.arguments", _TOOL, "The tool input as JSON (redacted).", content=True),
    Attribute("gen_ai.tool.call.result", _TOOL, "The tool output or error text (redacted).", content=True),
    Attribute(
        "gen_ai.input.messages",
        _CHAT,
        "The user prompt that started the session, on its first turn (redacted).",
        content=True,
    ),
    Attribute("gen_ai.output.messages", _CHAT, "The turn's text parts (redacted).", content=True),
    Attribute(
        "error.type",
        ("chat", "execute_tool", "dispatch_cycle"),
        "The error name of a failed turn, `tool_error` for a failed tool, a cycle's error kind.",
    ),
    Attribute(
        "openinference.span.kind", _ALL, "`CHAIN` (cycle), `AGENT`, `LLM` or `TOOL`: Phoenix's span kind."
    ),
    Attribute("llm.model_name", _CHAT, "The model (Phoenix's name for it)."),
    Attribute("llm.provider", _CHAT, "The provider (Phoenix's name for it)."),
    Attribute("llm.token_count.prompt", _CHAT, "Same as `gen_ai.usage.input_tokens` (Phoenix sums these)."),
    Attribute("llm.token_count.completion", _CHAT, "Same as `gen_ai.usage.output_tokens`."),
    Attribute("llm.token_count.total", _CHAT, "Prompt plus completion: every token kind octel counts."),
    Attribute("llm.token_count.prompt_details.cache_read", _CHAT, "Cache-read tokens (Phoenix's name)."),
    Attribute("llm.token_count.prompt_details.cache_write", _CHAT, "Cache-write tokens (Phoenix's name)."),
    Attribute("llm.token_count.completion_details.reasoning", _CHAT, "Reasoning tokens (Phoenix's name)."),
    Attribute("tool.name", _TOOL, "The tool (Phoenix's name for it)."),
    Attribute(
        "input.value",
        ("chat", "execute_tool"),
        "Prompt or tool input, as Phoenix shows it (redacted).",
        content=True,
    ),
    Attribute(
        "output.value",
        ("chat", "execute_tool"),
        "Turn text or tool output, as Phoenix shows it (redacted).",
        content=True,
    ),
    Attribute(
        "octel.session.id",
        ("invoke_agent", "chat", "execute_tool"),
        "The session (root or subagent) the span belongs to.",
    ),
    Attribute("octel.parent_session.id", _AGENT, "The parent session of a subagent."),
    Attribute("octel.session.depth", _AGENT, "0 for the root, 1 for its subagents, …"),
    Attribute("octel.session.title", _AGENT, "The session title (redacted at archive time)."),
    Attribute("octel.session.label", _AGENT, "The archive label, when there is one."),
    Attribute(
        "octel.session.verdict",
        _AGENT,
        "The worst detector verdict of the session (healthy, suspect, stuck).",
    ),
    Attribute("octel.message.id", ("chat", "execute_tool"), "The assistant message the span comes from."),
    Attribute("octel.part.id", _TOOL, "The tool part id."),
    Attribute(
        "octel.turn.in_flight",
        _CHAT,
        "True when the turn had not completed when archived (the span then ends at its last known time).",
    ),
    Attribute(
        "octel.cost_usd",
        ("invoke_agent", "chat"),
        "octel's cost in US dollars: the turn's, or the session's own (children excluded) on invoke_agent.",
    ),
    Attribute(
        "octel.tokens.input",
        ("invoke_agent", "chat"),
        "OpenCode's input tokens (cache excluded); on invoke_agent, the session's own total.",
    ),
    Attribute(
        "octel.tokens.output", ("invoke_agent", "chat"), "OpenCode's output tokens (reasoning excluded)."
    ),
    Attribute("octel.tokens.reasoning", ("invoke_agent", "chat"), "Reasoning tokens."),
    Attribute("octel.tokens.cache_read", ("invoke_agent", "chat"), "Cache-read tokens."),
    Attribute("octel.tokens.cache_write", ("invoke_agent", "chat"), "Cache-write tokens."),
    Attribute("octel.tool.status", _TOOL, "The tool part's status: completed, error, running, pending."),
    Attribute(
        "octel.cycle.id", ("dispatch_cycle", "invoke_agent"), "The dispatcher cycle that names the session."
    ),
    Attribute("octel.cycle.driver", ("dispatch_cycle",), "The cycle's driver."),
    Attribute("octel.cycle.terminal_state", ("dispatch_cycle",), "How the cycle ended."),
    Attribute("octel.cycle.worker_outcome", ("dispatch_cycle",), "The worker's outcome."),
    Attribute("octel.cycle.candidates", ("dispatch_cycle",), "Candidates counted by the cycle."),
    Attribute("octel.cycle.claims", ("dispatch_cycle",), "Claims."),
    Attribute("octel.cycle.swept", ("dispatch_cycle",), "Swept."),
    Attribute("octel.cycle.processed", ("dispatch_cycle",), "Processed."),
    Attribute("octel.cycle.escalated", ("dispatch_cycle",), "Escalated."),
    Attribute(
        "octel.cycle.in_flight",
        ("dispatch_cycle",),
        "True when the cycle had not finished (the span ends at the tree's last activity).",
    ),
    Attribute("gen_ai.evaluation.name", ("event",), "On a `gen_ai.evaluation.result` event: the detector."),
    Attribute("gen_ai.evaluation.score.value", ("event",), "The detector's score in [0, 1]."),
    Attribute("gen_ai.evaluation.score.label", ("event",), "The verdict: healthy, suspect or stuck."),
    Attribute("gen_ai.evaluation.explanation", ("event",), "One sentence: what the detector found, where."),
    Attribute("octel.finding.start_index", ("event",), "Index of the message where the pattern began."),
)


def documented_keys() -> list[str]:
    return [a.key for a in ATTRIBUTES]
