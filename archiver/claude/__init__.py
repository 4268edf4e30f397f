"""Readers of everything Claude Code leaves: on-disk transcripts (every layout), stream-json,
and the price table that costs them. Pure except ``layout``, which finds the files, and
``loading``, which reads them."""

from archiver.claude.layout import default_config_dir, find_sessions
from archiver.claude.loading import load_tree, tree_of_file
from archiver.claude.stream import tree_from_stream
from archiver.claude.tree import ClaudeSession, ClaudeTree

__all__ = [
    "ClaudeSession",
    "ClaudeTree",
    "default_config_dir",
    "find_sessions",
    "load_tree",
    "tree_from_stream",
    "tree_of_file",
]
