"""``python -m anvil``: the same CLI as the ``anvil`` command."""

from anvil.cli.main import entry

entry()
