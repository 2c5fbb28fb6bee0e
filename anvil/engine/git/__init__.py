"""Git work for claims: facts about the caller's checkout, the claim's plan, and the git step.

Everything here runs the ``git`` command (no shell, bounded by timeouts) on the machine that holds
the checkout: the CLI (direct or routed), or a stdio server, which runs on its caller's machine.
A server never runs git for a remote caller; it only records and checks the plan the caller sent
(:mod:`anvil.engine.git.plan`).
"""
