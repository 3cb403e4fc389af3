"""The flows: I/O-free generators that yield operations and take their results back.

A module here imports the decision and this folder; the drivers perform what it
yields. tests/unit/test_layers.py checks it and lists the imports that still point
up. Private: the public API is ``neograph_ext``.
"""
