#!/bin/bash
# Runs every libFuzzer target of a fuzz build on its seed corpus (`make fuzz`):
#   scripts/run-fuzzers.sh BUILD_FUZZ RUNS PROFILE_SECONDS
# fuzz_config, fuzz_cluster, fuzz_experiment and fuzz_chakra run RUNS executions each; fuzz_profile (whose
# fits are slow) runs PROFILE_SECONDS. A finding stops the script with the fuzzer's exit code and
# leaves the crashing input as BUILD_FUZZ/crash-*. Each target's last status line (executions,
# coverage) is printed at the end.
set -euo pipefail
build=${1:?build folder}
runs=${2:-1000000}
profile_seconds=${3:-300}
src=$(cd "$(dirname "$0")/.." && pwd)

run() {  # name corpus max_len limit...
  local name=$1 corpus=$2 max_len=$3
  shift 3
  mkdir -p "$build/$corpus"
  cp "$src/tests/fuzz/$corpus"/* "$build/$corpus/"
  echo "== $name"
  "$build/tests/fuzz/$name" "$@" -max_len="$max_len" -artifact_prefix="$build/" -print_final_stats=1 \
    "$build/$corpus" 2> "$build/$name.log" || { tail -40 "$build/$name.log"; exit 1; }
  grep -E "^#[0-9]+.*DONE|stat::number_of_executed_units" "$build/$name.log" | tail -2
}

run fuzz_config corpus 512 -runs="$runs"
run fuzz_cluster cluster_corpus 1024 -runs="$runs"
run fuzz_experiment experiment_corpus 1024 -runs="$runs"
run fuzz_chakra chakra_corpus 2048 -runs="$runs"
run fuzz_profile profile_corpus 4096 -max_total_time="$profile_seconds"
