"""What a question asks for (a version, a port, a number, a place, an error), and
which chunks hold one."""

import pytest

from funes.retrieval.answer_types import asked_types, holds_answer


@pytest.mark.parametrize("question, kinds", [
    ("Which Next.js and React versions came with the freshly generated app?", {"version"}),
    ("On which port did the dev server start?", {"port"}),
    ("How many tests were skipped in the last run?", {"number"}),
    ("Where did the dotenv files turn up on disk?", {"place"}),
    ("Which module does the main page import its hook from?", {"place"}),
    ("What error came back when the agent read the components folder?", {"error"}),
    ("Why did the first two edits to page.tsx fail?", {"error"}),
    ("When did Caroline go to the support group?", {"time"}),
    ("When the production build kept failing, what did the agent fall back to?", {"error"}),
    ("What did we decide about caching the embeddings?", set()),
    ("Which placement did I pick for the plus icon?", set()),
])
def test_a_question_names_the_kind_of_answer_it_asks_for(question, kinds):
    assert {kind.name for kind in asked_types(question)} == kinds


@pytest.mark.parametrize("question, holding, not_holding", [
    ("Which Next version did the scaffold print?", "   ▲ Next.js 15.5.2\n   - Local: http://localhost:3001",
     "Let me check which Next.js version the scaffold installed."),
    ("On which port did the dev server start?", "> next dev --port 3001\n   - Local: http://localhost:3001",
     "I'll start the dev server on another port to check the scaffold."),
    ("How many tests were skipped?", "1127 passed, 2 skipped in 265.01s",
     "Some tests were skipped; let me look at why."),
    ("Where did the dotenv files turn up?", "./apps/app/.env\n./apps/app/.env.example",
     "The audit looked for dotenv files across the repository."),
    ("What error came back when it read the folder?", "EISDIR: illegal operation on a directory, read",
     "Let me read the components folder to see what is there."),
    ("When did she go to the support group?", "I went to the support group yesterday and it was great.",
     "I may go to the support group, it has been great."),
    ("When did you paint the sunrise?", "I painted that one last week!", "I painted the sunrise over the lake."),
])
def test_a_chunk_holding_that_kind_is_told_from_one_that_only_talks_about_it(question, holding, not_holding):
    kinds = asked_types(question)
    assert holds_answer(holding, kinds)
    assert not holds_answer(not_holding, kinds)


def test_a_question_asking_for_nothing_in_particular_holds_no_chunk_apart():
    assert not holds_answer("Next.js 15.5.2 on port 3001, 3 errors", asked_types("What did we decide?"))


def test_long_hostile_text_is_read_to_the_end():
    """A chunk of one endless word (no slash, no dot) or of endless path separators
    is read whole, and the answer after it still counts."""
    every_kind = asked_types("When did it fail, where, how many times, on which port and version?")
    assert len(every_kind) == 6
    for filler in ("a" * 200_000, "/" * 200_000, "-" * 200_000 + ".", "E" * 200_000 + "a", "1" * 200_000 + "x"):
        assert holds_answer(f"{filler} see src/app/page.tsx", asked_types("Which file was edited?"))
        assert not holds_answer(filler, asked_types("Which version was it?"))
        holds_answer(filler, every_kind)
