"""Generators of realistic broker directories, built with replog's own writers."""
