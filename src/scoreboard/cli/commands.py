"""The commands, one module each (NAME, HELP, DESCRIPTION, add_arguments, main), in the order
`scoreboard --help` shows them. A module imports only argparse-level code at start-up;
everything heavy is imported inside its main()."""

MODULES: list[str] = ["init", "run", "validate", "report", "compare", "aggregate", "score", "replay", "footprint", "rescore",
                      "verify", "imports", "export", "plan", "schema",
                      "history", "store", "view"]  # history, store, view: issue 18
