"""Model judges: grade (question, chunk) pairs beside the people (see docs/judges.md)."""
