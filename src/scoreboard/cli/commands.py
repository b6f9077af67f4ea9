"""Commands beyond run/validate/report, one module each (NAME, HELP, add_arguments, main).

Listed here in the order `scoreboard --help` shows them. A module imports only argparse-level
code at start-up; everything heavy is imported inside its main().
"""

MODULES: list[str] = ["compare", "score", "replay", "footprint", "rescore", "verify", "imports", "plan", "schema"]
