#!/usr/bin/env bash
# Validates what `servebench k8s` writes, without a cluster:
#  1. renders manifests for several option sets with the built servebench (from plans made by
#     `servebench plan`), as YAML and as JSON;
#  2. validates every Kubernetes document against the API's JSON schemas, strictly (unknown
#     fields fail), for each version in K8S_VERSIONS, with PyPI's kubernetes-validate;
#  3. reads every YAML file back with PyYAML and compares it with the JSON of the same
#     documents (the YAML writer's quoting, checked by a YAML 1.1 reader);
#  4. runs the two shell scripts embedded in the manifests (the merge Job's wait loop, the
#     upload wrapper) under /bin/sh with stand-ins for servebench and curl.
#
# Usage: scripts/validate-k8s.sh [OUT_DIR]
#   SERVEBENCH_BIN   the servebench binary (default: cargo build, then target/debug/servebench)
#   SERVEBENCH_CACHE cache folder (default <repo>/.cache); the venv is its k8s-validate-venv
#   K8S_VERSIONS     Kubernetes versions to validate against (default "1.30.0 1.37.0")
# Needs python3 (with venv) and, the first time, PyPI.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache=${SERVEBENCH_CACHE:-$repo/.cache}
venv="$cache/k8s-validate-venv"
versions="${K8S_VERSIONS:-1.30.0 1.37.0}"
out="${1:-$(mktemp -d)}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

if ! "$venv/bin/python" -c 'import kubernetes_validate, yaml' 2>/dev/null; then
    mkdir -p "$cache"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "kubernetes-validate==1.37.0" "pyyaml==6.0.3"
fi

bin="${SERVEBENCH_BIN:-}"
if [ -z "$bin" ]; then
    (cd "$repo" && cargo build --quiet --bin servebench)
    bin="$repo/target/debug/servebench"
fi

# Plans: made without contacting the target (planning resolves options only).
url=http://vllm.serving.svc.cluster.local:8000/v1
"$bin" plan --url "$url" --rate 12.5 --duration 10m --shards 4 -o "$out/plan-4.json" 2>/dev/null
"$bin" plan --url "$url" --concurrency 64 --requests 2000 --shards 8 -o "$out/plan-8.json" 2>/dev/null
"$bin" plan --url "$url" --rate 400 --duration 10m --shards 2 -o "$out/plan-2.json" 2>/dev/null
"$bin" plan --url "$url" --rate 400 --duration 10m --shards 16 -o "$out/plan-16.json" 2>/dev/null
"$bin" plan --url "$url" --rate 4000 --duration 10m --shards 1000 -o "$out/plan-1000.json" 2>/dev/null

render() { # NAME PLAN [k8s options...]: NAME.yaml and NAME.json
    local name=$1 plan=$2
    shift 2
    "$bin" k8s --plan "$plan" "$@" -o "$out/$name.yaml" 2>/dev/null
    "$bin" k8s --plan "$plan" "$@" --json -o "$out/$name.json" 2>/dev/null
}
render k8s-default "$out/plan-4.json" --image ghcr.io/example/servebench:0.1.0 --name bench
# Every option, with values a careless YAML writer would get wrong (YAML 1.1 booleans,
# numbers, dates, indicators, comments, newlines).
render k8s-full "$out/plan-8.json" --image registry.local:5000/sb@sha256:0123abcd \
    --name llama-70b-sweep --namespace load-test --wait-image busybox:1.36 \
    --claim shared-results --cpu-request 2 --memory-request 2Gi --cpu-limit 4 --memory-limit 4Gi \
    --env RUST_LOG=info --env NOTE=yes --env SHARD_TAG='s-$(JOB_COMPLETION_INDEX)' \
    --env A1=on --env A2='on: off # no' --env A3=1e3 --env A4=0o17 --env A5=2001-12-14 \
    --env A6='- x' --env A7=' lead' --env A8='trail ' --env A9=~ --env B1='*a' --env B2='{a' \
    --env B3="$(printf 'line1\nline2')" --env B4="$(printf 'keep\n\nx')" --env B5='"q" and '"'s'" \
    --env B6=1:20 --env B7=.inf --env B8=null --env B9='' \
    --secret-env OPENAI_API_KEY=llm-keys:openai --secret-env GATEWAY_TOKEN=gateway:token \
    --run-arg=--header --run-arg='Authorization: Bearer $(GATEWAY_TOKEN)' --run-arg=--note --run-arg=1.0 \
    --node-selector node.kubernetes.io/pool=loadgen --node-selector kubernetes.io/arch=amd64 \
    --active-deadline-s 7200
