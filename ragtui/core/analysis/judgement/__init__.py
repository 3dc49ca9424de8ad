"""Model judgement over a workspace: what a judge grades (pairs), asking it and writing verdicts
(run, with its verdict cache), how far it agrees with the rule and the people (agreement), and
how sure the numbers are with its help (estimates and their JSON and table)."""
