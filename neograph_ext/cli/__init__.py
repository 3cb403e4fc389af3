"""The ``neograph-ext`` command line: what a resume would do, before it happens.

Rules:
- Read-only: databases are opened read-only where the driver allows it (``_database``),
  no saver ``setup()`` runs, and planning writes nothing. The exceptions are asked for
  by name, and ask first (``_confirm``): ``accept`` writes one checkpoint (a fork of the
  thread's head, through ``neograph_ext.accept``) and the stamp's description; ``prune
  --apply`` deletes what rewinds left behind; ``upgrade --apply`` writes the carries
  resumes would write (``--rewind``: runs the rewinds). ``export`` writes fixture files, never to
  the database.
- Built on the public API alone (``compile``, ``plan``, ``accept``, ``history``,
  ``list_threads``, ...): no module here imports a private ``neograph_ext._`` module, as
  a test checks. What the CLI adds is presentation, database opening and GRAPH loading.
- Exit codes: 0 fine, 1 ``check`` found threads that would not resume cleanly, 2 an
  error the user can fix, reported in one line on stderr (``--debug`` adds the traceback),
  a damaged checkpoint included; nothing else reaches stderr, not even at exit, but
  progress (a bar on a terminal; ``upgrade``'s one line per batch off a terminal).
- No message echoes a password from ``--db``; text read from the database (thread ids,
  node and class names) is printed with its control characters escaped, never as markup.
- Needs the ``cli`` extra (typer, rich); without it, says so and exits 2.

Modules: ``_app`` (the commands), ``_export`` (``export`` and ``check --fixtures``: the
offline CI gate), ``_prune`` (``prune``), ``_upgrade`` (``upgrade``), ``_cost``
(``check --cost``), ``_browse`` (``threads``, ``show``, ``diff``),
``_accept`` (``accept``'s preview and question), ``_serde`` (which classes revive),
``_show`` (tables, panels, JSON, escaping), ``_boundary`` (errors as one line),
``_graphs`` (GRAPH loading), ``_database`` (--db), ``_confirm`` (the question before a
write), ``_help`` (how ``--help`` reads).
"""

from __future__ import annotations

import sys

try:
    import rich  # noqa: F401
    import typer  # noqa: F401
except ImportError:  # pragma: no cover - exercised by a subprocess test
    sys.stderr.write("neograph-ext: the command line needs extras: install neograph-ext[cli]\n")
    raise SystemExit(2) from None

from neograph_ext.cli._app import app, main
from neograph_ext.cli._browse import diff_command  # noqa: F401  (registers threads, show, diff)

__all__ = ["app", "main"]
