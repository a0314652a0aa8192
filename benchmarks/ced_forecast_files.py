"""Write the Weibo (CED) cascades of the chronological `socium forecast` check as cascade-format Parquet files.

Train: a seeded 600 of the CED cascades posted before 2013-01-01 (seed 1, as
``propagation_cross_platform.py``'s Weibo fit); score: a seeded 200 of those posted 2013-01-01 .. 2013-06-30
with at least 10 reshares in their first hour (seed 0, its Weibo targets). Nothing posted on or after
2013-07-01 is read. Then (docs/results.md, Weibo section):

    PYTHONPATH=src python benchmarks/ced_forecast_files.py OUT
    socium fit propagation --train OUT/ced_train2012.parquet --bootstrap 0 --out OUT/fit_ced2012.json
    socium forecast --fit OUT/fit_ced2012.json --cascades OUT/ced_2013h1.parquet --observe-minutes 60 \\
        --horizon-minutes 1440 --out OUT/forecast

Calibrated intervals (docs/results.md, "Weibo: calibrated intervals"): ``--select-train`` draws the 600 from the
2012 cascades with at least 10 first-hour reshares (the scored cascades' own rule, judged on the first hour
only), ``--score-n 0`` scores every qualifying 2013 H1 cascade (826), and the fit's interval dispersion is chosen
by 5-fold CV on the 600 training cascades at the forecast's own window:

    PYTHONPATH=src python benchmarks/ced_forecast_files.py OUT --select-train --score-n 0
    socium fit propagation --train OUT/ced_train2012.parquet --bootstrap 0 --calibrate-intervals \
        --calibrate-observe-minutes 60 --calibrate-horizon-minutes 1440 --out OUT/fit_ced2012.json
    socium forecast --fit OUT/fit_ced2012.json --cascades OUT/ced_2013h1.parquet --observe-minutes 60 \
        --horizon-minutes 1440 --out OUT/forecast
"""

from __future__ import annotations

import argparse
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from socium.experiments.propagation.data.cascade_format import write_parquet
from socium.experiments.propagation.data.ced import CEDCascade, cascade_rows, read_ced_cascades


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", default="runs/ced-forecast")
    ap.add_argument("--select-train", action="store_true", help=">= 10 first-hour reshares for training too")
    ap.add_argument("--train-n", type=int, default=600)
    ap.add_argument("--score-n", type=int, default=200, help="0: every qualifying 2013 H1 cascade")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cascades, _ = read_ced_cascades()
    chrono = datetime(2013, 1, 1, tzinfo=timezone.utc).timestamp()

    def started(c: CEDCascade) -> bool:  # judged on the first hour only
        return sum(n[3] <= 3600 for n in c.nodes) - 1 >= 10

    early = [c for c in cascades if c.posted_at < chrono and (started(c) or not args.select_train)]
    late = [c for c in cascades if c.posted_at >= chrono and started(c)]
    n_train, n_score = args.train_n, args.score_n or len(late)
    train = [early[i] for i in sorted(np.random.default_rng(1).choice(len(early), n_train, replace=False).tolist())]
    score = [late[i] for i in sorted(np.random.default_rng(0).choice(len(late), n_score, replace=False).tolist())]
    write_parquet(cascade_rows(train), out / "ced_train2012.parquet")
    write_parquet(cascade_rows(score), out / "ced_2013h1.parquet")
    print(f"train {len(train)} of {len(early)}, score {len(score)} of {len(late)} -> {out}")


if __name__ == "__main__":
    main()
