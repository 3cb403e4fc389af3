"""``--db`` may carry a password: no error the CLI prints may echo it.

Every value here names a server that is not listening (port 1) or cannot be parsed, so
each run ends in an error; the password must appear neither on stdout nor on stderr,
with or without ``--debug``.
"""

from __future__ import annotations

import pytest

from tests.cli.support import V1, cli, one_error_line

PASSWORD = "s3cret-pw"

DSNS = {
    "libpq key/value": (
        f"host=127.0.0.1 port=1 user=me password={PASSWORD} dbname=x",
        "cannot connect to PostgreSQL at",
    ),
    "libpq key/value, quoted": (
        f"host=127.0.0.1 port=1 password='{PASSWORD} x' dbname=x",
        "cannot connect to PostgreSQL at",
    ),
    "libpq key/value libpq cannot parse": (
        f"host=127.0.0.1 password={PASSWORD} {PASSWORD}",
        "not a PostgreSQL URL or libpq key/value string",
    ),
    "postgres URL": (f"postgresql://me:{PASSWORD}@127.0.0.1:1/x", "cannot connect"),
    "postgres URL, bad escape in the password": (
        f"postgresql://me:{PASSWORD}%zz@127.0.0.1:1/x",
        "not a PostgreSQL URL or libpq key/value string",
    ),
    "postgres URL, bad port": (f"postgres://me:{PASSWORD}@127.0.0.1:port/x", "cannot connect"),
    "URL with one slash": (f"postgresql:/me:{PASSWORD}@127.0.0.1:1/x", "'postgresql:'"),
    "URL without slashes": (f"postgresql:me:{PASSWORD}@127.0.0.1:1/x", "'postgresql:'"),
    "URL with a misspelt scheme": (f"postgresq://me:{PASSWORD}@127.0.0.1:1/x", "'postgresq:'"),
}


@pytest.mark.parametrize("debug", [False, True], ids=["plain", "debug"])
@pytest.mark.parametrize("command", ["plan", "history", "check"])
@pytest.mark.parametrize("case", sorted(DSNS))
def test_no_error_prints_the_password(case: str, command: str, debug: bool) -> None:
    dsn, expected = DSNS[case]
    args = {
        "plan": ["plan", V1, "--db", dsn, "--thread", "t1"],
        "history": ["history", "--db", dsn, "--thread", "t1"],
        "check": ["check", V1, "--db", dsn],
    }[command]

    result = cli(*args, *(["--debug"] if debug else []))

    assert result.exit_code == 2, result.output
    assert PASSWORD not in result.stdout + result.stderr, result.stderr
    assert PASSWORD[:4] not in result.stderr  # not even a piece of it
    assert expected in result.stderr
    if not debug:
        one_error_line(result)


def test_the_database_is_named_with_its_password_masked() -> None:
    line = one_error_line(cli("check", V1, "--db", f"postgresql://me:{PASSWORD}@127.0.0.1:1/x"))

    assert "at user=me password=*** dbname=x host=127.0.0.1 port=1:" in line


def test_a_typo_names_the_forms_that_work() -> None:
    line = one_error_line(cli("check", V1, "--db", f"postgresql:/me:{PASSWORD}@h/x"))

    assert "starts with 'postgresql:' but is none of these" in line
    assert "sqlite:///path, postgresql://... or a libpq key/value string" in line
