"""The `arena` command line: a thin typer layer over the library; no logic lives here."""

from __future__ import annotations

import typer

from arena import __version__

app = typer.Typer(
    name="arena",
    help="Hearts Arena: referee, arena runner and ratings for Hearts bots.",
    no_args_is_help=True,
    add_completion=False,
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"arena {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_version_callback,
        is_eager=True,
        help="Print the version and exit.",
    ),
) -> None:
    """Hearts Arena: referee, arena runner and ratings for Hearts bots."""
