"""Planning: the planner, scoring, dependency edits, the readiness gate and the planning events."""
