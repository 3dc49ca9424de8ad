"""Labelling: the hand-label journal, the judging queue, agreement, and growing the golden set."""
