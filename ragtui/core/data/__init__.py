"""Data: corpus documents, chunking, tokenizer counts, the golden set, BEIR and TREC files, bundled paths."""
