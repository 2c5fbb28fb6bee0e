"""The actor-name rule and the one form names are compared in."""

from __future__ import annotations

import pytest

from anvil.engine.errors import UsageError
from anvil.engine.identity import Identity, authenticated, check_name, name_key, name_problem, role_allows, same_person

ACCEPTED = ["agent-1", "Agent.7@team", "a", "lead_2", "x" * 64, "Иван", "δοκιμή", "田中たろう", "김민준", "Mary-Jo",
            "café", "cafe\u0301", "ａｇｅｎｔ-7", "ﬁle"]
REFUSED = {
    "empty": "",
    "too long": "x" * 65,
    "space": "agent 1",
    "leading space": " agent",
    "NUL": "agent\x001",
    "terminal escape": "\x1b[31magent",
    "newline": "agent\n1",
    "zero-width space": "agent\u200b1",
    "zero-width joiner": "agent\u200d1",
    "byte-order mark": "\ufeffagent",
    "right-to-left override": "agent\u202e1",
    "soft hyphen": "agent\u00ad1",
    "variation selector": "agent\ufe0f",
    "Hangul filler": "\u3164agent",
    "Cyrillic a inside a Latin name": "\u0430gent-1",
    "Greek omicron inside a Latin name": "r\u03bfot",
    "all-Cyrillic Latin look-alike": "\u0430\u0440\u0435",
    "non-ASCII digits": "agent\u0663",
    "symbols": "agent$1",
    "slash": "team/agent",
    "leading separator": "-agent",
    "mark after a digit": "1\u0301",
    "stacked marks": "e\u0301\u0302\u0303\u0304",
    "not text": 7,
}


@pytest.mark.parametrize("name", ACCEPTED)
def test_names_of_letters_digits_and_separators_in_one_script_are_accepted(name: str) -> None:
    assert name_problem(name) is None
    assert check_name(name, "--actor") == name


@pytest.mark.parametrize("name", REFUSED.values(), ids=REFUSED.keys())
def test_invisible_control_look_alike_and_oversized_names_are_refused(name: object) -> None:
    with pytest.raises(UsageError) as caught:
        check_name(name, "--actor (actor)")
    error = caught.value
    assert error.code == "invalid_actor" and error.exit_code == 2
    assert "--actor (actor)" in error.message and "letters, digits" in error.message
    if isinstance(name, str) and name:
        assert name not in error.message  # never echoed: it may hold escapes or invisible characters


@pytest.mark.parametrize(("a", "b"), [("agent-7", "AGENT-7"), ("agent-7", "Agent-7"), ("agent-7", "ａｇｅｎｔ-7"),
                                      ("café", "cafe\u0301"), ("strasse", "STRASSE"), ("straße", "STRASSE"),
                                      ("file", "ﬁle")])
def test_spellings_of_one_name_are_one_person(a: str, b: str) -> None:
    assert same_person(a, b) and name_key(a) == name_key(b)


@pytest.mark.parametrize(("a", "b"), [("agent-1", "agent-2"), ("ivan", "иван"), ("josé", "jose")])
def test_different_names_are_different_people(a: str, b: str) -> None:
    assert not same_person(a, b)


@pytest.mark.parametrize(("a", "b"), [("agent", "\u0430gent"), ("alice", "al\u0131ce"), ("alice", "\u1d00lice")])
def test_look_alikes_of_a_name_are_that_person(a: str, b: str) -> None:
    # Confusables skeleton (UTS #39): a look-alike that passes the name rule still names the same person.
    assert same_person(a, b)


def test_roles_rank_agent_below_reviewer_below_lead() -> None:
    assert role_allows("lead", "reviewer") and role_allows("reviewer", "agent") and role_allows("agent", "agent")
    assert not role_allows("agent", "reviewer") and not role_allows("reviewer", "lead")
    assert not role_allows(None, "agent")


def test_an_unauthenticated_caller_is_self_declared_and_not_limited_by_roles() -> None:
    declared = Identity("agent-1")
    assert declared.may("lead")
    wire = declared.to_wire()
    assert wire["authenticated"] is False and wire["how"] == "declared" and wire["role"] is None
    assert "self-declared" in wire["notice"]


def test_an_authenticated_caller_is_limited_by_its_role_and_carries_no_notice() -> None:
    agent = authenticated("agent-1", "agent")
    assert agent.may("agent") and not agent.may("reviewer") and not agent.may("lead")
    assert agent.to_wire() == {"actor": "agent-1", "authenticated": True, "how": "token", "role": "agent",
                               "notice": None}


def test_the_generated_look_alike_table_folds_only_to_ascii_name_characters() -> None:
    from anvil.engine.confusables_table import PAIRS

    entries = [entry for entry in PAIRS.split("\t") if entry]
    assert {"ıi", "ᴀa", "аa"} <= set(entries)
    assert all(not entry[0].isascii() and entry[1:].isascii() and entry[1:] for entry in entries)
