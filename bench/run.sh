#!/usr/bin/env bash
# Runs every benchmark of a build: the executables named bench_* in BUILD_DIR/bench/.
# Usage: bench/run.sh BUILD_DIR   (`make bench` builds and then calls this)
set -euo pipefail
if [[ $# -ne 1 ]]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
bench_dir="$1/bench"
if [[ ! -d "$bench_dir" ]]; then
  echo "$0: no $bench_dir; build first (cmake --build $1)" >&2
  exit 1
fi
shopt -s nullglob
found=0
status=0
for exe in "$bench_dir"/bench_*; do
  [[ -f "$exe" && -x "$exe" ]] || continue
  found=1
  echo "== $(basename "$exe")"
  "$exe" || { echo "$0: $(basename "$exe") failed" >&2; status=1; }
  echo
done
if [[ $found -eq 0 ]]; then
  echo "$0: no bench_* executables in $bench_dir" >&2
  exit 1
fi
exit $status
