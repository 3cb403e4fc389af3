"""``check`` on a thread newer code owns fails, live and offline alike: every call of the
checked code on it would raise ``ThreadSupersededError`` (a rollback that has not taken
the thread over)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli import cli_graphs
from tests.cli.support import V1, V2, Database, cli


def test_check_fails_older_code_on_a_thread_newer_code_owns(db: Database, tmp_path: Path) -> None:
    db.run(cli_graphs.v1, "t1")
    db.run(cli_graphs.v2, "t1")  # the newer code rewinds it and owns it
    rows = db.rows()
    owner = db.plan(cli_graphs.v1, "t1").owner
    assert owner is not None

    live = cli("check", V1, "--db", db.url)
    assert live.exit_code == 1, live.output
    assert "superseded" in live.stdout and owner[:16] in live.stdout
    found = json.loads(cli("check", V1, "--db", db.url, "--json").stdout)
    assert not found["ok"] and found["failing"] == ["t1"]
    assert cli("check", V2, "--db", db.url).exit_code == 0  # the owner resumes it
    listed = json.loads(cli("check", V1, "--db", db.url, "--inventory", "--json").stdout)
    (newer,) = [row for row in listed["inventory"] if row["stamp_id"] == owner]
    assert (newer["threads"], newer["superseded"], newer["blocked"]) == (1, 1, 0)
    table = cli("check", V1, "--db", db.url, "--inventory").stdout
    (row,) = [line for line in table.splitlines() if line.startswith(f"│ {owner[:12]} ")]
    cells = [cell.strip() for cell in row.split("│")[1:-1]]
    assert cells[1:] == ["1", "0", "0", "0", "1", "not yet"]  # refused, and not retired

    out = tmp_path / "fixtures"
    assert cli("export", V2, "--db", db.url, "--out", str(out)).exit_code == 0
    offline = cli("check", V1, "--fixtures", str(out), "--allow", "rewind")
    assert offline.exit_code == 1, offline.output
    assert "superseded" in offline.stdout and "owned by newer code" in offline.stdout
    assert cli("check", V2, "--fixtures", str(out)).exit_code == 0
    assert db.rows() == rows
