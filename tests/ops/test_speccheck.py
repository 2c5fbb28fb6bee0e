"""The contract checks accept only what pydantic accepts, and give exactly what it dumps.

:func:`anvil.ops.speccheck.check_arguments` is a speed layer beside the input models: generated
arguments for random operations (valid ones, and wrong types, bounds, unknown keys, nulls, huge
strings, unicode, the reserved alias) must, whenever it accepts them, validate with the model to
the same document, key order included. :func:`anvil.ops.speccheck.dumped` is the same beside the
output models: values generated from an output's shape (and then broken in one place) must, when it
vouches for them, dump through the model to the same document in the same order.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from anvil.engine.errors import UsageError
from anvil.ops.contract import ParamSpec
from anvil.ops.registry import Operation, all_operations
from anvil.ops.shapegen import render_shapes
from anvil.ops.speccheck import SHAPES_PATH, NotSure, check_arguments, dumped, output_shapes
from anvil.ops.specgen import op_spec
from anvil.ops.validation import reserved_aliases
from tests.conftest import sized

OPERATIONS = all_operations()
JUNK = st.sampled_from([None, 0, 1, -1, 1.5, 2.0, float("inf"), True, False, "", "x", "1", [], {}, ["x"], [1],
                        [["a", "b"]], {"a": 1}, "\u00e9\u4e2d\U0001f600", "\ud800", "x" * 5000, 10**30])
TEXT = st.one_of(st.text(max_size=12), st.text(st.characters(codec="utf-8"), max_size=6),
                 st.sampled_from(["T001", "agent-1", " ", "\x00", "\ud800", "a" * 4097, "é" * 201]))


def pydantic_dump(op: Operation, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """What the MCP server's validation makes of ``arguments`` (None: it refuses them)."""
    try:
        document: dict[str, Any] = op.input_model.model_validate(reserved_aliases(op, arguments)).model_dump(
            mode="json")
    except (ValidationError, UsageError):
        return None
    return document


def sized_text(low: int | None, high: int | None) -> st.SearchStrategy[str]:
    """Text around the bounds (just inside and just outside them) or anywhere."""
    sizes = [size for size in {0, 1, (low or 0) - 1, low or 0, high or 8, (high or 8) + 1} if size >= 0]
    return st.one_of(TEXT, st.sampled_from(sizes).flatmap(
        lambda n: st.text(min_size=n, max_size=n) if n <= 1000 else st.sampled_from(["a" * n, "é" * n])))


def number(param: ParamSpec) -> st.SearchStrategy[Any]:
    edges = [edge for bound in (param.ge, param.le, param.gt, param.lt) if bound is not None
             for edge in (bound - 1, bound, bound + 1)]
    ints = st.one_of(st.integers(), st.sampled_from([int(edge) for edge in edges] or [0]))
    if param.kind == "int":
        return st.one_of(ints, st.floats(allow_nan=True), st.booleans())
    floats = st.sampled_from([float(edge) for edge in edges] or [0.0])
    return st.one_of(st.floats(allow_nan=True, allow_infinity=True), floats, ints, st.booleans())


def scalar(param: ParamSpec, kind: str | None) -> st.SearchStrategy[Any]:
    if param.choices is not None:
        return st.one_of(st.sampled_from(param.choices), TEXT)
    if kind == "str":
        return sized_text(param.min_len, param.max_len) if not param.is_list else sized_text(
            param.item_min_len, param.item_max_len)
    if kind in ("int", "float"):
        return number(param._replace(kind=kind))
    if kind == "bool":
        return st.one_of(st.booleans(), st.sampled_from([0, 1, "true"]))
    return JUNK


def value_for(param: ParamSpec) -> st.SearchStrategy[Any]:
    """A value for ``param``: mostly of its type (in and out of its bounds), sometimes of any other."""
    if param.kind == "pairs":
        typed: st.SearchStrategy[Any] = st.lists(st.lists(TEXT, max_size=3), max_size=3)
    elif param.kind == "list":
        low, high = param.min_len or 0, param.max_len if param.max_len is not None else 4
        least = max(low - 1, 0)
        typed = st.lists(scalar(param, param.item), min_size=least, max_size=max(min(high + 1, 6), least))
    else:
        typed = scalar(param, param.kind)
    return st.one_of(typed, typed, typed, st.none(), JUNK)


@st.composite
def arguments_for(draw: st.DrawFn, op: Operation) -> dict[str, Any]:
    spec = op_spec(op)
    arguments: dict[str, Any] = {}
    for param in spec.params:
        if draw(st.integers(0, 9)) < (9 if param.required else 4):
            arguments[param.name] = draw(value_for(param))
    if draw(st.integers(0, 9)) == 0:
        arguments[draw(st.sampled_from(["unknown_field", "anvil_dry_run", "dry_run", "Task_ID"]))] = draw(JUNK)
    if draw(st.integers(0, 9)) == 0:
        arguments["anvil_dry_run"] = draw(st.sampled_from([True, False, 1, None]))
    return arguments


