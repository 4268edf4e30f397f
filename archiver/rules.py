"""Built-in secret rules for coding transcripts, as data.

Each rule: name, a bytes pattern over serialised JSON text, the group holding the secret,
whether it matches case-insensitively, the literal anchors every match starts with (a
multi-pattern scanner looks for the anchors; the pattern then runs only where one is found;
a rule without anchors is a plain scan), and an optional check on the secret found.
Patterns never cross a JSON string boundary: their classes exclude ``"`` and ``\\``, or take
an escape sequence whole. Rule names avoid words like "secret" or "token", so a placeholder
never looks like a KEY=VALUE line.

The table is built when a ``Redactor`` is made, not when this module is imported, so a
changed rule (a test's, or a mutation tester's) takes effect in the next redactor.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from archiver.command_rules import command_rules
from archiver.rule import Rule
from archiver.vendor_rules import signature_rules, vendor_rules

__all__ = ["Parts", "Rule", "builtin_rules"]


@dataclass(frozen=True)
class Parts:
    """Pattern pieces shared by several rules (made by ``_parts``)."""

    quote: bytes
    open: bytes
    more: bytes
    first: bytes
    cmd: bytes
    line_start: bytes
    not_placeholder: bytes
    not_number: bytes
    not_prose: bytes
    not_type: bytes
    not_example: bytes


def _parts() -> Parts:
    return Parts(
        # a double quote as the JSON text shows it: `"`, or escaped as `\"` inside a string,
        # `\\\"` in JSON text nested in a string, and so on
        quote=rb'(?:\\\\)*\\?"',
        # the optional quote that opens a value: ' or ` (group `q`, so the value stops at the
        # closing quote and leaves it in place) or an escaped double quote (the value stops
        # at its backslash)
        open=rb"""(?:(?P<q>['`])|(?:\\\\)*\\")?""",
        # one more byte of a value: a quote ends it, inside '…' or `…` the closing one, in an
        # unquoted value a backquote (in a shell it would start a command, in Markdown it
        # closes code) or the ' that closes the text around it (`RPC='https://…?api-key=X';`)
        more=rb"[^\s\"\\'`]",
        # the first byte of a value: not a variable, a placeholder, a call, the next flag, nor
        # what closes a structure (`-p \"}` at the end of JSON text nested in a string)
        first=rb"[^\s\"\\\[$'`{(<\-}\]),]",
        # the rest of one shell command (JSON escapes taken whole, so `\"` never ends a
        # string early, and `\n` ends the command)
        cmd=rb'(?:[^"\\;|&]|\\[^n]){0,300}?',
        # the start of a line in multi-line text: a `\n`, `\t` or `\r` escape in the JSON text
        line_start=rb"\\[ntr]",
        # a value the shape of a metavar or a word in prose (`--token TOKEN`, `--password option`)
        not_placeholder=(
            rb"(?!(?:[A-Z][A-Z_-]*|(?:flag|option|argument|parameter|instead|value)s?)[,.;:)]?(?:[\s\"\\`]|$))"
        ),
        # a value that is a number, a quantity or a range (`70-120k`, `1,024`, `~2.5m`, `30s`,
        # `10..20`): a count or an estimate, never a secret. Lower case: caseless rules run on
        # lowered text
        not_number=(
            rb"(?!(?:[~^]|[<>]=?)?\d[\d.,_]*(?:[kmgt]b?|b|ms|s|%|x)?"
            rb"(?:(?:-|\xe2\x80\x93|\.\.|~|/)~?\d[\d.,_]*(?:[kmgt]b?|b|ms|s|%|x)?)?(?:[\s\"\\'`,;)\]}]|$))"
        ),
        # a word of prose followed by more words (`token: estimated from the usage`)
        not_prose=rb"(?![a-z]{2,40} +[a-z]{2})",
        # a value that stands for one in an example or a test (`OWM_API_KEY=your_key_here`,
        # `API_KEY = "test-key"`): what a user is to fill in, not a secret. Lower case
        not_example=(
            rb"(?!your[_-]|[a-z0-9_-]*[_-]here(?:[\s\"\\,;)\]}]|$)"
            rb"|(?:x{3,}|changeme|placeholder|dummy|example|sample|fake|test)(?:[_-]?(?:api[_-]?)?"
            rb"(?:key|token|secret|password|value))?(?:[\s\"\\,;)\]}]|$))"
        ),
        # a type naming what a field holds (`token: string;`, `token_account: Pubkey,`,
        # `secret: Uint8Array | undefined`): code, not a secret. Lower case, as `not_number`
        not_type=(
            rb"(?!(?:string|boolean|number|integer|double|object|unknown|pubkey|buffer|uint8array"
            rb"|bytes|secretstr|option|optional)(?:[\s\"\\,;)\]}>|?=]|$))"
        ),
    )


def _ends_flag(word: bytes, p: Parts) -> bytes:
    """After ``-<word>``: it ends a flag name (``--word``, ``-word``, ``--db-word``, up to 24
    bytes before the word) that is not a yes/no switch (``--no-password``,
    ``--ask-vault-password``). A hyphenated word of prose (``per-token cost``) has no leading
    dash and is no flag. Python's lookbehinds are fixed-width: one per length."""
    starts = (rb"[\s\"'`=(]", p.line_start)
    after = [s + d for s in starts for d in (b"-", b"--")]
    after += [s + d + rb"[a-z0-9_-]{%d}-" % n for s in starts for d in (b"-", b"--") for n in range(1, 25)]
    switch = (b"-no-", b"ask-", b"ask-vault-", b"prompt-", b"show-")
    return (
        b"(?:"
        + b"|".join(b"(?<=" + a + word + b")" for a in after)
        + b")"
        + b"".join(b"(?<!" + w + word + b")" for w in switch)
    )


def _random_like(secret: bytes) -> bool:
    """A 40-character run that looks generated (an AWS secret access key), not a path, a
    word or a hex digest: upper and lower case and digits, many distinct characters, few
    slashes."""
    return (
        any(65 <= b <= 90 for b in secret)
        and any(97 <= b <= 122 for b in secret)
        and any(48 <= b <= 57 for b in secret)
        and len(set(secret)) >= 20
        and secret.count(b"/") <= 3
    )


def _six_characters(secret: bytes) -> bool:
    # the pattern counts bytes: three non-ASCII characters are six bytes, and no secret
    return len(secret.decode("utf-8", "replace")) >= 6


def _unmasked(secret: bytes) -> bool:
    """Six characters or more, and not a token a tool printed masked (`gho_****…`)."""
    return _six_characters(secret) and b"***" not in secret


def _has_digit(secret: bytes) -> bool:
    return any(48 <= b <= 57 for b in secret)


def _token_rules() -> list[Rule]:
    """Secrets recognised by their own shape, each at a token boundary (a key block starts
    with its dashes, a bare AWS secret has its own)."""
    shaped = [
        Rule(
            "key_block",
            rb"-----BEGIN[A-Z ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:[^\"\\]|\\.)*?"
            rb"(?:-----END[A-Z ]{0,40}PRIVATE KEY(?: BLOCK)?-----|(?=\"))",
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
        # a key body is random: it holds a digit, where a hyphenated name (`sk-learn-…`) has none
        Rule(
            "openai",
            rb"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,255}",
            0,
            False,
            (b"sk-",),
            _has_digit,
        ),
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
        Rule(
            "jwt",
            rb"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
            0,
            False,
            (b"eyJ",),
        ),
        # a bare AWS secret access key: exactly 40 base64 characters standing alone (a line
        # start `\n` before it counts as standing alone), that look generated
        Rule(
            "aws_secret",
            rb"(?:(?<![A-Za-z0-9/+])|(?<=\\[ntr]))[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
            0,
            False,
            (),
            _random_like,
            rb"[A-Za-z0-9/+]{40,}",
        ),
    ]
    return [
        r if r.name in ("key_block", "aws_secret") else dataclasses.replace(r, boundary=True) for r in shaped
    ]


def _context_rules(p: Parts) -> list[Rule]:
    """Secrets recognised by what stands before them: a header, a URL, a key, a flag."""
    keywords = (
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
    flag_words = (
        (b"pass", (b"word", b"wd", b"phrase")),
        (b"token", (b"",)),
        (b"secret", (b"", b"-key", b"_key", b"-access-key", b"_access_key")),
        (b"api", (b"-key", b"_key", b"key")),
    )
    return [
        Rule("forgejo", rb"authorization: ?token ([0-9a-f]{40})", 1, True, (b"authorization",)),
        # the password in scheme://user:password@host, the user may be empty (redis://:pw@h)
        # and the password may hold `/` and `@`: it ends at the `@` before a host name (or
        # [IPv6]) with an optional port that ends the authority. `host:8080/…@…` is a port
        # and a path, not a password
        Rule(
            "url_userinfo",
            rb"://[^\s\"\\/:@]{0,200}:(?!\d{1,5}/)([^\s\"\\\[][^\s\"\\]{0,199}?)@"
            rb"(?=(?:[A-Za-z0-9._~%\-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?(?![A-Za-z0-9._~%:@\-]))",
            1,
            False,
            (b"://",),
        ),
        Rule("bearer", rb"(?:bearer|basic) +([a-z0-9._~+/=\-]{16,})", 1, True, (b"bearer", b"basic")),
        # KEY=VALUE lines (quoted or not: shell, .env, YAML, headers) and "key": "value" JSON
        # fields, also as JSON text inside a string, with a secret-looking key (Forgejo's
        # token=<hex> and the apiKey of /config/providers included). A value that is a call or
        # a generic type (`password = input()`, `token: Optional[str]`) is code, not a secret.
        # One pattern per keyword keeps each plain-regex scan on the literal-prefix search
        *(
            Rule(
                "assignment",
                # a key naming a secret's source, kind or state holds none (apiKeySource,
                # token_type, TOKEN_STATUS, token_count)
                word
                + rb"(?![a-z0-9_]{0,30}?(?:source|helper|type|name|env|file|path|status|state|count|scope)(?:"
                + (p.quote + rb"| {0,3}[=:]))[a-z0-9_]{0,30}(?:")
                + p.quote
                + rb" {0,3}: {0,3}"
                + p.quote
                # `=`, `:` and Go's `:=`; not `::`, a path (`anchor_spl::token::{self, …}`)
                + rb"| {0,3}(?::?=|:(?!:)) {0,3}"
                + p.open
                + rb")(?!(?:bearer|basic|token) )(?![a-z_][a-z0-9_.:]*[(\[<])"
                + p.not_type
                + p.not_example
                + p.not_number
                + p.not_prose
                + rb"([^\s\"\\\[$'`{(<]"
                + p.more
                + rb"{5,})",
                2,
                True,
                (word,),
                _unmasked,
            )
            for word in keywords
        ),
        # space-separated flags: `--password X`, `--db-password 'X'`, `-token X` (Go style),
        # `--api-key=X`. The match starts at the dash before the keyword; the lookbehinds check
        # it ends a flag name and is not a yes/no switch. `--password-file PATH` is no match:
        # the keyword has to end the flag name. Case-sensitive, so a metavar (`--token TOKEN`)
        # is told from a value
        *(
            Rule(
                "flag",
                b"-"
                + prefix
                + b"(?:"
                + b"|".join(rest + _ends_flag(prefix + rest, p) for rest in rests)
                + rb")(?: {1,3}|=)"
                + p.open
                + p.not_placeholder
                + rb"("
                + p.first
                + p.more
                + rb"{5,})",
                2,
                False,
                (b"-" + prefix,),
            )
            for prefix, rests in flag_words
        ),
    ]


def builtin_rules() -> tuple[Rule, ...]:
    """Every built-in rule, in priority order: where two finds overlap, the placeholder
    covers both and is named for the rule listed first."""
    parts = _parts()
    return (
        *vendor_rules(),  # before `aws_secret`, which a 40-character key body also matches
        *_token_rules(),
        *signature_rules(parts.quote),
        *_context_rules(parts),
        *command_rules(parts),
    )
