"""The built-in rules for passwords given on a command line, where the command takes one
after a short option (`mysql -pX`, `sshpass -p X`, `curl -u user:X`, …): part of
``archiver.rules.builtin_rules``, which hands in the shared pattern pieces."""

from __future__ import annotations

from typing import TYPE_CHECKING

from archiver.rule import Rule

if TYPE_CHECKING:
    from archiver.rules import Parts

__all__ = ["command_rules"]


def _word_start(word: bytes, p: Parts) -> bytes:
    """``word`` as a command name: not the end of a longer name (``xmysql``, ``my.curl``),
    unless what comes before is the start of a line."""
    return word + rb"(?:(?<![\w.-]" + word + rb")|(?<=" + p.line_start + word + rb"))"


def command_rules(p: Parts) -> list[Rule]:
    """Short options that take a password, for the commands where they do (elsewhere `-p` is
    a port, a protocol or "parents"): `mysql -pX` (attached only: `-p X` prompts and X is
    the database), `docker|podman|… login -p X`, `sshpass -p X`, `redis-cli -a X`,
    `curl -u user:X`, `openssl … -passin pass:X`."""
    value = p.open + rb"(" + p.first + p.more + rb"*)"
    login_commands = (
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
    logins = b"|".join(rb"(?<=" + c + rb" login)" for c in login_commands)
    return [
        Rule(
            "command",
            _word_start(b"mysql", p) + rb"[a-z_-]*(?= )" + p.cmd + rb" -p" + value,
            2,
            False,
            (b"mysql",),
        ),
        Rule(
            "command",
            _word_start(b"mariadb", p) + rb"[a-z_-]*(?= )" + p.cmd + rb" -p" + value,
            2,
            False,
            (b"mariadb",),
        ),
        Rule(
            "command",
            rb"login(?:" + logins + rb") " + p.cmd + rb"(?<= )-p(?: {1,3}|=)?" + value,
            2,
            False,
            (b"login",),
        ),
        Rule("command", rb"sshpass(?: +-[ev])* +-p *" + value, 2, False, (b"sshpass",)),
        Rule(
            "command", rb"redis-cli " + p.cmd + rb"(?<= )(?:-a|--pass) +" + value, 2, False, (b"redis-cli",)
        ),
        Rule(
            "command",
            _word_start(b"curl", p)
            + b" "
            + p.cmd
            + rb"(?<= )(?:-[uU] *|--(?:proxy-)?user(?: +|=))"
            + p.open
            + rb"[^\s\"\\:'`]*:("
            + p.first
            + p.more
            + rb"*)",
            2,
            False,
            (b"curl",),
        ),
        Rule(
            "command",
            rb"-pass(?:in|out)? +" + p.open + rb"pass:(" + p.first + p.more + rb"*)",
            2,
            False,
            (b"-pass",),
        ),
    ]
