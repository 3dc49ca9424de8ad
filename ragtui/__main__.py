"""Run ragtui as ``python -m ragtui``."""

from ragtui.cli import main

raise SystemExit(main())
