#!/usr/bin/env bash
# Reads a run's Parquet files (requests.parquet, chunks.parquet, timeseries.parquet, from
# `servebench run --parquet` or `servebench export DIR --format parquet -o DIR`) with each of
# pandas (pyarrow), Polars and DuckDB that is installed, and checks what each reader sees
# against the run's own files: row counts, column types (instants as UTC timestamps), sums
# of TTFT and output tokens, failed requests, and chunks joined to their requests.
#
#   scripts/check-parquet.sh PARQUET_DIR [RUN_DIR]
#
# RUN_DIR (default PARQUET_DIR) holds requests.jsonl and run.json. $PYTHON picks the Python
# (default python3); `pip install pandas pyarrow polars duckdb` installs the readers. Exit
# status: 0 when every installed reader agreed, 1 when one did not, 2 when none is installed.
# The cargo tests need none of this: tests/parquet_export.rs reads the files with the Rust
# `parquet` crate.
set -euo pipefail
[[ $# -ge 1 && $# -le 2 ]] || { sed -n '2,15p' "$0" >&2; exit 2; }
python=${PYTHON:-python3}
exec "$python" - "$1" "${2:-$1}" <<'PY'
import json, math, os, sys

pq_dir, run_dir = sys.argv[1], sys.argv[2]
path = lambda name: os.path.join(pq_dir, name)

# The truth, from the run's own files.
records = [json.loads(l) for l in open(os.path.join(run_dir, "requests.jsonl")) if l.strip()]
report = json.load(open(os.path.join(run_dir, "run.json")))
truth = {
    "requests": len(records),
    "chunks": sum(len(r["chunks"]) + len(r.get("reasoning_chunks", [])) for r in records),
    "seconds": len(report["timeseries"]),
    "ttft_sum": sum(r["ttft_ms"] for r in records if r.get("ttft_ms") is not None),
    "output_tokens": sum(r["output_tokens"] for r in records),
    "failed": sum(1 for r in records if r["outcome"] != "ok"),
    "first_sent_us": min(r["sent_at_us"] for r in records if r.get("sent_at_us") is not None),
}

def agree(reader, seen):
    bad = [k for k, v in truth.items() if not math.isclose(seen[k], v, rel_tol=1e-9, abs_tol=1e-6)]
    for k in bad:
        print(f"  {reader}: {k} = {seen[k]}, requests.jsonl/run.json say {truth[k]}")
    return not bad

def with_pandas():
    import pandas as pd
    req, chk, ts = (pd.read_parquet(path(f)) for f in ("requests.parquet", "chunks.parquet", "timeseries.parquet"))
    utc = ("datetime64[us, UTC]", "datetime64[ns, UTC]")  # pandas before 2.0 has only ns
    assert str(req["sent_at_us"].dtype) in utc, req["sent_at_us"].dtype
    assert str(chk["arrived_at_us"].dtype) in utc, chk["arrived_at_us"].dtype
    assert req["ttft_ms"].dtype == "float64" and chk["reasoning"].dtype == "bool"
    per_request = chk.groupby("record_index").size().reindex(req["record_index"], fill_value=0)
    assert (per_request.to_numpy() == (req["chunks"] + req["reasoning_chunks"]).to_numpy()).all()
    return {
        "requests": len(req), "chunks": len(chk), "seconds": len(ts),
        "ttft_sum": float(req["ttft_ms"].sum()), "output_tokens": int(req["output_tokens"].sum()),
        "failed": int((req["outcome"] == "failed").sum()),
        "first_sent_us": int(req["sent_at_us"].min().value // 1000),
    }

def with_polars():
    import polars as pl
    req, chk, ts = (pl.read_parquet(path(f)) for f in ("requests.parquet", "chunks.parquet", "timeseries.parquet"))
    assert req.schema["sent_at_us"] == pl.Datetime("us", "UTC"), req.schema["sent_at_us"]
    assert ts.schema["at_us"] == pl.Datetime("us", "UTC") and req.schema["phase"] == pl.String
    joined = (chk.group_by("record_index").len()
              .join(req.select("record_index", (pl.col("chunks") + pl.col("reasoning_chunks")).alias("n")), on="record_index"))
    assert (joined["len"] == joined["n"]).all()
    return {
        "requests": req.height, "chunks": chk.height, "seconds": ts.height,
        "ttft_sum": req["ttft_ms"].sum(), "output_tokens": req["output_tokens"].sum(),
        "failed": req.filter(pl.col("outcome") == "failed").height,
        "first_sent_us": req.select(pl.col("sent_at_us").min().dt.epoch("us")).item(),
    }

def with_duckdb():
    import duckdb
    con = duckdb.connect()
    q = lambda sql: con.execute(sql.format(r=repr(path("requests.parquet")), c=repr(path("chunks.parquet")), t=repr(path("timeseries.parquet")))).fetchone()
    (kind,) = q("SELECT typeof(sent_at_us) FROM {r} LIMIT 1")
    assert kind == "TIMESTAMP WITH TIME ZONE", kind
    (mismatched,) = q("""SELECT count(*) FROM {r} r LEFT JOIN
        (SELECT record_index, count(*) AS n FROM {c} GROUP BY record_index) c USING (record_index)
        WHERE coalesce(c.n, 0) <> r.chunks + r.reasoning_chunks""")
    assert mismatched == 0, mismatched
    n, ttft, tokens, failed, first = q("""SELECT count(*), sum(ttft_ms), sum(output_tokens),
        count(*) FILTER (outcome = 'failed'), epoch_us(min(sent_at_us)) FROM {r}""")
    return {
        "requests": n, "chunks": q("SELECT count(*) FROM {c}")[0], "seconds": q("SELECT count(*) FROM {t}")[0],
        "ttft_sum": ttft, "output_tokens": tokens, "failed": failed, "first_sent_us": first,
    }

checked, failed = [], []
for name, module, check in (("pandas", "pandas", with_pandas), ("polars", "polars", with_polars), ("duckdb", "duckdb", with_duckdb)):
    try:
        version = __import__(module).__version__
    except ImportError:
        print(f"{name}: not installed, skipped")
        continue
    try:
        ok = agree(name, check())
    except Exception as e:  # a reader that cannot read the files, or a wrong type
        print(f"  {name}: {type(e).__name__}: {e}")
        ok = False
    print(f"{name} {version}: {'agrees with' if ok else 'DISAGREES with'} requests.jsonl and run.json")
    (checked if ok else failed).append(name)
print(f"{truth['requests']} requests, {truth['chunks']} chunks, {truth['seconds']} seconds; "
      f"readers that agreed: {', '.join(checked) or 'none'}")
sys.exit(1 if failed else 0 if checked else 2)
PY
