"""The work loop: claims, offers, evidence, review decisions and work packets."""
