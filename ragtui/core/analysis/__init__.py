"""Analysis over a loaded workspace: check, diagnostics, attribution, slices, saved runs, export, reports."""
