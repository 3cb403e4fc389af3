"""Storage: what reads and writes a database (the savers' tables, locks, ledgers).

A module here imports the decision, the flows and this folder, never the drivers
nor the public API; tests/unit/test_layers.py checks it. Private: the public API
is ``neograph_ext``.
"""