render k8s-class "$out/plan-2.json" --image servebench:dev --name with-class \
    --volume-size 50Gi --storage-class nfs-client
render k8s-upload "$out/plan-16.json" --image servebench:dev --name upload-run \
    --upload-url https://objects.example/results/upload-run/ \
    --secret-env SERVEBENCH_UPLOAD_AUTHORIZATION=upload-auth:header
render k8s-widest "$out/plan-1000.json" --image servebench:dev \
    --name "$(printf 'a%.0s' $(seq 52))"

shopt -s nullglob
manifests=("$out"/k8s-*.yaml)
if [ "${#manifests[@]}" -ne 5 ]; then
    echo "expected 5 rendered manifest files in $out, found ${#manifests[@]}" >&2
    exit 1
fi

# 2. Schemas. kubernetes-validate exits 0 when it has no schema for a kind (it only warns),
# so any WARN line fails too.
flags=()
for v in $versions; do flags+=(-k "$v"); done
log="$out/kubernetes-validate.log"
status=0
"$venv/bin/kubernetes-validate" --strict --quiet "${flags[@]}" "${manifests[@]}" >"$log" 2>&1 || status=$?
cat "$log"
if [ "$status" -ne 0 ] || grep -q '^WARN' "$log"; then
    echo "schema validation failed" >&2
    exit 1
fi
echo "schemas: ${#manifests[@]} files valid for Kubernetes $versions (strict)"

# 3. Round trip: every YAML file must read back equal to the JSON of the same documents.
"$venv/bin/python" - "$out" <<'PY'
import glob, json, os, sys
import yaml

failed = 0
files = sorted(glob.glob(os.path.join(sys.argv[1], "k8s-*.yaml")))
for path in files:
    with open(path, encoding="utf-8") as f:
        got = list(yaml.safe_load_all(f.read()))
    with open(path[: -len(".yaml")] + ".json", encoding="utf-8") as f:
        want = json.load(f)
    if got != want:
        failed += 1
        print(f"round trip differs: {path}", file=sys.stderr)
        for i, (g, w) in enumerate(zip(got, want)):
            if g != w:
                print(f"  document {i}:\n    yaml: {g!r:.400}\n    json: {w!r:.400}", file=sys.stderr)
        if len(got) != len(want):
            print(f"  {len(got)} documents read, {len(want)} written", file=sys.stderr)
if not files:
    failed = 1
# The awkward values must really be in there (a check that cannot pass vacuously).
full = json.load(open(os.path.join(sys.argv[1], "k8s-full.json")))
env = {e["name"]: e.get("value") for d in full if d["kind"] == "Job" for c in d["spec"]["template"]["spec"]["containers"] for e in c.get("env", [])}
for k, v in {"A1": "on", "A2": "on: off # no", "B3": "line1\nline2", "B8": "null", "B9": ""}.items():
    if env.get(k) != v:
        failed += 1
        print(f"k8s-full: env {k} is {env.get(k)!r}, expected {v!r}", file=sys.stderr)
print(f"round trip: {len(files) - min(failed, len(files))} of {len(files)} files read back equal")
sys.exit(1 if failed else 0)
PY

# 4. The embedded scripts, taken from the rendered JSON and run as the pods would run them.
"$venv/bin/python" - "$out" <<'PY'
import json, os, subprocess, sys, tempfile

out = sys.argv[1]
def job(path, suffix):
    docs = json.load(open(os.path.join(out, path)))
    return next(d for d in docs if d["kind"] == "Job" and d["metadata"]["name"].endswith(suffix))

def run(argv, env=None):
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)

failures = []
def check(what, ok, proc):
    if not ok:
        failures.append(f"{what}: rc={proc.returncode} stdout={proc.stdout!r} stderr={proc.stderr!r}")

