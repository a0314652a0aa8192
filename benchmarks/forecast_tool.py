"""``socium forecast`` at scale and out of sample: the OASIS fit applied to the other Twitter15 trees (issue 37).

What it measures, through the public API only (:mod:`socium.forecast`, what the CLI calls):

* wall time of each stage (load the fit, load and check the cascades, forecast + score, write), the
  cascades' total nodes, and the load average before and after (the machine is shared);
* the forecast's measures at each observe minute: NRMSE per curve, MSLE, APE quantiles, CRPS, coverage of
  the 50 / 80 / 90% intervals of the final scale, depth and breadth, and the paired differences to each
  baseline (the numbers docs/results.md reports).

    PYTHONPATH=src python benchmarks/forecast_tool.py --fit FIT [--cascades twitter15-not-oasis] [--limit 1000]
        [--replicas 40] [--observe-minutes 10] [--out runs/forecast-bench] [--json summary.json]

``--fit`` is a file from ``socium fit propagation --train oasis --bootstrap 0`` (the 134 OASIS trees).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time
from pathlib import Path

from socium import forecast as fc


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", required=True)
    ap.add_argument("--cascades", default="twitter15-not-oasis")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--replicas", type=int, default=40)
    ap.add_argument("--observe-minutes", type=int, action="append", default=None)
    ap.add_argument("--baseline", action="append", default=None)
    ap.add_argument("--dispersion", type=float, default=None, help="override the fit file's dispersion")
    ap.add_argument("--workers", type=int, default=1, help="processes (results do not depend on it)")
    ap.add_argument("--out", default="runs/forecast-bench")
    ap.add_argument("--json", default=None, help="also write the summary here")
    a = ap.parse_args()
    load0 = _load()
    cpu0 = time.process_time()
    t = [time.perf_counter()]
    fit = fc.load_fit(a.fit)
    if a.dispersion is not None:
        from dataclasses import replace

        fit = replace(fit, dispersion=a.dispersion)
    t.append(time.perf_counter())
    data = fc.load_cascades(a.cascades, a.limit)
    t.append(time.perf_counter())
    kw = {"baselines": a.baseline} if a.baseline else {}
    res = fc.forecast(
        fit, data, observe_minutes=a.observe_minutes or [10], replicas=a.replicas, workers=a.workers, **kw
    )
    t.append(time.perf_counter())
    fc.write_forecast(res, a.out, force=True)
    t.append(time.perf_counter())
    nodes = data.table.num_rows
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cpus, Python {platform.python_version()}")
    print(f"load average before: {load0}   after: {_load()}")
    print("| stage | s |\n|---|---|")
    for name, i in (("load fit", 1), ("load + check cascades", 2), ("forecast + score", 3), ("write", 4)):
        print(f"| {name} | {t[i] - t[i - 1]:.1f} |")
    cpu = time.process_time() - cpu0
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_workers = kids.ru_utime + kids.ru_stime
    print(
        f"| total ({len(data)} cascades, {nodes} nodes, {a.replicas} replicas, {a.workers} workers) "
        f"| {t[-1] - t[0]:.1f} |"
    )
    print(f"| CPU time of this process (user + sys) | {cpu:.1f} |")
    print(f"| CPU time of its worker processes (user + sys) | {cpu_workers:.1f} |")
    summary = {
        "cascades": len(data),
        "nodes": nodes,
        "replicas": a.replicas,
        "workers": a.workers,
        "seconds": t[-1] - t[0],
        "cpu_s": cpu,
        "cpu_workers_s": cpu_workers,
        "stages": [t[i] - t[i - 1] for i in range(1, len(t))],
        "load_before": load0,
        "load_after": _load(),
        "transfer": res.results["transfer"],
        "by_observe_minutes": res.results["by_observe_minutes"],
        "fit": res.results["fit"],
    }
    for m, s in res.results["by_observe_minutes"].items():
        f = s["forecast"]
        print(f"\nm = {m}, n = {s['n']}")
        print(
            "| model | NRMSE scale / depth / breadth | MSLE | APE q50 / q90 | CRPS log2 | cover 50 / 80 / 90 (scale) |"
        )
        print("|---|---|---|---|---|---|")
        for model in [k for k in s if isinstance(s[k], dict) and "msle" in s[k]]:
            e = s[model]
            nr = " / ".join("-" if e["nrmse"][k] is None else f"{e['nrmse'][k]['estimate']:.3f}" for k in e["nrmse"])
            cov = e.get("coverage")
            cv = " / ".join(f"{cov[lv]['scale']['estimate']:.3f}" for lv in ("50", "80", "90")) if cov else "-"
            print(
                f"| {model} | {nr} | {e['msle']['estimate']:.3f} | {e['ape']['q50']['estimate']:.3f} / "
                f"{e['ape']['q90']['estimate']:.3f} | {e['crps_log']['estimate']:.3f} | {cv} |"
            )
        cov = f["coverage"]
        for lv in ("50", "80", "90"):
            print(
                f"coverage {lv}%: "
                + ", ".join(f"{k} {v['estimate']:.3f} [{v['low']:.3f}, {v['high']:.3f}]" for k, v in cov[lv].items())
            )
        if "coverage_undispersed" in f:
            print(
                "coverage without the dispersion: "
                + ", ".join(
                    f"{lv}% {v['estimate']:.3f} [{v['low']:.3f}, {v['high']:.3f}]"
                    for lv, v in f["coverage_undispersed"].items()
                )
            )
        print("calibration (nominal, observed):", s["calibration"]["forecast"])
    print("transfer warning:", res.results["transfer"]["warning"])
    if a.json:
        Path(a.json).write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
