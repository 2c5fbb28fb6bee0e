"""The storage kernel: canonical JSON, the hash-chained event log, migrations, state location, integrity checks."""
