"""The drivers that perform the flows' operations, and the graph class.

A module here imports every layer below it (decision, flows, storage), never the
public API nor the CLI; tests/unit/test_layers.py checks it. Private: the public
API is ``neograph_ext``.
"""