# Merge wait loop: done at once when every shard has shard.json (written last); with one
# missing and no
# time left it fails and names the missing shard.
wait = job("k8s-default.json", "-merge")["spec"]["template"]["spec"]["initContainers"][0]
script = wait["command"][2]
with tempfile.TemporaryDirectory(dir=out) as tmp:
    for i in range(4):
        os.makedirs(f"{tmp}/shard-{i}")
        # A run.json exists from a shard's start (status running): it must not count.
        open(f"{tmp}/shard-{i}/run.json", "w").write("{}")
        if i != 2:
            open(f"{tmp}/shard-{i}/shard.json", "w").write("{}")
    p = run(["/bin/sh", "-c", script, "wait-for-shards", "4", "0", tmp])
    check("wait loop with a shard missing", p.returncode == 1 and "shard.json: 2" in p.stderr, p)
    open(f"{tmp}/shard-2/shard.json", "w").write("{}")
    p = run(["/bin/sh", "-c", script, "wait-for-shards", "4", "0", tmp])
    check("wait loop with all shards done", p.returncode == 0, p)

# Upload wrapper: runs the given command, archives the shard folder, PUTs it with curl, and
# keeps servebench's exit status; without shard.json it uploads nothing and fails.
shard = job("k8s-upload.json", "-shards")["spec"]["template"]["spec"]["containers"][0]
script = shard["command"][2]
with tempfile.TemporaryDirectory(dir=out) as tmp:
    bin_dir, put_dir = f"{tmp}/bin", f"{tmp}/put"
    os.makedirs(bin_dir); os.makedirs(put_dir)
    with open(f"{bin_dir}/curl", "w") as f:
        f.write('#!/bin/sh\nfile=""; url=""; auth=""\n'
                'while [ $# -gt 0 ]; do case "$1" in --upload-file) file="$2"; shift;; '
                '-H) auth="$2"; shift;; http*) url="$1";; esac; shift; done\n'
                'cp "$file" "$PUT_DIR/${url##*/}" && echo "$url|$auth" >> "$PUT_DIR/log"\n')
    with open(f"{bin_dir}/fake-servebench", "w") as f:
        f.write('#!/bin/sh\nout=""\nwhile [ $# -gt 0 ]; do [ "$1" = --out ] && out="$2"; shift; done\n'
                'mkdir -p "$out" && echo "{}" > "$out/run.json" && echo "{}" > "$out/shard.json" && exit "${FAKE_STATUS:-0}"\n')
    for name in ("curl", "fake-servebench"):
        os.chmod(f"{bin_dir}/{name}", 0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", PUT_DIR=put_dir,
               JOB_COMPLETION_INDEX="3",
               SERVEBENCH_UPLOAD_URL="https://objects.example/results/run-1/",
               SERVEBENCH_UPLOAD_AUTHORIZATION="Bearer t0k")
    shard_dir = f"{tmp}/run/shard-3"
    p = run(["/bin/sh", "-c", script, "shard", shard_dir, "fake-servebench", "run", "--out", shard_dir],
            env=dict(env, FAKE_STATUS="3"))
    log = open(f"{put_dir}/log").read() if os.path.exists(f"{put_dir}/log") else ""
    check("upload keeps the run's exit status", p.returncode == 3, p)
    check("upload PUTs the archive with the header",
          log == "https://objects.example/results/run-1/shard-3.tar.gz|Authorization: Bearer t0k\n", p)
    listing = run(["tar", "-tzf", f"{put_dir}/shard-3.tar.gz"])
    check("archive holds the shard folder", "shard-3/run.json" in listing.stdout, listing)
    p = run(["/bin/sh", "-c", script, "shard", f"{tmp}/run/shard-9", "true"], env=env)
    check("no shard.json: nothing uploaded, failure", p.returncode == 1 and "nothing to upload" in p.stderr, p)

for f in failures:
    print("script check failed:", f, file=sys.stderr)
print(f"scripts: {'all checks passed' if not failures else f'{len(failures)} checks failed'}")
sys.exit(1 if failures else 0)
PY
echo "k8s manifests: all checks passed ($out)"
