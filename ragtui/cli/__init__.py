"""The command line: ``main`` parses the arguments and runs a command or the app.

``main.py`` holds the parser and the dispatch, ``evaluate.py`` the evaluation commands (eval,
export, diff, explain), ``golden.py`` the golden-set commands (check, add-question, agreement,
labels), and ``output.py`` everything that prints.
"""

import gc

# No garbage collection while the command line's modules are imported: they make some 38,000
# objects and almost no garbage (500), and the collections that walked them cost 7-10 ms of
# every start. Collection is back on once they are in, with what the import made moved out of its
# reach (``gc.freeze``): turned on with them in the youngest generation, the first collection walked
# them all (8-15 ms, the 500 garbage objects its only find). The app turns it off again until its
# first screen (``main``).
_collecting = gc.isenabled()
gc.disable()
try:
    # Before anything that defines a dataclass: their methods compiled by an earlier run.
    from ragtui.cli import dataclass_cache

    dataclass_cache.install()
    from ragtui.cli.main import build_parser, main, settings_from
finally:
    if _collecting:
        gc.freeze()
        gc.enable()

__all__ = ["build_parser", "main", "settings_from"]
