"""Every research data set socium reads: where it comes from, which version, under what terms, and the
sha256 of each file, so ``socium data fetch`` can get exactly the files the results were computed on.

Why a registry rather than a download link in the README: a fetched file is only useful if it is the
file the published figures came from, so every file is pinned to an upstream version (a git commit,
not a branch) and to its sha256. The hashes were taken from the copies the results were computed on,
which are those upstream files byte for byte (each folder's README says so). Where a file's bytes are
not known in advance (SNAP's own gzip, the per-topic files of OASIS's Hugging Face dataset) its hash is
recorded at the first fetch and checked on every later one (``sha256=None``); for SNAP the
decompressed edge list is still pinned (``content_sha256``).

``SOCIUM_DATA_MIRROR`` replaces the upstream hosts with one base URL laid out as
``<base>/<upstream host>/<upstream path>`` (an institutional mirror, or the tests' loopback server).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from socium.errors import SociumError

MIRROR_ENV = "SOCIUM_DATA_MIRROR"

TWITTER15_REPO = "gszswork/Twitter15_16_dataset"
TWITTER15_COMMIT = "6a33ebd91d4cafeb5a42eabc5727226fec7bb0e5"
OASIS_REPO = "camel-ai/oasis"
OASIS_COMMIT = "46cdc8d31496b93706ce3d95d7eddc637c0678e2"
#: OASIS's Hugging Face dataset; it moved from ``oasis-agent/oasis-dataset`` (camel-ai/oasis PR #188, README).
OASIS_HF_DATASET = "echo-yiyiyi/oasis-dataset"
#: Not pinned: Hugging Face resolves a commit hash as a revision, but the dataset's commits could not be
#: looked up here (no network). Every body is checked to be a CSV with the columns socium reads before its
#: sha256 is recorded; set a commit here once known.
OASIS_HF_REVISION = "main"
SOTOPIA_REPO = "sotopia-lab/sotopia-space"
SOTOPIA_COMMIT = "12c13d807a62ce523ff87afefacb307b277b1604"
SNAP_URL = "https://snap.stanford.edu/data/facebook_combined.txt.gz"
CED_REPO = "thunlp/Chinese_Rumor_Dataset"
CED_COMMIT = "c1178d8cfd4c245c296889a51fc252b17c9037c5"  # 2018-12-24


class DataRegistryError(SociumError):
    """A data set name that is not in the registry, or a registry file that cannot be read."""


def github_raw(repo: str, commit: str, path: str) -> str:
    """A file of a GitHub repository at a pinned commit (raw.githubusercontent.com serves it as is)."""
    return f"https://raw.githubusercontent.com/{repo}/{commit}/{path}"


def mirrored(url: str, mirror: str | None = None) -> str:
    """``url`` on the mirror named by ``$SOCIUM_DATA_MIRROR`` (``<base>/<host>/<path>``), else unchanged."""
    base = mirror if mirror is not None else os.environ.get(MIRROR_ENV, "")
    if not base:
        return url
    parts = urlsplit(url)
    return f"{base.rstrip('/')}/{parts.netloc}{parts.path}"


@dataclass(frozen=True)
class RemoteFile:
    """One upstream file and where it lands, relative to the data folder."""

    dest: str
    url: str
    sha256: str | None  # None: recorded at the first fetch (a ``.sha256`` sidecar), checked afterwards
    size: int | None = None
    content_sha256: str | None = None  # for a .gz whose own bytes are not pinned: sha256 of its content
    max_size: int | None = None  # the cap on a body whose size is not known (default download.MAX_UNSIZED)
    columns: tuple[str, ...] = ()  # a CSV's columns socium reads: a body without them is refused


@dataclass(frozen=True)
class DataSet:
    """A data set as ``socium data fetch NAME`` gets it, with what is printed before downloading."""

    name: str
    title: str
    source: str
    version: str
    licence: str
    citation: str
    provides: tuple[str, ...]  # the paths (relative to the data folder) the code reads; see datadir.DATASETS
    files: tuple[RemoteFile, ...] = ()
    #: files listed by another fetched file (OASIS's per-topic users, named in all_topics.csv)
    expand: Callable[[Path], tuple[RemoteFile, ...]] | None = None
    #: the fetched files are packed into this tar.gz (member names relative to ``pack_root``)
    pack: str | None = None
    pack_root: str | None = None
    optional: bool = False  # a file missing upstream is a warning, not a failure
    notes: tuple[str, ...] = field(default_factory=tuple)

    def all_files(self, root: Path) -> tuple[RemoteFile, ...]:
        """The static files plus those listed by already-fetched files under ``root``."""
        return self.files + (self.expand(root) if self.expand is not None else ())

    @property
    def size(self) -> int:
        """Bytes to download, over the files whose size is known."""
        return sum(f.size or 0 for f in self.files)


@cache
def _twitter15_files() -> tuple[RemoteFile, ...]:
    path = Path(__file__).with_name("twitter15_files.yaml")
    try:
        rows = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        return tuple(
            RemoteFile(f"twitter15/.download/{rel}", github_raw(TWITTER15_REPO, TWITTER15_COMMIT, rel), str(h), int(n))
            for rel, h, n in rows["files"]
        )
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError) as exc:
        raise DataRegistryError(f"{path}: cannot read the Twitter15 file list: {exc}") from exc


@cache
def _ced_files() -> tuple[RemoteFile, ...]:
    """CED's 6,775 upstream files at the pinned commit, each with its size and sha256 (``ced_files.tsv``: the
    manifest computed from that commit, the ``.DS_Store`` files left out)."""
    path = Path(__file__).with_name("ced_files.tsv")
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh, delimiter="\t"))
        return tuple(
            RemoteFile(
                f"ced/.download/{r['path']}", github_raw(CED_REPO, CED_COMMIT, r["path"]), r["sha256"], int(r["size"])
            )
            for r in rows
        )
    except (OSError, csv.Error, KeyError, TypeError, ValueError) as exc:
        raise DataRegistryError(f"{path}: cannot read the CED file list: {exc}") from exc


def _oasis(path: str, sha256: str, size: int, dest: str | None = None) -> RemoteFile:
    return RemoteFile(
        f"oasis-reference/{dest or path.removeprefix('data/')}",
        github_raw(OASIS_REPO, OASIS_COMMIT, path),
        sha256,
        size,
    )


_CED_PACK = "ced/ced.tar.gz"
_TOPICS_CSV = "oasis-reference/twitter_dataset/all_topics.csv"
_TOPIC_DIR = "oasis-reference/twitter_dataset/anonymous_topic_200_1h"
_TOPIC_COLUMNS = ("user_id",)  # what the propagation experiment reads a topic's users by


def _oasis_topic_files(root: Path) -> tuple[RemoteFile, ...]:
    """The per-topic user files of the cascades in OASIS's all_topics.csv that the repository lacks."""
    csv_path = root / _TOPICS_CSV
    try:
        with csv_path.open(newline="", encoding="utf-8") as fh:
            names = [r.get("topic_name", "").strip() for r in csv.DictReader(fh)]
    except OSError as exc:
        raise DataRegistryError(f"{csv_path}: needed to list OASIS's topics; fetch 'oasis' first ({exc})") from exc
    in_repo = {"False_Business_0"}
    hf = f"https://huggingface.co/datasets/{OASIS_HF_DATASET}/resolve/{OASIS_HF_REVISION}"
    return tuple(
        RemoteFile(
            f"{_TOPIC_DIR}/{n}.csv",
            f"{hf}/twitter_dataset/anonymous_topic_200_1h/{n}.csv",
            None,
            max_size=16 << 20,
            columns=_TOPIC_COLUMNS,
        )
        for n in dict.fromkeys(names)
        if n and n not in in_repo and n.replace("_", "").replace(" ", "").replace("&", "").isalnum()
    )


