"""What every command shares: ``--version`` (one version everywhere), ``--db`` from the
environment, node order."""

from __future__ import annotations

import json
import tomllib
from importlib.metadata import distribution, version
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import pytest
import typer

import neograph_ext
from neograph_ext.cli import app
from neograph_ext.cli._database import DB_ENV
from tests.cli import cli_graphs
from tests.cli.support import ROOT, V1, V2, Database, cli, one_error_line


def test_version_is_the_package_metadata_version() -> None:
    result = cli("--version")
    assert result.exit_code == 0, result.output
    assert result.stdout == f"neograph-ext {neograph_ext.__version__}\n"
    assert neograph_ext.__version__ == version("neograph-ext")


def test_the_installed_metadata_is_this_checkouts_pyproject() -> None:
    """A fresh install of the checkout (as CI makes) reports pyproject.toml's version."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    source = json.loads(distribution("neograph-ext").read_text("direct_url.json") or "{}")
    installed_from = Path(url2pathname(urlparse(source.get("url", "")).path)).resolve()
    if installed_from != ROOT:
        # Another checkout's install (a second worktree sharing one virtualenv): its
        # metadata is that checkout's, so there is nothing of this one to compare.
        pytest.skip(f"neograph-ext is installed from {installed_from}, not from {ROOT}")
    assert version("neograph-ext") == project["version"], "stale install: pip install -e ."


def test_db_is_read_from_the_environment_when_not_given(db: Database) -> None:
    db.run(cli_graphs.v1, "t1")
    from_env = cli("plan", V2, "--thread", "t1", "--json", env={DB_ENV: db.url})
    given = cli("plan", V2, "--db", db.url, "--thread", "t1", "--json")
    assert from_env.exit_code == 0, from_env.output
    assert json.loads(from_env.stdout)["kind"] == "rewind"
    assert from_env.stdout == given.stdout


_EVERY_COMMAND = {
    "plan": ["plan", V2, "--thread", "t1", "--json"],
    "history": ["history", "--thread", "t1", "--json"],
    "check": ["check", V2, "--json"],
    "accept": ["accept", V2, "--thread", "t1", "--dry-run", "--json"],
    "export": ["export", V2, "--out", "{out}"],
    "prune": ["prune", V2, "--json"],
    "upgrade": ["upgrade", V2, "--json"],
    "threads": ["threads", "--json"],
    "show": ["show", V2, "--thread", "t1", "--json"],
    "diff": ["diff", V2, "--thread", "t1", "--json"],
}
"""Each command, its arguments but ``--db``: all read, none writes."""


def test_every_command_is_listed_above() -> None:
    assert set(_EVERY_COMMAND) == set(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", _EVERY_COMMAND)
def test_every_command_reads_db_from_the_environment(
    command: str, db: Database, tmp_path: Path
) -> None:
    """What ``--db`` gives, ``NEOGRAPH_EXT_DB`` gives, and the same output."""
    db.run(cli_graphs.v1, "t1")
    args = [str(a).replace("{out}", str(tmp_path / "out")) for a in _EVERY_COMMAND[command]]
    given = cli(*args, "--db", db.url)
    from_env = cli(*args, env={DB_ENV: db.url})
    assert from_env.stdout == given.stdout, from_env.output
    assert from_env.exit_code == given.exit_code, from_env.output
    assert given.exit_code == (1 if command == "check" else 0), given.output  # t1 would rewind


def test_check_fixtures_ignores_db_from_the_environment(lite: Database, tmp_path: Path) -> None:
    """``check --fixtures`` refuses a ``--db`` given, not one set for the other commands."""
    lite.run(cli_graphs.v1, "t1")
    out = tmp_path / "fixtures"
    assert cli("export", V1, "--out", out, env={DB_ENV: lite.url}).exit_code == 0
    from_env = cli("check", V1, "--fixtures", out, env={DB_ENV: lite.url})
    assert from_env.exit_code == 0, from_env.output
    assert "--db" in one_error_line(cli("check", V1, "--fixtures", out, "--db", lite.url))


def test_db_given_wins_over_the_environment(db: Database, tmp_path) -> None:  # type: ignore[no-untyped-def]
    db.run(cli_graphs.v1, "t1")
    missing = str(tmp_path / "missing.sqlite")
    result = cli("plan", V2, "--db", db.url, "--thread", "t1", env={DB_ENV: missing})
    assert result.exit_code == 0, result.output
    line = one_error_line(cli("plan", V2, "--thread", "t1", env={DB_ENV: missing}))
    assert "no SQLite database" in line


def test_without_db_or_the_environment_the_error_names_both() -> None:
    result = cli("plan", V2, "--thread", "t1", env={DB_ENV: ""})
    assert result.exit_code == 2
    assert "--db" in result.stderr and DB_ENV in result.stderr


def test_re_runs_and_kept_are_listed_in_the_order_the_nodes_run(db: Database) -> None:
    """``z -> y -> c -> a``: alphabetical order would be the reverse."""
    db.run(cli_graphs.pipeline(cli_graphs.ReviewV1, names="zyca"), "t1")
    graph = "tests.cli.cli_graphs:backwards_v2"
    result = cli("plan", graph, "--db", db.url, "--thread", "t1")
    assert result.exit_code == 0, result.output
    assert "re-runs      c, a" in result.stdout
    assert "kept         z, y" in result.stdout
    expected = db.plan(cli_graphs.backwards_v2, "t1")
    assert "re-runs: c, a\\nkept: z, y" in str(expected).replace("\n", "\\n")


@pytest.mark.parametrize("threads", [(), ("t1", "t2")])
@pytest.mark.parametrize("command", ["check", "upgrade"])
def test_a_streamed_json_document_has_one_layout(
    command: str, threads: tuple[str, ...], lite: Database
) -> None:
    """``check`` and ``upgrade`` print each thread as it comes; the document is laid out
    as the same document printed whole would be."""
    lite.run(cli_graphs.v1, *threads)

    result = cli(command, V2, "--db", lite.url, "--json")

    assert result.exit_code == (1 if command == "check" and threads else 0), result.output
    document = json.loads(result.stdout)
    assert len(document["plans" if command == "check" else "threads"]) == len(threads)
    assert result.stdout == json.dumps(document, indent=2) + "\n"
