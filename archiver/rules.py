"""Built-in secret rules for coding transcripts, as data.

Each rule: name, a bytes pattern over serialised JSON text, the group holding the secret,
whether it matches case-insensitively, and the literal anchors every match starts with (a
multi-pattern scanner looks for the anchors; the pattern then runs only where one is found).
Patterns never cross a JSON string boundary: their classes exclude ``"`` and ``\\``, or take
an escape sequence whole. Rule names avoid words like "secret" or "token", so a placeholder
never looks like a KEY=VALUE line.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RULES", "Rule"]

# a double quote as the JSON text shows it: `"`, or escaped as `\"` inside a string, `\\\"` in
# JSON text nested in a string, and so on
_Q = rb'(?:\\\\)*\\?"'
# the optional quote that opens a value: ' or ` (group `q`, so the value stops at the closing
# quote and leaves it in place) or an escaped double quote (the value stops at its backslash)
_OPEN = rb"""(?:(?P<q>['`])|(?:\\\\)*\\")?"""
# one more byte of a value: inside '…' or `…` the closing quote ends it; a backquote ends an
# unquoted value too (in a shell it would start a command, in Markdown it closes `code`)
_VQ = rb"(?(q)[^\s\"\\'`]|[^\s\"\\`])"
# the first byte of a value: not a variable, a placeholder, a call, the next flag, nor what
# closes a structure (`-p \"}` at the end of JSON text nested in a string is no password)
_FIRST = rb"[^\s\"\\\[$'`{(<\-}\]),]"
# the rest of one shell command (JSON escapes taken whole, so `\"` never ends a string early)
_CMD = rb'(?:[^"\\;|&]|\\[^n]){0,300}?'
# a value the shape of a metavar or a word in prose (`--token TOKEN`, `--password option`)
_NOT_PLACEHOLDER = (
    rb"(?!(?:[A-Z][A-Z_-]*|(?:flag|option|argument|parameter|instead|value)s?)[,.;:)]?(?:[\s\"\\`]|$))"
)
_KEYWORDS = (
    b"passw",
    b"passphrase",
    b"mysql_pwd",
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


# flag names ending in a secret word, grouped by a shared literal start (one scan each)
_FLAG_WORDS = (
    (b"pass", (b"word", b"wd", b"phrase")),
    (b"token", (b"",)),
    (b"secret", (b"", b"-key", b"_key", b"-access-key", b"_access_key")),
    (b"api", (b"-key", b"_key", b"key")),
)


def _ends_flag(word: bytes) -> bytes:
    """After ``-<word>``: it ends a flag name (``--word``, ``-word``, ``--db-word``, up to 24
    bytes before the word) that is not a yes/no switch (``--no-password``,
    ``--ask-vault-password``). A hyphenated word of prose (``per-token cost``) has no leading
    dash and is no flag. Python's lookbehinds are fixed-width: one per length."""
    start = rb"[\s\"'`=(]"
    after = [start + b"-", start + b"--"]
    after += [start + d + rb"[a-z0-9_-]{%d}-" % n for d in (b"-", b"--") for n in range(1, 25)]
    switch = (b"-no-", b"ask-", b"ask-vault-", b"prompt-", b"show-")
    return (
        b"(?:"
        + b"|".join(b"(?<=" + a + word + b")" for a in after)
        + b")"
        + b"".join(b"(?<!" + w + word + b")" for w in switch)
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
            + _VQ
            + rb"{5,})",
            2,
            True,
            (word,),
        )
        for word in _KEYWORDS
    ),
    # space-separated flags: `--password X`, `--db-password 'X'`, `-token X` (Go style),
    # `--api-key=X`. The match starts at the dash before the keyword (one literal scan per
    # keyword); the lookbehinds check it ends a flag name and is not a yes/no switch
    # (`--no-password`, `--ask-vault-password`). `--password-file PATH` is no match: the
    # keyword has to end the flag name. Case-sensitive, so a metavar (`--token TOKEN`) is told
    # from a value
    *(
        Rule(
            "flag",
            b"-"
            + prefix
            + b"(?:"
            + b"|".join(rest + _ends_flag(prefix + rest) for rest in rests)
            + rb")(?: {1,3}|=)"
            + _OPEN
            + _NOT_PLACEHOLDER
            + rb"("
            + _FIRST
            + _VQ
            + rb"{5,})",
            2,
            False,
            (b"-" + prefix,),
        )
        for prefix, rests in _FLAG_WORDS
    ),
    # short options that take a password, for the commands where they do (elsewhere `-p`
    # is a port, a protocol or "parents"): `mysql -pX` (attached only: `-p X` prompts and X is
    # the database), `docker|podman|… login -p X`, `sshpass -p X`, `redis-cli -a X`,
    # `curl -u user:X`, `openssl … -passin pass:X`
    Rule(
        "command",
        rb"mysql(?<![\w.-]mysql)[a-z_-]*(?= )" + _CMD + rb" -p" + _OPEN + rb"(" + _FIRST + _VQ + rb"*)",
        2,
        False,
        (b"mysql",),
    ),
    Rule(
        "command",
        rb"mariadb(?<![\w.-]mariadb)[a-z_-]*(?= )" + _CMD + rb" -p" + _OPEN + rb"(" + _FIRST + _VQ + rb"*)",
        2,
        False,
        (b"mariadb",),
    ),
    Rule(
        "command",
        rb"login(?:"
        + b"|".join(
            rb"(?<=" + c + rb" login)"
            for c in (
                b"docker",
                b"podman",
                b"nerdctl",
                b"buildah",
                b"skopeo",
                b"oras",
                b"registry",
                b"cf",
                b"oc",
                b"az",
            )
        )
        + rb") "
        + _CMD
        + rb"(?<= )-p(?: {1,3}|=)?"
        + _OPEN
        + rb"("
        + _FIRST
        + _VQ
        + rb"*)",
        2,
        False,
        (b"login",),
    ),
    Rule(
        "command",
        rb"sshpass(?: +-[ev])* +-p *" + _OPEN + rb"(" + _FIRST + _VQ + rb"*)",
        2,
        False,
        (b"sshpass",),
    ),
    Rule(
        "command",
        rb"redis-cli " + _CMD + rb"(?<= )(?:-a|--pass) +" + _OPEN + rb"(" + _FIRST + _VQ + rb"*)",
        2,
        False,
        (b"redis-cli",),
    ),
    Rule(
        "command",
        rb"curl(?<![\w.-]curl) "
        + _CMD
        + rb"(?<= )(?:-[uU] *|--(?:proxy-)?user(?: +|=))"
        + _OPEN
        + rb"[^\s\"\\:'`]*:("
        + _FIRST
        + _VQ
        + rb"*)",
        2,
        False,
        (b"curl",),
    ),
    Rule(
        "command",
        rb"-pass(?:in|out)? +" + _OPEN + rb"pass:(" + _FIRST + _VQ + rb"*)",
        2,
        False,
        (b"-pass",),
    ),
)