_OASIS_CITATION = (
    "Yang et al., OASIS: Open Agent Social Interaction Simulations with One Million Agents, arXiv:2411.11581 (2024)"
)

_SETS: tuple[DataSet, ...] = (
    DataSet(
        name="twitter15",
        title="Twitter15 retweet trees and veracity labels (Ma, Gao & Wong 2017)",
        source=f"https://github.com/{TWITTER15_REPO}",
        version=f"commit {TWITTER15_COMMIT}",
        licence="none stated; research use only: tweet texts are excluded by Twitter's terms; do not republish",
        citation=(
            "Ma, Gao & Wong, Detect Rumors in Microblog Posts Using Propagation Structure via Kernel Learning, "
            "ACL 2017; Liu et al., Real-time Rumor Debunking on Twitter, CIKM 2015"
        ),
        provides=("twitter15/twitter15_trees.tar.gz",),
        pack="twitter15/twitter15_trees.tar.gz",
        pack_root="twitter15/.download",
        notes=("Twitter16 is not fetched: socium keeps it as unseen data for its propagation results.",),
    ),
    DataSet(
        name="oasis",
        title="OASIS reference files: 198 cascades, one topic's users, polarisation users, Reddit counterfactuals",
        source=f"https://github.com/{OASIS_REPO}",
        version=f"commit {OASIS_COMMIT}",
        licence=(
            "Apache-2.0 (repository LICENSE); the Twitter CSVs hold public accounts' IDs, names and bios: "
            "treat as personal data, use for validation only, do not republish"
        ),
        citation=_OASIS_CITATION,
        provides=(
            _TOPICS_CSV,
            "oasis-reference/twitter_dataset/group_polarization",
            "oasis-reference/reddit",
        ),
        files=(
            _oasis(
                "data/twitter_dataset/all_topics.csv",
                "f0756df44e16c8a9b246fd72cb317f2c1ff8042a2579420938b8d8e2072aed57",
                45589,
            ),
            _oasis(
                "data/twitter_dataset/anonymous_topic_200_1h/False_Business_0.csv",
                "beca878ff53cd33ad745703ba17b624e9ade30ed2684609df0a4d8f52050f906",
                24143,
            ),
            _oasis(
                "data/twitter_dataset/group_polarization/197_baoshou.csv",
                "42b6603a181754dfac6e575a0b5d7d2bcf5b7cf41de9356e6e75a2a796c3afdd",
                305307,
            ),
            _oasis(
                "data/twitter_dataset/group_polarization/197_progressive.csv",
                "0469721cb806b88b8935a6d7990835a78048db213b4fbe3b4e15097937e2f57e",
                319652,
            ),
            _oasis(
                "data/reddit/counterfactual_36.json",
                "96e123a131f7f6a63b8b260522234835298704dbda04afe189c09b90011fbc64",
                91187,
            ),
            _oasis(
                "data/reddit/user_data_36.json",
                "611d02ee4a99bce2bbf88a4f73415c64c3db4e65777d05b73a98b3ecd71a38e4",
                32166,
            ),
            _oasis(
                "LICENSE",
                "950deb34b1341a0ac95236fae92fe247c318c3a83a62c9ebacbe1882530ab1f6",
                11344,
                dest="LICENSE.oasis-apache-2.0.txt",
            ),
        ),
    ),
    DataSet(
        name="oasis-topics",
        title="OASIS real users of the other 197 propagation topics (OASIS's Hugging Face dataset)",
        source=f"https://huggingface.co/datasets/{OASIS_HF_DATASET}",
        version=f"revision {OASIS_HF_REVISION} (not pinned; each file's sha256 is recorded at the first fetch)",
        licence="as OASIS (Apache-2.0); real public accounts: personal data, validation only, do not republish",
        citation=_OASIS_CITATION,
        provides=(_TOPIC_DIR,),
        expand=_oasis_topic_files,
        optional=True,
        notes=(
            "The dataset's file layout was not checked (offline); topics it lacks are reported and skipped: "
            "the propagation experiment then builds those cascades' agents from the trees alone.",
        ),
    ),
    DataSet(
        name="sotopia",
        title="SOTOPIA scenarios, characters, relationships and episode combinations (Zhou et al. 2024)",
        source=f"https://github.com/{SOTOPIA_REPO}",
        version=f"commit {SOTOPIA_COMMIT}",
        licence="Apache-2.0 (declared in the repository README's Space metadata); SOTOPIA library MIT",
        citation="Zhou et al., SOTOPIA: Interactive Evaluation for Social Intelligence in Language Agents, ICLR 2024",
        provides=("sotopia",),
        files=tuple(
            RemoteFile(f"sotopia/{name}", github_raw(SOTOPIA_REPO, SOTOPIA_COMMIT, f"profiles/{name}"), h, n)
            for name, h, n in (
                (
                    "environment_profiles.jsonl",
                    "b75de0c5b1b951ebeb66eb223ab3eec996caa890263a0bcd48ce2d9f4ce3e109",
                    94093,
                ),
                ("agent_profiles.jsonl", "1f2f74c07fd9105242c7f2a951d5378f52cd03a6df113f6020edb90d31202f1b", 32119),
                (
                    "relationship_profiles.jsonl",
                    "33cd50cc1fbe93b8b7010ce5047e767e3a1ead421e791fee2bb1b9b2073327a2",
                    65223,
                ),
                (
                    "env_agent_combo_storages.jsonl",
                    "46d5858322e8c8266c4aabc45e3ca5a6d8f91df0fc6f167b10adb5b1477a4815",
                    71100,
                ),
            )
        ),
        notes=("hard_env_ids.txt (SOTOPIA-hard) has no upstream file; sotopia.hard_only needs it written by hand.",),
    ),
    DataSet(
        name="snap",
        title="SNAP ego-Facebook combined friendship graph (McAuley & Leskovec 2012)",
        source="https://snap.stanford.edu/data/ego-Facebook.html",
        version="SNAP release of facebook_combined.txt (4,039 nodes, 88,234 edges)",
        licence="none stated; SNAP asks users to cite the paper. Research use.",
        citation="McAuley & Leskovec, Learning to Discover Social Circles in Ego Networks, NIPS 2012",
        provides=("snap-ego-facebook",),
        files=(
            RemoteFile(
                "snap-ego-facebook/facebook_combined.txt.gz",
                SNAP_URL,
                None,
                None,
                content_sha256="f41c026ed8af3cc3359f1ca5573d0605fb09ae0eefa34544b820fd8c6e2ef296",
                max_size=16 << 20,  # the gzip is ~0.2 MB
            ),
        ),
    ),
    DataSet(
        name="ced",
        title="CED: Weibo rumour and non-rumour repost cascades, 1,538 + 1,849 (Song et al. 2018)",
        source=f"https://github.com/{CED_REPO}",
        version=f"commit {CED_COMMIT} (2018-12-24)",
        licence="none stated; research use; cite Song et al.; do not republish the texts",
        citation=(
            "Song, Tu, Yang, Liu & Sun, CED: Credible Early Detection of Social Media Rumors, arXiv:1811.04175 "
            "(2018); IEEE TKDE 2021"
        ),
        provides=(_CED_PACK,),
        pack=_CED_PACK,
        pack_root="ced/.download",
        notes=(
            "Packed into ced/ced.tar.gz with the upstream paths (CED_Dataset/...); cascades posted on or after "
            "2013-07-01 are socium's held-out evaluation set: fit, tune or select nothing on them.",
        ),
    ),
)


