"""The interactive Textual app of ragtui: question list, ranked lists, chunk view, metrics, labels."""
