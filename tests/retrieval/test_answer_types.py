"""What a question asks for (a version, a port, a number, a place, an error, a
time, the user's own words), and which chunks hold one."""

import pytest

from funes.retrieval.answer_types import asked_types, holds_answer


def said(text: str, role: str = "assistant", block_type: str = "text", tool_name: str | None = None,
         is_subagent: bool = False) -> dict:
    """A chunk's row as the ranking reads it."""
    return {"text": text, "role": role, "block_type": block_type, "tool_name": tool_name, "is_subagent": is_subagent}


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
    ("Which placement did I pick for the plus icon?", {"user"}),
    ("What did the user suspect was breaking scrollback in the terminal?", {"user"}),
    ("What was the Codex agent asked to finish in the chatbot project?", {"user"}),
    ("Which of the three layouts did I go with?", {"user"}),
    ("When I asked to move the plus button, which component did the assistant go after first?", set()),
    ("What did the agent say about the flaky test?", set()),
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
    assert holds_answer(said(holding, "tool", "tool_result", "Bash"), kinds)
    assert not holds_answer(said(not_holding), kinds)


def test_a_question_about_what_the_user_said_is_answered_by_the_users_own_words():
    """Typed by the user, or the user's answer to the agent's question tool; not the
    agent's talk about the request, a program's output that quotes it, or a
    subagent's prompt."""
    kinds = asked_types("Which placement did I pick for the plus icon?")
    assert holds_answer(said("Put it right of the ⌘J hint", role="user"), kinds)
    for tool in ("AskUserQuestion", "request_user_input", "question"):
        assert holds_answer(said('User has answered your questions: "Where?"="Right of ⌘J kbd"', "tool",
                                 "tool_result", tool), kinds)
    assert not holds_answer(said("You picked the placement right of the ⌘J hint."), kinds)
    assert not holds_answer(said("placement: right of ⌘J", "tool", "tool_result", "Bash"), kinds)
    assert not holds_answer(said("Right of ⌘J", "user", "tool_use", "AskUserQuestion"), kinds)
    # a subagent's prompt is the launching agent's words, though the subagent's session records it as its user's
    assert not holds_answer(said("Put the plus icon right of the ⌘J hint", role="user", is_subagent=True), kinds)


def test_a_question_asking_for_nothing_in_particular_holds_no_chunk_apart():
    chunk = said("Next.js 15.5.2 on port 3001, 3 errors", role="user")
    assert not holds_answer(chunk, asked_types("What did we decide?"))


def test_long_hostile_text_is_read_to_the_end():
    """A chunk of one endless word (no slash, no dot) or of endless path separators
    is read whole, and the answer after it still counts."""
    every_kind = asked_types("When did it fail, where, how many times, on which port and version did I ask for?")
    assert len(every_kind) == 7
    for filler in ("a" * 200_000, "/" * 200_000, "-" * 200_000 + ".", "E" * 200_000 + "a", "1" * 200_000 + "x"):
        assert holds_answer(said(f"{filler} see src/app/page.tsx"), asked_types("Which file was edited?"))
        assert not holds_answer(said(filler), asked_types("Which version was it?"))
        holds_answer(said(filler), every_kind)


def test_a_long_hostile_question_is_read_to_the_end():
    """The user kind's bounded run of words between "was" and "asked to" keeps a
    question of endless words linear, and what it asks after them still counts."""
    assert {kind.name for kind in asked_types("was " * 50_000 + "the agent asked to finish?")} == {"user"}
    assert not asked_types("was " + "the " * 50_000 + "agent asked to finish?")
