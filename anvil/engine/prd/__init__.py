"""The PRD format: model, parser and renderer."""
