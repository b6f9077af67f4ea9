from .cli.main import console

raise SystemExit(console())
