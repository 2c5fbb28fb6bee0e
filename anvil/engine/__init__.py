"""Domain rules, storage and state machine. Imports no surface (CLI, MCP) and no pydantic."""
