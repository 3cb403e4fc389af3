"""Types for the fingerprint tests, importable from a subprocess by a stable module path."""
