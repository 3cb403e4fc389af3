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

import neograph_ext
from neograph_ext.cli._app import DB_ENV
from tests.cli import cli_graphs
from tests.cli.support import ROOT, V2, Database, cli, one_error_line


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
