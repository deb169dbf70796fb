#!/usr/bin/env bash
# Records raw responses of the second real engine, mistral.rs, into
# tests/fixtures/mistralrs-0.8.1/, for the parser tests (as scripts/record-transcripts.sh does
# for llama.cpp). Usage: scripts/record-transcripts-mistralrs.sh [BASE_URL]
# (default: starts the server with scripts/mistralrs-server.sh).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
url=${1:-$("$repo/scripts/mistralrs-server.sh" start | tail -1)}
root=${url%/v1}
out=$repo/tests/fixtures/mistralrs-0.8.1
mkdir -p "$out"
post() { curl -sS -N -i -H 'Content-Type: application/json' -d "$2" "$1"; }
post "$url/chat/completions" '{"model":"default","messages":[{"role":"user","content":"Write one sentence about the sea."}],"max_tokens":24,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true,"temperature":0}' >"$out/chat_stream_usage.http"
post "$url/completions" '{"model":"default","prompt":"The capital of France is","max_tokens":24,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true,"temperature":0}' >"$out/completions_stream_usage.http"
post "$url/chat/completions" '{"model":"default","messages":[{"role":"user","content":"Hi"}],"max_tokens":8,"stream":true,"temperature":0}' >"$out/chat_stream_no_usage.http"
post "$url/chat/completions" '{"model":"default","messages":[{"role":"user","content":"Hi"}],"max_tokens":8,"stream":false,"temperature":0}' >"$out/chat_non_stream.http"
curl -sS -i "$url/models" >"$out/models.http"
curl -sS -i "$root/metrics" >"$out/metrics.http" || true
curl -sS "$root/api-doc/openapi.json" >"$out/openapi.json"
echo "recorded into $out" >&2
