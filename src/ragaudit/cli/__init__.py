"""The ``ragaudit`` command line: :mod:`~ragaudit.cli.main` registers one module per verb;
the options they share are in :mod:`~ragaudit.cli.options`, progress displays in
:mod:`~ragaudit.cli.progress`. Commands parse, call a step, and print; the work is in
:mod:`ragaudit.steps`."""

from ragaudit.cli.main import app, main

__all__ = ["app", "main"]
