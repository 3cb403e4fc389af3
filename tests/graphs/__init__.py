"""The graphs, models and hand-made records the suites share.

Rules:
- Every node a builder makes counts its executions in the ``Counter`` it is given, so a
  test proves what re-ran.
- Builders take the types a deploy uses, so a test builds the old and the new code side
  by side, as two processes would.
- Nothing here imports a test module, a fixture or an integration helper: the unit suite
  imports these and nothing of ``tests.integration`` or ``tests.reliability``.
- Worker processes (``tests.integration.kill_worker``, ``cache_worker``) import them too:
  a module here does no I/O at import.
"""
