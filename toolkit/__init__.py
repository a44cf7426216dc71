"""The user's side of replog: the typer CLI, rich rendering and reports."""
