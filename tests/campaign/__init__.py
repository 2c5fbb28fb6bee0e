"""The attack and fault campaign kept as tests: each attack an outside campaign found, bounded in time, on loopback."""
