#!/usr/bin/env bash
# Run a command and print its wall time as one line, so that a log shows each stage's
# share of a run (CI's `.ci/run`, `make test`).
#
#   scripts/timed.sh NAME COMMAND [ARGS...]
#
# Exits with COMMAND's status.
set -uo pipefail
name=$1
shift
started=$(date +%s)
"$@"
status=$?
echo "== stage $name: $(($(date +%s) - started)) s (exit $status)"
exit $status
