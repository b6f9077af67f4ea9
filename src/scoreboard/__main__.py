import sys

try:
    from .cli.main import console
except KeyboardInterrupt:  # Ctrl+C while Python imports the command line: nothing ran yet
    print("scoreboard: interrupted", file=sys.stderr)
    exec("pass")  # noqa: S102 - clears CPython's unhandled-interrupt mark (cli.main.forget_interrupt_mark)
    raise SystemExit(130) from None

raise SystemExit(console())
