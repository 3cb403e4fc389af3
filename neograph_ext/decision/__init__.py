"""The pure decision: types, fingerprints, stamps, the plan.

Frozen records and pure functions without I/O. A module here imports only this
folder, and no saver nor database driver; tests/unit/test_layers.py checks it and
lists the imports that still point up. Private: the public API is ``neograph_ext``.
"""
