"""Side-by-side benchmarks against peer parsers (`python -m bench`)."""
