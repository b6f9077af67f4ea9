"""A variant's skill: an instruction file, or a skill folder (a folder holding SKILL.md and
whatever it refers to: scripts, references, assets).

A skill file loads its text. A skill folder loads its SKILL.md text (what a prompt subject is
given, as before) and every other file of the folder, read once at load time and held in
memory, so each agent task attempt installs exactly the files the plan hashed (tasks/skill.py
installs them where the agent finds skills). Bounded: at most MAX_SKILL_FILES files and
MAX_SKILL_BYTES bytes in all; links, FIFOs and devices in the folder are refused (a link could
lead outside the suite's root); `__pycache__` and `.git` folders are skipped (running a skill's
script must not change the skill).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError, shorten
from ..hashing import sha256_json
from ..safefile import FileRefused, read_file
from .config import Limits
from .paths import Places

#: the most files (folders count too) a skill folder may hold
MAX_SKILL_FILES = 500
#: the most bytes a skill folder's files may hold together
MAX_SKILL_BYTES = 16 * 1024 * 1024
#: folders of a skill folder that are not part of the skill
SKIPPED_DIRS = frozenset({"__pycache__", ".git"})
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class SkillFile:
    """One file of a skill folder: its path inside the folder (with /), content, +x bit."""

    path: str
    data: bytes
    executable: bool = False


@dataclass(frozen=True)
class SkillFolder:
    """A skill folder's files, sorted by path; `name` is the folder's name (where an agent's
    skills folder gets it: `.claude/skills/<name>/`)."""

    name: str
    files: tuple[SkillFile, ...]

    @property
    def total_bytes(self) -> int:
        return sum(len(f.data) for f in self.files)

    def digest(self) -> str:
        """SHA-256 over every file's path, content hash and executable bit, in path order:
        changing, adding, removing, renaming or chmod-ing any file changes it."""
        return sha256_json([[f.path, hashlib.sha256(f.data).hexdigest(), f.executable] for f in self.files])

    def describe(self) -> dict:
        """What the plan records of it."""
        return {"name": self.name, "hash": self.digest(), "files": len(self.files), "bytes": self.total_bytes}


def load_skill(path_text: str, base_dir: Path, places: Places | None = None, *,
               from_flag: bool = True, field: str = "skill") -> tuple[str, str, SkillFolder | None]:
    """A folder loads its SKILL.md and all its files; a file loads that file. Returns (text,
    shown path, folder or None). A skill named in a suite file (from_flag False) must lie
    inside the suite's root, and so must every file of its folder. `field` names where it was
    given in errors (`vs` for the flag --vs, `variants.NAME.skill` in a suite file)."""
    try:
        return _load_skill(path_text, base_dir, places, from_flag)
    except ConfigError as exc:
        if exc.field != "skill" or field == "skill":
            raise
        raise ConfigError(exc.detail, file=exc.file, line=exc.line, case_id=exc.case_id, field=field) from None


def _load_skill(path_text: str, base_dir: Path, places: Places | None,
                from_flag: bool) -> tuple[str, str, SkillFolder | None]:
    places = places or Places(base_dir, None, None)
    path = Path(path_text)
    if from_flag and not path.is_absolute():
        path = base_dir / path
    name = str(path) if from_flag else path_text
    places.resolve(name, "skill", from_flag=from_flag, folder_ok=True)
    target = base_dir / path if not from_flag else path
    folder = None
    if target.is_dir():
        folder_name = os.path.join(name, "SKILL.md")
        places.resolve(folder_name, "skill", from_flag=from_flag)
        folder = load_folder(target, path_text, places.inside(from_flag))
        name, target = folder_name, target / "SKILL.md"
    data = places.read(target, "skill", from_flag=from_flag, limit=Limits().max_file_bytes,
                       limit_name="limits.max_file_bytes")
    try:
        return data.decode("utf-8-sig"), path_text, folder
    except UnicodeDecodeError:
        raise ConfigError(f"skill is not valid UTF-8: {target}", field="skill") from None


def skill_name(path_text: str) -> str:
    """careful/ -> careful, careful/SKILL.md -> careful, terse.md -> terse."""
    p = Path(path_text.rstrip("/"))
    if p.name == "SKILL.md":
        return p.parent.name or "skill"
    return p.stem or p.name


def load_folder(folder: Path, shown: str, root: Path | None) -> SkillFolder:
    """Every file of a skill folder (bounded; links and special files refused; read through
    the confined walk when `root` is given)."""
    real = Path(os.path.realpath(folder))
    files: list[SkillFile] = []
    seen = total = 0
    pending = [real]
    while pending:
        current = pending.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError as exc:
            raise _refused(shown, current.relative_to(real), f"cannot be listed: {exc.strerror or exc}")
        for entry in entries:
            rel = Path(entry.path).relative_to(real)
            if entry.is_dir(follow_symlinks=False) and entry.name in SKIPPED_DIRS:
                continue
            seen += 1
            if seen > MAX_SKILL_FILES:
                raise _refused(shown, rel, f"is past the limit of {MAX_SKILL_FILES} files in a skill folder")
            try:
                entry.name.encode("utf-8")
            except UnicodeEncodeError:  # it could be neither hashed into the plan nor reported
                raise _refused(shown, os.fsencode(rel).decode("utf-8", "backslashreplace"),
                               "has a name that is not valid UTF-8 (rename it)") from None
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISLNK(mode):
                raise _refused(shown, rel, "is a link (a skill folder holds regular files only)")
            if stat.S_ISDIR(mode):
                pending.append(Path(entry.path))
                continue
            if not stat.S_ISREG(mode):
                raise _refused(shown, rel, "is not a regular file (a FIFO, socket or device)")
            left = MAX_SKILL_BYTES - total
            try:
                data = read_file(entry.path, limit=left, limit_name="the skill folder's total", root=root)
            except FileRefused as exc:
                if "over the limit" in exc.reason:
                    raise _refused(shown, rel, f"takes the folder past {MAX_SKILL_BYTES} bytes in all "
                                   "(the most a skill folder may hold)") from None
                raise _refused(shown, rel, exc.reason) from None
            total += len(data)
            files.append(SkillFile(rel.as_posix(), data, bool(mode & stat.S_IXUSR)))
    files.sort(key=lambda f: f.path)
    base = skill_name(shown) if Path(shown).name != "SKILL.md" else Path(shown).parent.name
    name = _SAFE_NAME.sub("-", base or real.name).strip(".-") or "skill"
    return SkillFolder(name, tuple(files))


def _refused(shown: str, rel: Path | str, reason: str) -> ConfigError:
    where = f"{shown.rstrip('/')}/{rel}" if str(rel) not in ("", ".") else shown
    return ConfigError(f"skill folder file {shorten(where, 160)!r} {reason}", field="skill")
