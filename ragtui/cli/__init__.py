"""The command line: ``main`` parses the arguments and runs a command or the app.

``main.py`` holds the parser and the dispatch, ``evaluate.py`` the evaluation commands (eval,
export, diff, explain), ``golden.py`` the golden-set commands (check, add-question, agreement,
labels), and ``output.py`` everything that prints.
"""

from ragtui.cli.main import build_parser, main, settings_from

__all__ = ["build_parser", "main", "settings_from"]
