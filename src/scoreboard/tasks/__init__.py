"""Agent tasks: task folders (load), the per-attempt workspace and sandbox, the fixture
environment, checks, canaries, and the runtime that runs one attempt (runtime)."""
