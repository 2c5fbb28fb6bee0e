"""The generated contract (surface.json, inputs.py, output_order.json) is current with the registry."""

from __future__ import annotations

import json

from anvil.ops.contract import SPEC_PATH
from anvil.ops.specgen import INPUTS_PATH, ORDER_PATH, build_spec, render_inputs, render_output_order


def test_the_committed_surface_spec_matches_the_registry() -> None:
    assert json.loads(SPEC_PATH.read_text(encoding="utf-8")) == json.loads(json.dumps(build_spec())), \
        "anvil/ops/surface.json is stale: run `python -m anvil.ops.specgen`"


def test_the_committed_input_types_match_the_registry() -> None:
    assert INPUTS_PATH.read_text(encoding="utf-8") == render_inputs(), \
        "anvil/ops/inputs.py is stale: run `python -m anvil.ops.specgen`"


def test_the_committed_output_order_matches_the_registry() -> None:
    assert ORDER_PATH.read_text(encoding="utf-8") == render_output_order(), \
        "anvil/ops/output_order.json is stale: run `python -m anvil.ops.specgen`"