def datasets() -> dict[str, DataSet]:
    """The registry by name, in the order ``socium data fetch`` (no names) fetches them."""
    out = {d.name: d for d in _SETS}
    out["twitter15"] = replace(out["twitter15"], files=_twitter15_files())
    out["ced"] = replace(out["ced"], files=_ced_files())
    return out


def select(names: list[str] | tuple[str, ...]) -> list[DataSet]:
    """The named data sets (all when none are named), refusing a name the registry lacks."""
    reg = datasets()
    unknown = [n for n in names if n not in reg]
    if unknown:
        raise DataRegistryError(f"unknown data set(s) {', '.join(unknown)}: choose from {', '.join(reg)}")
    return [reg[n] for n in dict.fromkeys(names)] if names else list(reg.values())


def datasets_for(relpath: str) -> list[DataSet]:
    """The data sets that provide ``relpath`` (a key of :data:`socium.data.datadir.DATASETS`) or put files
    under it (OASIS's per-topic folder gets one file from ``oasis`` and the rest from ``oasis-topics``)."""
    return [
        d
        for d in _SETS
        if any(relpath == p or relpath.startswith(p + "/") for p in d.provides)
        or any(f.dest.startswith(relpath + "/") for f in d.files)
    ]


def fetch_command(relpath: str) -> str:
    """The exact command that fetches what ``relpath`` needs (for ``socium data`` and missing-data errors)."""
    return " ".join(["socium data fetch", *(d.name for d in datasets_for(relpath))])


def required_files(relpath: str) -> list[str]:
    """The files (relative to the data folder) that must all be there for ``relpath`` to count as found:
    a packed data set's tarball, and every registered file at or under ``relpath`` (so a folder a failed
    fetch left behind, empty or half-filled, is not reported as present)."""
    out: list[str] = []
    for d in _SETS:
        if d.pack is not None and (d.pack == relpath or d.pack.startswith(relpath + "/")):
            out.append(d.pack)
        out += [f.dest for f in d.files if f.dest == relpath or f.dest.startswith(relpath + "/")]
    return out
