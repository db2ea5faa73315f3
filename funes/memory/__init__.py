"""The memory: the Lance `chunks` table, its BM25 index, the writer lock and coverage state."""
