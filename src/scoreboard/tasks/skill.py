"""Installing a variant's skill in an attempt's workspace.

A skill file's text goes where the task's `skill_file` says (as before). A skill folder
(suite/skills.py: every file read and hashed at load time) is copied whole into the agent's
own skills folder in the workspace, where that agent looks for project skills:

| agent | skills folder |
|---|---|
| claude-cli | `.claude/skills/<name>/` (Claude Code's project skills) |
| codex-cli | `.agents/skills/<name>/` (Codex's repository skills) |
| any other (command, http) | `.agents/skills/<name>/` (the open agent-skills layout) |

Every agent also gets `SCOREBOARD_SKILL_DIR` (the installed folder) and `SCOREBOARD_SKILL_FILE`
(its SKILL.md, or the `skill_file` a text skill was written to), and a CLI agent is told the
folder in the skill text it is given ("Base directory for this skill: ...", the line Claude
Code's own skill tool prints), so the scripts SKILL.md names resolve.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

#: where an agent without its own convention finds a skill folder (relative to its workspace)
DEFAULT_SKILLS_DIR = ".agents/skills"


@dataclass
class InstalledSkill:
    """Where the skill went in the workspace (absolute paths; None where nothing went)."""

    folder: Path | None = None
    file: Path | None = None

    def env(self) -> dict[str, str]:
        out = {}
        if self.folder is not None:
            out["SCOREBOARD_SKILL_DIR"] = str(self.folder)
        if self.file is not None:
            out["SCOREBOARD_SKILL_FILE"] = str(self.file)
        return out

    def describe(self, work: Path) -> dict | None:
        """What the attempt's record says (paths relative to the workspace)."""
        if self.folder is None and self.file is None:
            return None
        return {"folder": _rel(self.folder, work), "file": _rel(self.file, work)}


def skills_dir_of(subject) -> str:
    """The folder (relative to the workspace) in which `subject`'s agent finds skill folders."""
    value = getattr(subject, "skills_dir", None)
    return value if isinstance(value, str) and value else DEFAULT_SKILLS_DIR


def install(work: Path, *, text: str | None, folder, skill_file: str | None, skills_dir: str) -> InstalledSkill:
    """Write the skill into the fresh workspace `work`: the text at `skill_file` (when the task
    names one), the folder's files under `skills_dir/<name>/` (replacing what the task's
    workspace/ held there)."""
    done = InstalledSkill()
    if text is not None and skill_file:
        target = _inside(work, skill_file)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        done.file = target
    if folder is not None:
        target = _inside(work, f"{skills_dir}/{folder.name}")
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.is_dir():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        for item in folder.files:
            path = _inside(target, item.path)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(item.data)
            os.chmod(path, 0o755 if item.executable else 0o644)
        done.folder = target
        done.file = target / "SKILL.md"
    return done


def skill_text_for_agent(text: str | None, installed: InstalledSkill) -> str | None:
    """The skill text a CLI agent is given: SKILL.md, then the folder it was installed in."""
    if text is None or installed.folder is None:
        return text
    return f"{text.rstrip()}\n\nBase directory for this skill: {installed.folder}\n"


def _inside(base: Path, rel: str) -> Path:
    """`base/rel`, refusing a path that would leave `base` (a link in the workspace, '..')."""
    target = Path(os.path.realpath(base / rel))
    real_base = Path(os.path.realpath(base))
    if target != real_base and real_base not in target.parents:
        raise ValueError(f"{rel!r} leads outside the workspace")
    return base / rel


def _rel(path: Path | None, work: Path) -> str | None:
    if path is None:
        return None
    try:
        return path.relative_to(work).as_posix()
    except ValueError:
        return str(path)
