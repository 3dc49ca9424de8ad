"""Retrieval: the retriever interface, BM25, exact vector search, RRF hybrid, embeddings, external runs."""
