"""Paths the tests share, so that a test's depth under tests/ never decides where it looks."""
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent
FIXTURES = TESTS / "fixtures"
REAL = FIXTURES / "real"
