"""The headless core of ragtui: corpus, chunking, golden set, labels, retrievers, metrics.

Nothing here imports Textual or Rich; heavy libraries are imported inside the functions that need them.
"""
