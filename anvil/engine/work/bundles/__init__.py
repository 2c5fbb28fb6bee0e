"""Execution bundles: a milestone of tasks worked under one coordinator claim and one bounded review gate.

A bundle names an ordered set of tasks of one PRD, a coordinator and a policy (how many tasks and
serial stages it may hold, how many reviews a round takes, how many re-review rounds it gets, and
which review angles must approve). While it is live its members are reserved: nobody is offered
them, and only the bundle's live coordinator claim authorizes claiming one. The coordinator
claim is leased and fenced like a task claim (:mod:`.coordinator`); completion is gated on every
member's evidence (:mod:`.rows`), and acceptance on independent reviewers (:mod:`.review`).
Delivery is recorded by checkpoints and reconciled idempotently (:mod:`.delivery`); a bundle that
must be replanned is superseded by a replacement, keeping its whole history (:mod:`.lifecycle`).
"""
