"""Every report kind rendered in headless Chromium: no missing images, no broken links, no table wider
than the page. Skipped where Chromium is not installed (`.ci/run` installs it)."""

import json
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path

import pytest

from conftest import herding_inputs
from socium.config import config_from_dict
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


def check_page(index: Path) -> dict:
    got = render(index)
    missing = [src for src, ok in got["images"] if not ok]
    assert got["images"] and not missing, f"{index}: images that did not load: {missing}"
    for href in got["links"]:
        if not re.match(r"^(https?:|mailto:|#)", href):
            assert (index.parent / href).exists(), f"{index}: broken link {href}"
    wide = [(t, right) for t, right in got["tables"] if right > got["width"]]
    assert not wide, f"{index}: tables wider than the {got['width']}px page: {wide}"
    return got


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """One report of each kind, from quick random-backend runs."""
    from socium.experiments.compare import run_compare
    from socium.experiments.herding import HerdingSpec, run_herding
    from socium.experiments.polarisation import PolarisationSpec, run_polarisation
    from socium.experiments.propagation import PropagationSpec, run_propagation

    root = tmp_path_factory.mktemp("browser")
    out = {}
    rule = config_from_dict(
        {
            "name": "rule",
            "seed": 1,
            "steps": 4,
            "policy": {"kind": "bounded_confidence"},
            "population": {"n_agents": 80, "mean_activity": 0.3, "stance": "bimodal"},
            "seed_posts": [{"author": 0, "content": "x"}],
        }
    )
    Simulation(rule, root / "rule").run()
    out["run (rule-based)"] = root / "rule"
    llm = config_from_dict(
        {
            "name": "llm",
            "seed": 3,
            "steps": 3,
            "policy": {"kind": "llm"},
            "llm": {"backend": "random"},
            "population": {"n_agents": 20, "mean_activity": 0.5, "stance": "uniform"},
            "surveys": [{"every": 1, "question": "Trust the news?"}],
            "seed_posts": [{"author": i, "content": f"post {i}"} for i in range(4)],
        }
    )
    Simulation(llm, root / "llm").run()
    out["run (LLM)"] = root / "llm"
    tree = root / "7.txt"
    tree.write_text(
        "['ROOT', 'ROOT', '0.0']->['1', '7', '0.0']\n"
        + "".join(f"['1', '7', '0.0']->['{u}', '7', '{u}.0']\n" for u in range(2, 9))
    )
    tree2 = root / "8.txt"
    tree2.write_text(tree.read_text())
    run_propagation(
        PropagationSpec(
            tree_files=[str(tree), str(tree2)],
            minutes=15,
            activation=0.8,
            topics_csv=str(root / "none.csv"),
            base={"seed": 1, "step_minutes": 5, "llm": {"backend": "random"}},
        ),
        root / "prop",
    )
    out["propagation"] = root / "prop"
    items, people = herding_inputs(root)
    run_herding(
        HerdingSpec(
            items=items,
            personas=people,
            n_items=6,
            activation=0.6,
            bootstrap=20,
            base={"seed": 2, "steps": 2, "llm": {"backend": "random"}},
        ),
        root / "herd",
    )
    out["herding"] = root / "herd"
    pol = PolarisationSpec(
        population="synthetic",
        n_agents=10,
        activation=0.5,
        survey_every=1,
        base={"seed": 1, "steps": 2, "llm": {"backend": "random"}},
    )
    run_polarisation(pol, root / "pol")
    out["polarisation"] = root / "pol"
    run_compare(pol, root / "cmp", run_polarisation)
    out["compare"] = root / "cmp"
    for d in out.values():
        write_report(d)
    return out


@pytest.mark.parametrize("kind", ["run (rule-based)", "run (LLM)", "propagation", "herding", "polarisation", "compare"])
def test_report_renders_in_a_browser(reports, kind):
    got = check_page(reports[kind] / "report" / "index.html")
    page = (reports[kind] / "report" / "index.html").read_text(encoding="utf-8")
    if kind != "run (rule-based)":
        assert "SMOKE RUN" in page  # every page of a smoke run says so
    assert len(got["tables"]) >= 1


def test_check_catches_a_missing_image_and_an_overflowing_table(tmp_path):
    page = tmp_path / "index.html"
    wide = "".join(f"<td>{'x' * 40}{i}</td>" for i in range(40))
    page.write_text(f"<html><body><img src='nope.png'><table><tr>{wide}</tr></table></body></html>")
    got = render(page)
    assert got["images"] == [["nope.png", False]]
    assert got["tables"][0][1] > got["width"]
