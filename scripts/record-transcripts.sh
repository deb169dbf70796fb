#!/usr/bin/env bash
# Records raw responses of the real llama.cpp server into tests/fixtures/llama.cpp-<version>/,
# for the parser tests. Usage: scripts/record-transcripts.sh [BASE_URL]
# (default: starts the server with scripts/real-server.sh).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
url=${1:-$("$repo/scripts/real-server.sh" start | tail -1)}
root=${url%/v1}
out=$repo/tests/fixtures/llama.cpp-11434
mkdir -p "$out"
post() { curl -sS -N -i -H 'Content-Type: application/json' -d "$2" "$1"; }
post "$url/chat/completions" '{"messages":[{"role":"user","content":"Write one sentence about the sea."}],"max_tokens":24,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true,"temperature":0}' >"$out/chat_stream_usage.http"
post "$url/completions" '{"prompt":"The capital of France is","max_tokens":24,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true,"temperature":0}' >"$out/completions_stream_usage.http"
post "$url/chat/completions" '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":8,"stream":true,"temperature":0}' >"$out/chat_stream_no_usage.http"
post "$url/chat/completions" '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":8,"stream":false,"temperature":0}' >"$out/chat_non_stream.http"
long=$(python3 -c 'print(" word" * 9000)')
post "$url/chat/completions" "{\"messages\":[{\"role\":\"user\",\"content\":\"$long\"}],\"max_tokens\":8,\"stream\":true}" >"$out/error_context_exceeded.http"
curl -sS "$root/metrics" >"$out/metrics.txt"
echo "recorded into $out" >&2
