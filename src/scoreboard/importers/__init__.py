"""Other tools' suites as scoreboard suite files: promptfoo configs, OpenAI Evals registry entries.
Importers only read and write files (they are sources, not pipelines): nothing is run."""
