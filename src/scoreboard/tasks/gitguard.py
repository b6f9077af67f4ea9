"""Git settings an agent left in its workspace that would run a command, neutralised for the
checks.

Checks run on this machine, outside the sandbox; a check that runs git in the workspace
(`git status`, `git diff`, `git log -p`) reads the repository's own configuration, which the
agent wrote: `core.fsmonitor` is run by `git status`, a `filter.<driver>.clean` named by
`.gitattributes` by `status` and `diff`, `diff.external` and `diff.<driver>.textconv` by
`diff`, hooks by `commit`. Each would run the agent's command with the user's permissions.
The checks' environment overrides them through git's GIT_CONFIG_COUNT/KEY_n/VALUE_n (the
command-line scope, above every file): the fixed keys always, and the driver keys that any
repository's configuration in the workspace sets (read with `git config --file`, includes
followed, never by running git in the repository). A command a check's git would have run
becomes `false` (that git fails, so the check is not assessed, never a verdict from it) or,
for a filter, no filter.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

#: settings that run a command, whatever the repository holds: what a check's git gets
ALWAYS = {"core.fsmonitor": "false", "core.hooksPath": os.devnull, "core.pager": "cat",
          "core.editor": "false", "sequence.editor": "false", "core.askPass": "false"}
#: driver settings the agent's configuration may set (by name), and what each becomes
_DRIVERS = ((re.compile(r"filter\..+\.(clean|smudge|process)$", re.I), ""),
            (re.compile(r"(diff\..+\.(textconv|command)|merge\..+\.driver)$", re.I), "false"),
            (re.compile(r"diff\.external$", re.I), "false"))
#: the most folders looked at for repositories (a workspace holds far fewer)
MAX_ENTRIES = 20_000


def _configs(workspace: Path) -> list[Path]:
    """The configuration files of the git repositories in the workspace (a `.git` folder, a
    `.git` file's gitdir, a bare repository), found without following links."""
    found: list[Path] = []
    seen = 0
    for folder, dirs, files in os.walk(workspace, followlinks=False):
        seen += len(dirs) + len(files)
        if seen > MAX_ENTRIES:
            break
        here = Path(folder)
        if "HEAD" in files and "config" in files:
            found += [here / "config"] + ([here / "config.worktree"] if "config.worktree" in files else [])
        if ".git" in files:
            try:
                line = (here / ".git").read_text(errors="replace").splitlines()[0]
            except (OSError, IndexError):
                continue
            if line.startswith("gitdir:"):
                gitdir = (here / line[7:].strip())
                found += [gitdir / "config", gitdir / "config.worktree"]
    return found


def _names(git: str, config: Path) -> list[str]:
    try:
        done = subprocess.run([git, "config", "--file", str(config), "--includes", "--name-only", "--list", "-z"],
                              capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [n for n in done.stdout.decode("utf-8", "replace").split("\0") if n]


def overrides(workspace: Path) -> dict[str, str]:
    """The settings a check's git gets in the command-line scope: ALWAYS, and every driver key
    a repository in the workspace sets."""
    settings = dict(ALWAYS)
    git = shutil.which("git")
    if git is None:
        return settings
    for config in _configs(workspace):
        if not config.is_file():
            continue
        for name in _names(git, config):
            for pattern, value in _DRIVERS:
                if pattern.match(name):
                    settings[name] = value
    return settings


def git_env(env: dict[str, str], settings: dict[str, str]) -> None:
    """Add `settings` to `env` after any GIT_CONFIG_COUNT entries it already has."""
    try:
        start = int(env.get("GIT_CONFIG_COUNT") or 0)
    except ValueError:
        start = 0
    start = max(start, 0)
    for i, (key, value) in enumerate(settings.items(), start):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
    env["GIT_CONFIG_COUNT"] = str(start + len(settings))
