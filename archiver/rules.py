"""Built-in secret rules for coding transcripts, as data.

Each rule: name, a bytes pattern over serialised JSON text, the group holding the secret,
whether it matches case-insensitively, and the literal anchors every match starts with (a
multi-pattern scanner looks for the anchors; the pattern then runs only where one is found).
Patterns never cross a JSON string boundary: their classes exclude ``"`` and ``\\``. Rule names
avoid words like "secret" or "token", so a placeholder never looks like a KEY=VALUE line.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RULES", "Rule"]

_V = rb"[^\s\"\\]"  # one unescaped, non-space byte inside a JSON string
# a double quote as the JSON text shows it: `"`, or escaped as `\"` inside a string, `\\\"` in
# JSON text nested in a string, and so on
_Q = rb'(?:\\\\)*\\?"'
# the optional quote that opens a KEY=VALUE value: ' or ` or an escaped double quote
_OPEN = rb"""(?:['`]|(?:\\\\)*\\")?"""
_KEYWORDS = (
    b"passw",
    b"secret",
    b"token",
    b"api_key",
    b"api-key",
    b"apikey",
    b"access_key",
    b"accesskey",
    b"private_key",
    b"credential",
    b"auth_",
    b"authorization",
)


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: bytes
    group: int
    caseless: bool
    anchors: tuple[bytes, ...]


RULES: tuple[Rule, ...] = (
    Rule(
        "key_block",
        rb"-----BEGIN[A-Z ]{0,40}PRIVATE KEY-----(?:[^\"\\]|\\.)*?"
        rb"(?:-----END[A-Z ]{0,40}PRIVATE KEY-----|(?=\"))",
        0,
        False,
        (b"-----BEGIN",),
    ),
    Rule(
        "github",
        rb"(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})",
        0,
        False,
        (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_"),
    ),
    Rule(
        "gitlab",
        rb"gl(?:pat|dt|rt|ptt|ft|soat)-[A-Za-z0-9_\-]{20,255}",
        0,
        False,
        (b"glpat-", b"gldt-", b"glrt-", b"glptt-", b"glft-", b"glsoat-"),
    ),
    Rule("anthropic", rb"sk-ant-[A-Za-z0-9_\-]{20,255}", 0, False, (b"sk-ant-",)),
    Rule("openai", rb"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,255}", 0, False, (b"sk-",)),
    Rule(
        "aws",
        rb"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16,20}",
        0,
        False,
        (b"AKIA", b"ASIA", b"AGPA", b"AIDA", b"AROA", b"ANPA", b"ANVA", b"AIPA"),
    ),
    Rule("slack", rb"(?:xox[abposre]|xapp)-[A-Za-z0-9\-]{10,255}", 0, False, (b"xox", b"xapp-")),
    Rule(
        "slack",
        rb"hooks\.slack\.com/services/[A-Za-z0-9/]{20,255}",
        0,
        False,
        (b"hooks.slack.com/services/",),
    ),
    Rule("jwt", rb"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", 0, False, (b"eyJ",)),
    Rule("forgejo", rb"authorization: ?token ([0-9a-f]{40})", 1, True, (b"authorization",)),
    Rule("url_userinfo", rb"://[^\s\"\\/:@]{1,200}:([^\s\"\\/@\[][^\s\"\\/@]{0,199})@", 1, False, (b"://",)),
    Rule("bearer", rb"(?:bearer|basic) +([a-z0-9._~+/=\-]{16,})", 1, True, (b"bearer", b"basic")),
    # KEY=VALUE lines (quoted or not: shell, .env, YAML, headers) and "key": "value" JSON
    # fields, also as JSON text inside a string, with a secret-looking key (Forgejo's
    # token=<hex> and the apiKey of /config/providers included). A value that is a call or a
    # generic type (`password = input()`, `token: Optional[str]`) is code, not a secret. One
    # pattern per keyword keeps each plain-regex scan on the engine's literal-prefix search
    *(
        Rule(
            "assignment",
            word
            + rb"[a-z0-9_]{0,30}(?:"
            + _Q
            + rb" {0,3}: {0,3}"
            + _Q
            + rb"| {0,3}[=:] {0,3}"
            + _OPEN
            + rb")(?!(?:bearer|basic|token) )(?![a-z_][a-z0-9_.]*[(\[])([^\s\"\\\[$'`{(<]"
            + _V
            + rb"{5,})",
            1,
            True,
            (word,),
        )
        for word in _KEYWORDS
    ),
)
