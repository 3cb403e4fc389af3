"""``--help`` of the app and of every command reads as written: on a terminal wide
enough, each paragraph of a command's help is one line (no line break of the source in
mid-sentence), in the command list and in the command's own help; a flag is shown as a
flag, with no ``<bool>`` after it."""

from __future__ import annotations

import pytest

from neograph_ext.cli import app
from neograph_ext.cli._help import prose
from tests.cli.support import cli

COMMANDS = sorted(str(info.name) for info in app.registered_commands)


def _paragraphs(name: str) -> list[str]:
    [info] = [i for i in app.registered_commands if i.name == name]
    doc = prose(info.help or (info.callback.__doc__ if info.callback else None))
    return (doc or "").split("\n\n")


def _lines(output: str) -> list[str]:
    return [" ".join(line.strip("│ ").split()) for line in output.splitlines()]


def test_every_command_is_covered() -> None:
    assert set(COMMANDS) == {
        "accept", "check", "diff", "export", "history", "plan", "prune", "show", "threads",
        "upgrade",
    }  # fmt: skip


def test_the_command_list_gives_each_summary_on_one_line() -> None:
    listed = cli("--help")
    assert listed.exit_code == 0 and "<bool>" not in listed.stdout
    lines = _lines(listed.stdout)
    for name in COMMANDS:
        assert f"{name} {_paragraphs(name)[0]}" in lines, name


@pytest.mark.parametrize("name", COMMANDS)
def test_each_command_s_help_reads_as_prose_with_flags_as_flags(name: str) -> None:
    shown = cli(name, "--help")
    assert shown.exit_code == 0, shown.output
    assert "<bool>" not in shown.stdout
    lines = _lines(shown.stdout)
    for paragraph in _paragraphs(name):
        assert paragraph in lines, paragraph
    assert "--help Show this message and exit." in lines
    assert any(line.startswith("--debug Show tracebacks") for line in lines)
