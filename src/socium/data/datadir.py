"""Where socium looks for the research data sets, in one place for the code, the tests and the CLI.

The data (Twitter15, OASIS reference files, SOTOPIA, SNAP) are research-use only and must never be
packaged, so they live outside the repository: ``socium data fetch`` downloads them (see
:mod:`socium.data.fetch` and :mod:`socium.data.registry`). One variable, ``SOCIUM_DATA_DIR``, names
their folder; without it socium looks in the per-user data folder ``socium data fetch`` fills
(platformdirs), then in ``shared/data`` beside the checkout (``../shared/data`` from the repository
root, also when the checkout is a git worktree of that repository; kept for developers). No absolute
path is written into the code.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from socium.data.registry import fetch_command as _cmd
from socium.data.registry import required_files
from socium.errors import InputFileError

ENV_VAR = "SOCIUM_DATA_DIR"

#: What socium's experiments read, relative to the data folder, and what each is for.
DATASETS: dict[str, str] = {
    "twitter15/twitter15_trees.tar.gz": "Twitter15 retweet trees (propagation experiment)",
    "oasis-reference/twitter_dataset/all_topics.csv": "OASIS's 198 cascades with source tweet texts (propagation)",
    "oasis-reference/twitter_dataset/anonymous_topic_200_1h": "OASIS real users per topic (propagation profiles)",
    "oasis-reference/twitter_dataset/group_polarization": "OASIS core users and follow graph (polarisation)",
    "oasis-reference/reddit": "OASIS Reddit counterfactual posts and personas (herding)",
    "sotopia": "SOTOPIA scenarios, characters and relationships (episodes)",
    "snap-ego-facebook": "SNAP ego-Facebook social graph (graph.kind: edgelist)",
    "ced/ced.tar.gz": "CED Weibo rumour and non-rumour repost cascades (Weibo propagation)",
}


def _repo_root() -> Path:
    """The checkout this package is imported from (``src/socium/data/datadir.py`` -> repository root)."""
    return Path(__file__).resolve().parents[3]


def _main_checkout(root: Path) -> Path | None:
    """For a git worktree (``.git`` is a file naming ``<main>/.git/worktrees/<name>``), the main checkout."""
    git = root / ".git"
    if not git.is_file():
        return None
    try:
        line = git.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    gitdir = (root / line.split(":", 1)[1].strip()).resolve()
    # <main>/.git/worktrees/<name> -> <main>
    return gitdir.parents[2] if gitdir.parent.name == "worktrees" else None


def candidates() -> list[Path]:
    """Folders tried in order: ``$SOCIUM_DATA_DIR`` (only it, when set: an explicit choice never falls
    back), else the per-user data folder, then ``../shared/data`` beside the checkout."""
    env = os.environ.get(ENV_VAR)
    if env:
        return [Path(env).expanduser()]
    root = _repo_root()
    out = [Path(platformdirs.user_data_dir("socium", appauthor=False)), root.parent / "shared" / "data"]
    main = _main_checkout(root)
    if main is not None and main != root:
        out.append(main.parent / "shared" / "data")
    return out


def data_dir() -> Path:
    """The data folder: the first candidate that exists, else the first candidate (reported as missing,
    and where ``socium data fetch`` puts the data)."""
    cands = candidates()
    return next((c for c in cands if c.is_dir()), cands[0])


def fetch_command(relpath: str) -> str:
    """The command that fetches ``relpath`` (a key of :data:`DATASETS`, or a path below one)."""

    return _cmd(relpath)


def missing_data(path: Path | str) -> InputFileError:
    """The one-line error every experiment raises for absent research data: what is missing, the command."""
    p = Path(path)
    root = data_dir()
    try:
        rel = p.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        rel = p.as_posix()
    key = next((k for k in DATASETS if rel == k or rel.startswith(k + "/") or k.startswith(rel + "/")), rel)
    return InputFileError(
        p,
        None,
        f"research data missing; fetch it with `{fetch_command(key)}`, or set {ENV_VAR} to a folder that "
        "holds it (`socium data` shows where socium looks)",
    )


def _has_file(folder: Path) -> bool:
    """Whether ``folder`` holds a regular file (not only folders, sidecars or a fetch's temporary files)."""
    try:
        return any(
            p.is_file() and not p.name.startswith((".", "tmp")) and not p.name.endswith(".sha256")
            for p in folder.rglob("*")
        )
    except OSError:
        return False


def present(path: Path) -> bool:
    """Whether ``path`` holds data: a file, or a folder with a file in it; under the data folder, also every
    file the registry puts at or under it (a folder a failed fetch left, empty or half-filled, is absent)."""
    if path.is_file():
        return True
    if not path.is_dir() or not _has_file(path):
        return False
    root = data_dir()
    try:
        rel = path.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return True
    return all((root / f).is_file() for f in required_files(rel))


def require(path: Path | str) -> Path:
    """``path`` if it holds data (:func:`present`), else :func:`missing_data`'s error (so a missing data set
    reads the same everywhere, and an empty folder gets the fetch command rather than a raw ``[Errno 2]``)."""
    p = Path(path)
    if not present(p):
        raise missing_data(p)
    return p


@dataclass(frozen=True)
class DataEntry:
    relpath: str
    purpose: str
    path: Path
    found: bool
    command: str


def describe() -> tuple[list[Path], Path, list[DataEntry]]:
    """What ``socium data`` prints: the folders looked at, the one used, which data sets it holds, and the
    command that fetches each."""
    root = data_dir()
    entries = [
        DataEntry(rel, why, root / rel, present(root / rel), fetch_command(rel)) for rel, why in DATASETS.items()
    ]
    return candidates(), root, entries
