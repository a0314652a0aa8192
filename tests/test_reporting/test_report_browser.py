"""Every report kind rendered in headless Chromium: no missing images, no broken links, no table wider
than the page. Skipped where Chromium is not installed (`.ci/run` installs it)."""

import json
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path

import pytest

from conftest import herding_inputs, needs_data
from socium.config.loading import config_from_dict
from socium.experiments.report import write_report
from socium.simulator.simulation import Simulation

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
pytestmark = [pytest.mark.browser, pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")]

PAGE_WIDTH = 1000
CHECK = """<script>window.addEventListener('load', () => {
  const W = document.documentElement.clientWidth;
  const r = {width: W,
    images: [...document.images].map(i => [i.getAttribute('src'), i.complete && i.naturalWidth > 0]),
    tables: [...document.querySelectorAll('table')].map(t => [
      (t.previousElementSibling || {}).textContent || '', Math.ceil(t.getBoundingClientRect().right)]),
    links: [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'))};
  document.body.setAttribute('data-check', JSON.stringify(r));
});</script>"""


def render(index: Path) -> dict:
    """Load the page in Chromium at PAGE_WIDTH and return what the page's own check script measured."""
    probe = index.with_name("_browser_check.html")
    probe.write_text(index.read_text(encoding="utf-8").replace("</body>", CHECK + "</body>"), encoding="utf-8")
    out = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--window-size={PAGE_WIDTH},900",
            "--virtual-time-budget=5000",
            "--dump-dom",
            probe.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    probe.unlink()
    m = re.search(r'data-check="([^"]*)"', out.stdout)
    assert m, f"page did not load: {out.stderr[-500:]}"
    return json.loads(unescape(m.group(1)))


def check_page(index: Path, images: bool = True) -> dict:
    """Fail on an image that did not load, a link to nothing, or a table wider than the page."""
    got = render(index)
    missing = [src for src, ok in got["images"] if not ok]
    assert not missing, f"{index}: images that did not load: {missing}"
    assert got["images"] or not images, f"{index}: no figure on the page"
    for href in got["links"]:
        if not re.match(r"^(https?:|mailto:|#)", href):
            assert (index.parent / href).exists(), f"{index}: broken link {href}"
    wide = [(t, right) for t, right in got["tables"] if right > got["width"]]
    assert not wide, f"{index}: tables wider than the {got['width']}px page: {wide}"
    return got


def _tree(root: Path, name: str) -> str:
    tree = root / name
    tree.write_text(
        "['ROOT', 'ROOT', '0.0']->['1', '7', '0.0']\n"
        + "".join(f"['1', '7', '0.0']->['{u}', '7', '{u}.0']\n" for u in range(2, 9))
    )
    return str(tree)


def _run(root: Path, name: str, cfg: dict) -> Path:
    Simulation(config_from_dict({"name": name, **cfg}), root / name).run()
    return root / name


def _propagation(root: Path):
    from socium.experiments.propagation.spec import PropagationSpec

    return PropagationSpec(
        tree_files=[_tree(root, "7.txt"), _tree(root, "8.txt")],
        minutes=15,
        activation=0.8,
        topics_csv=str(root / "none.csv"),
        base={"seed": 1, "step_minutes": 5, "llm": {"backend": "random"}},
    )


def _polarisation():
    from socium.experiments.opinions.polarisation import PolarisationSpec

    return PolarisationSpec(
        population="synthetic",
        n_agents=10,
        activation=0.5,
        survey_every=1,
        base={"seed": 1, "steps": 2, "llm": {"backend": "random"}},
    )


def _build(kind: str, root: Path) -> Path:
    """One quick smoke-backend result folder of ``kind``; the page is what `socium report` writes for it."""
    from socium.experiments.designs.compare import run_compare

    llm_run = {
        "seed": 3,
        "steps": 3,
        "policy": {"kind": "llm"},
        "llm": {"backend": "random"},
        "population": {"n_agents": 20, "mean_activity": 0.5, "stance": "uniform"},
        "surveys": [{"every": 1, "question": "Trust the news?"}],
        "seed_posts": [{"author": i, "content": f"post {i}"} for i in range(4)],
    }
    out = root / kind.replace(" ", "_")
    if kind == "run (rule-based)":
        return _run(
            root,
            "rule",
            {
                "seed": 1,
                "steps": 4,
                "policy": {"kind": "bounded_confidence"},
                "population": {"n_agents": 80, "mean_activity": 0.3, "stance": "bimodal"},
                "seed_posts": [{"author": 0, "content": "x"}],
            },
        )
    if kind == "run (LLM)":
        return _run(root, "llm", llm_run)
    if kind == "propagation":
        from socium.experiments.propagation.study import run_propagation

        run_propagation(_propagation(root), out)
    elif kind == "herding":
        from socium.experiments.opinions.herding import HerdingSpec, run_herding

        items, people = herding_inputs(root)
        spec = HerdingSpec(
            items=items,
            personas=people,
            n_items=6,
            activation=0.6,
            bootstrap=20,
            base={"seed": 2, "steps": 2, "llm": {"backend": "random"}},
        )
        run_herding(spec, out)
    elif kind == "polarisation":
        from socium.experiments.opinions.polarisation import run_polarisation

        run_polarisation(_polarisation(), out)
    elif kind == "compare (polarisation)":
        from socium.experiments.opinions.polarisation import run_polarisation

        run_compare(_polarisation(), out, run_polarisation)
    elif kind == "compare (propagation)":
        from socium.experiments.propagation.study import run_propagation

        run_compare(_propagation(root), out, run_propagation)
    elif kind == "intervention":
        from socium.experiments.intervention.study import InterventionSpec, run_intervention

        spec = InterventionSpec.model_validate(
            {
                "experiment": "intervention",
                "seeds": [0, 1],
                "n_false": 1,
                "n_true": 1,
                "drift_embedder": "hashing",
                "strategies": {
                    "none": {},
                    "removal": {"kind": "fact_check", "params": {"delay": 0, "recall": 1.0}, "remove": True},
                },
                "base": {
                    "steps": 3,
                    "population": {"n_agents": 16, "mean_activity": 0.6, "stance": "bimodal"},
                    "llm": {"backend": "random", "max_tokens": 64},
                },
            }
        )
        run_intervention(spec, out)
    elif kind == "episodes":
        from socium.episodes.config import episodes_config_from_dict
        from socium.episodes.runner import run_episodes

        cfg = {"name": "e", "out": str(out), "llm": {"backend": "random"}, "max_turns": 3}
        run_episodes(episodes_config_from_dict({**cfg, "tasks": {"mutual_friend": 1, "bargaining": 1}}), plots=False)
    elif kind == "sensitivity":
        from socium.experiments.designs.sensitivity import SensitivitySpec, run_sensitivity

        spec = SensitivitySpec(
            name="s",
            method="morris",
            n=2,
            levels=4,
            seed=1,
            executor="inprocess",
            bootstrap=20,
            parameters={
                "policy.p_repost": {"low": 0.0, "high": 0.6},
                "graph.params.m": {"low": 1, "high": 3, "integer": True},
            },
            outcomes=["reshares_per_agent", "mean_cascade_size"],
            base={
                "seed": 0,
                "steps": 4,
                "population": {"n_agents": 60, "mean_activity": 0.3},
                "graph": {"kind": "barabasi_albert", "params": {"m": 2}},
                "policy": {"kind": "independent_cascade", "p_repost": 0.1, "p_post": 0.3},
            },
        )
        run_sensitivity(spec, out)
    return out


SMOKE = {"run (rule-based)": False, "sensitivity": False}
KINDS = [
    "run (rule-based)",
    "run (LLM)",
    "propagation",
    "herding",
    "polarisation",
    pytest.param("intervention", marks=needs_data("oasis-reference/twitter_dataset/all_topics.csv")),
    "compare (polarisation)",
    "compare (propagation)",
    "episodes",
    "sensitivity",
]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("browser")


@pytest.mark.parametrize("kind", KINDS)
def test_report_renders_in_a_browser(root, kind):
    target = _build(kind, root)
    rep = write_report(target)  # what `socium report DIR` writes
    got = check_page(rep.html)
    page = rep.html.read_text(encoding="utf-8")
    assert ("SMOKE RUN" in page) == SMOKE.get(kind, True)  # every page of a smoke run says so, no other page
    assert len(got["tables"]) >= 1 and len(got["images"]) == len(rep.images)
    if kind == "compare (propagation)":  # one overview, then each perspective with its interval band
        names = {im.name for im in rep.images}
        assert {f"perspective_cascades_{p}.png" for p in ("local", "mindreader", "omniscient")} <= names


def test_validate_scorecard_renders_in_a_browser(root):
    from socium.experiments.validation.validate import scorecard, write_scorecard

    run = _run(
        root,
        "llm-validate",
        {
            "seed": 5,
            "steps": 3,
            "policy": {"kind": "llm"},
            "llm": {"backend": "random"},
            "population": {"n_agents": 20, "mean_activity": 0.5},
            "seed_posts": [{"author": 0, "content": "x"}],
        },
    )
    _, page = write_scorecard(scorecard(run), root / "sf")
    got = check_page(page, images=False)
    assert got["tables"] and "SMOKE RUN" in page.read_text(encoding="utf-8")


def test_check_catches_a_missing_image_a_broken_link_and_an_overflowing_table(tmp_path):
    page = tmp_path / "index.html"
    wide = "".join(f"<td>{'x' * 40}{i}</td>" for i in range(40))
    page.write_text(f"<html><body><img src='nope.png'><table><tr>{wide}</tr></table></body></html>")
    got = render(page)
    assert got["images"] == [["nope.png", False]]
    assert got["tables"][0][1] > got["width"]
    with pytest.raises(AssertionError, match="did not load"):
        check_page(page)
    page.write_text("<html><body><a href='missing.html'>x</a><table><tr><td>1</td></tr></table></body></html>")
    with pytest.raises(AssertionError, match="broken link"):
        check_page(page, images=False)
    page.write_text(f"<html><body><table><tr>{wide}</tr></table></body></html>")
    with pytest.raises(AssertionError, match="wider than"):
        check_page(page, images=False)
