#!/usr/bin/env bash
# Soak: servebench against its own simulator for a long time at a high rate, sampling the
# client's resident memory every 10 s. A benchmark, not a test (CI does not run it).
#
#   scripts/soak.sh [DURATION (default 30m)] [RATE req/s (default 200)] [OUTPUT_TOKENS (default 64)]
#
# Writes soak-<date>/rss.csv (t_s,rss_mib) and the run folder, and prints the RSS at the
# start and the end and its growth per minute. Build first: cargo build --release.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-30m}
rate=${2:-200}
tokens=${3:-64}
bin=target/release/servebench
[[ -x $bin ]] || { echo "build first: cargo build --release" >&2; exit 2; }
out=soak-$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$out"
"$bin" sim --preset fast --port 0 >"$out/sim.url" 2>"$out/sim.log" &
sim=$!
trap 'kill $sim 2>/dev/null || true' EXIT
for _ in $(seq 100); do [[ -s $out/sim.url ]] && break; sleep 0.1; done
url=$(head -1 "$out/sim.url")
"$bin" run --url "$url" --rate "$rate" --duration "$duration" --warmup none --no-fluidity \
  --input-tokens 64 --output-tokens "$tokens" --quiet --out "$out/run" >"$out/run.txt" 2>&1 &
run=$!
echo "t_s,rss_mib" >"$out/rss.csv"
t=0
while kill -0 $run 2>/dev/null; do
  rss=$(awk '/VmRSS/ {print $2/1024}' /proc/$run/status 2>/dev/null || echo "")
  [[ -n $rss ]] && echo "$t,$rss" >>"$out/rss.csv"
  sleep 10
  t=$((t + 10))
done
wait $run || true
python3 - "$out/rss.csv" <<'PY'
import csv, sys
rows = [(float(r["t_s"]), float(r["rss_mib"])) for r in csv.DictReader(open(sys.argv[1]))]
if len(rows) >= 2:
    (t0, r0), (t1, r1) = rows[0], rows[-1]
    print(f"RSS {r0:.1f} MiB at {t0:.0f} s -> {r1:.1f} MiB at {t1:.0f} s: {(r1 - r0) / max(t1 - t0, 1) * 60:.2f} MiB/min")
PY
echo "run folder: $out/run"
