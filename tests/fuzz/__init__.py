"""Fuzzing every parser of replog: `python -m tests.fuzz --seconds N` (or `make fuzz`)."""