@settings(max_examples=sized(400, 4000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_argument_check_accepts_only_what_pydantic_accepts_and_gives_its_dump(data: st.DataObject) -> None:
    op = data.draw(st.sampled_from(OPERATIONS))
    arguments = data.draw(arguments_for(op))
    checked = check_arguments(op_spec(op), arguments)
    expected = pydantic_dump(op, arguments)
    event("accepted" if checked is not None else "left to pydantic" if expected is not None else "refused")
    if checked is not None:
        assert expected is not None, "the check accepted arguments pydantic refuses"
        assert json.dumps(checked) == json.dumps(expected)  # the same values in the same order


def test_every_documented_example_passes_the_argument_check_as_pydantic_validates_it() -> None:
    accepted = 0
    for op in OPERATIONS:
        for example in op.examples:
            expected = pydantic_dump(op, example.input)
            checked = check_arguments(op_spec(op), example.input)
            if checked is not None:
                accepted += 1
                assert json.dumps(checked) == json.dumps(expected), (op.name, example.title)
            else:
                assert expected is None, f"{op.name}: {example.title!r} is valid but left to pydantic"
    assert accepted > len(OPERATIONS)


UNICODE = st.one_of(st.text(st.characters(codec="utf-8"), max_size=12),
                    st.sampled_from(["", "T001", "\x00", "é" * 300]))
"""Valid Unicode text: a lone surrogate is one of the breakages."""
JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                         UNICODE)
PLAIN = st.recursive(JSON_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                           st.dictionaries(UNICODE, inner, max_size=3)), max_leaves=8)


def conforming(shape: Any) -> st.SearchStrategy[Any]:
    """Values exactly of ``shape``, objects' keys in any order and defaulted fields sometimes left out."""
    if isinstance(shape, str):
        return {"str": UNICODE, "int": st.integers(), "bool": st.booleans(), "any": PLAIN,
                "float": st.floats(allow_nan=False, allow_infinity=False)}[shape]
    tag, inner = shape
    if tag == "lit":
        return st.sampled_from(inner)
    if tag == "opt":
        return st.one_of(st.none(), conforming(inner))
    if tag == "list":
        return st.lists(conforming(inner), max_size=2)
    if tag == "dict":
        return st.dictionaries(UNICODE, conforming(inner), max_size=2)
    if tag == "union":
        return st.one_of([conforming(member) for member in inner])
    return model_value(inner)


@st.composite
def model_value(draw: st.DrawFn, fields: list[list[Any]]) -> dict[str, Any]:
    present = [field for field in fields if len(field) == 2 or draw(st.booleans())]
    order = draw(st.permutations(present))
    return {field[0]: draw(conforming(field[1])) for field in order}


@st.composite
def broken(draw: st.DrawFn, value: Any) -> Any:
    """``value`` with one place changed: a value of another kind, a key added or dropped, a float for an int."""
    if isinstance(value, dict) and value and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(value)))
        choice = draw(st.integers(0, 3))
        if choice == 0:
            return {k: v for k, v in value.items() if k != key}
        if choice == 1:
            return {**value, "unexpected_field": draw(JUNK)}
        return {**value, key: draw(broken(value[key]))}
    if isinstance(value, list) and value and draw(st.booleans()):
        at = draw(st.integers(0, len(value) - 1))
        return [*value[:at], draw(broken(value[at])), *value[at + 1:]]
    if type(value) is int and draw(st.booleans()):
        return float(value) if abs(value) < 2**53 else math.inf
    return draw(JUNK)


SHAPED = [op for op in OPERATIONS if output_shapes().get(op.name) is not None]


def model_dump(op: Operation, value: Any) -> dict[str, Any] | None:
    try:
        document: dict[str, Any] = op.output_model.model_validate(value).model_dump(mode="json")
    except ValidationError:
        return None
    return document


@settings(max_examples=sized(300, 3000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_an_output_of_its_shape_is_dumped_as_the_output_model_dumps_it(data: st.DataObject) -> None:
    op = data.draw(st.sampled_from(SHAPED))
    shape = output_shapes()[op.name]
    value = data.draw(conforming(shape))
    got = dumped(shape, value)  # never unsure of a value of its shape
    assert json.dumps(got) == json.dumps(model_dump(op, value))


@settings(max_examples=sized(300, 3000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_broken_output_is_vouched_for_only_when_the_output_model_dumps_it_the_same(data: st.DataObject) -> None:
    op = data.draw(st.sampled_from(SHAPED))
    shape = output_shapes()[op.name]
    value = data.draw(conforming(shape).flatmap(broken))
    expected = model_dump(op, value)
    try:
        got = dumped(shape, value)
    except NotSure:
        event("left to pydantic")
        return
    event("vouched for")
    assert expected is not None, "vouched for an output the model refuses"
    assert json.dumps(got) == json.dumps(expected)


def test_most_outputs_have_a_shape() -> None:
    assert len(SHAPED) >= len(OPERATIONS) * 3 // 4
    assert "get_project_status" in {op.name for op in SHAPED}


def test_the_committed_output_shapes_match_the_registry() -> None:
    assert SHAPES_PATH.read_text(encoding="utf-8") == render_shapes(), \
        "anvil/ops/model_shapes.json is stale: run `python -m anvil.ops.specgen`"


@pytest.mark.parametrize("value", [{"a": 1.0}, {"a": math.nan}, {1: 2}, ("x",), {"a": {"b": [math.inf]}}])
def test_plain_json_is_the_only_any_value_vouched_for(value: Any) -> None:
    shape = ["dict", "any"] if not isinstance(value, tuple) else "any"
    if value == {"a": 1.0}:
        assert dumped(shape, value) == value
    else:
        with pytest.raises(NotSure):
            dumped(shape, value)
