"""Write the Weibo (CED) cascades of the chronological `socium forecast` check as cascade-format Parquet files.

Train: a seeded 600 of the CED cascades posted before 2013-01-01 (seed 1, as
``propagation_cross_platform.py``'s Weibo fit); score: a seeded 200 of those posted 2013-01-01 .. 2013-06-30
with at least 10 reshares in their first hour (seed 0, its Weibo targets). Nothing posted on or after
2013-07-01 is read. Then (docs/results.md, Weibo section):

    PYTHONPATH=src python benchmarks/ced_forecast_files.py OUT
    socium fit propagation --train OUT/ced_train2012.parquet --bootstrap 0 --out OUT/fit_ced2012.json
    socium forecast --fit OUT/fit_ced2012.json --cascades OUT/ced_2013h1.parquet --observe-minutes 60 \\
        --horizon-minutes 1440 --out OUT/forecast
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from socium.experiments.propagation.data.cascade_format import write_parquet
from socium.experiments.propagation.data.ced import cascade_rows, read_ced_cascades


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "runs/ced-forecast")
    out.mkdir(parents=True, exist_ok=True)
    cascades, _ = read_ced_cascades()
    chrono = datetime(2013, 1, 1, tzinfo=timezone.utc).timestamp()
    early = [c for c in cascades if c.posted_at < chrono]
    late = [c for c in cascades if c.posted_at >= chrono and sum(n[3] <= 3600 for n in c.nodes) - 1 >= 10]
    train = [early[i] for i in sorted(np.random.default_rng(1).choice(len(early), 600, replace=False).tolist())]
    score = [late[i] for i in sorted(np.random.default_rng(0).choice(len(late), 200, replace=False).tolist())]
    write_parquet(cascade_rows(train), out / "ced_train2012.parquet")
    write_parquet(cascade_rows(score), out / "ced_2013h1.parquet")
    print(f"train {len(train)} of {len(early)}, score {len(score)} of {len(late)} -> {out}")


if __name__ == "__main__":
    main()
