"""The read side: open a memory, hybrid search, fusion, rerank, recency, neighbours, get."""
