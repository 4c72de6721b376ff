#!/usr/bin/env bash
# Builds clustersim-calibrate on a GPU machine that has CUDA, CMake and ninja but no internet and no
# C++ packages, runs `clustersim-calibrate --quick`, and prints the bf16 8192^3 GEMM rate.
#
#   1. Here, on a machine with the project's build dependencies installed (Boost, nlohmann/json,
#      CLI11, Eigen), once per dependency change:
#          scripts/device-calibrate.sh prepare
#      copies the header-only dependencies that clustersim-calibrate needs into build-device-deps/
#      (ignored by git, like every /build*/ folder; about 20 MB) with small CMake package files.
#   2. There, from the repository root, with build-device-deps/ carried along:
#          OUT=/some/folder scripts/device-calibrate.sh        (the same as `... run`)
#      configures with CLUSTERSIM_BUILD_TESTS=OFF, builds only clustersim-calibrate (sm_90), runs
#      `clustersim-calibrate --quick --out $OUT/h200-sxm.json`, refits the result, and prints a
#      summary. NCCL comes from PyTorch's pip wheel (nvidia-nccl-*): python3 finds its include/ and
#      lib/; NCCL_INCLUDE_DIR and NCCL_LIBRARY in the environment override that.
#
# $OUT receives h200-sxm.json, h200-sxm-refit.json, build.log and calibrate.log (default:
# build-device/out). The GPU's settings are only read (nvidia-smi --query-gpu), never changed.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
DEPS=$ROOT/build-device-deps

prepare() {
  # The headers the host sources of clustersim-calibrate's targets include (core, hardware,
  # calibration, the probe, the app), as g++ -M lists them, plus whole folders whose contents
  # depend on the compiler (Boost's configuration, MPL's preprocessed headers, ...).
  local cxx=${CXX:-g++}
  local list
  list=$(mktemp)
  for f in core/*.cpp hardware/*.cpp topology/*.cpp calibration/*.cpp calibration/probe/*.cpp apps/calibrate/*.cpp sim/*/*.cpp; do
    "$cxx" -std=c++20 -M -I. -I/usr/local/cuda/include -I/usr/include/eigen3 "$f"
  done | tr ' \\' '\n\n' | grep -E '^/usr/include/(boost|eigen3|nlohmann|CLI)/' | sort -u >"$list"
  rm -rf "$DEPS"
  mkdir -p "$DEPS/include"
  while read -r header; do
    local rel=${header#/usr/include/}
    mkdir -p "$DEPS/include/$(dirname "$rel")"
    cp "$header" "$DEPS/include/$rel"
  done <"$list"
  rm -f "$list"
  for dir in boost/config boost/detail boost/mpl boost/preprocessor boost/predef boost/type_traits nlohmann CLI eigen3/Eigen; do
    mkdir -p "$DEPS/include/$(dirname "$dir")"
    cp -r "/usr/include/$dir" "$DEPS/include/$(dirname "$dir")/"
  done
  cp /usr/include/boost/version.hpp "$DEPS/include/boost/"

  # Package files for find_package(<name> <version> REQUIRED) in config mode: an imported
  # interface target on the carried headers. Boost goes through CMake's FindBoost instead.
  local json_version cli_version eigen_version
  json_version=$(define_value /usr/include/nlohmann NLOHMANN_JSON_VERSION_MAJOR).$(define_value /usr/include/nlohmann NLOHMANN_JSON_VERSION_MINOR).$(define_value /usr/include/nlohmann NLOHMANN_JSON_VERSION_PATCH)
  cli_version=$(sed -n 's/^#define CLI11_VERSION "\(.*\)".*/\1/p' /usr/include/CLI/Version.hpp)
  eigen_version=$(define_value /usr/include/eigen3/Eigen EIGEN_WORLD_VERSION).$(define_value /usr/include/eigen3/Eigen EIGEN_MAJOR_VERSION).$(define_value /usr/include/eigen3/Eigen EIGEN_MINOR_VERSION)
  package nlohmann_json nlohmann_json::nlohmann_json "$json_version" include
  package CLI11 CLI11::CLI11 "$cli_version" include
  package Eigen3 Eigen3::Eigen "$eigen_version" include/eigen3
  echo "prepared $DEPS: $(du -sh "$DEPS" | cut -f1) (nlohmann_json $json_version, CLI11 $cli_version, Eigen $eigen_version, Boost headers)"
  echo "carry build-device-deps and run: scripts/device-calibrate.sh"
}

# define_value FOLDER MACRO: the number a header under FOLDER #defines MACRO to.
define_value() {
  grep -rhE "^#define $2 +[0-9]+" "$1" | head -n 1 | awk '{print $3}'
}

# package NAME TARGET VERSION INCLUDE_SUBDIR
package() {
  local dir=$DEPS/cmake/$1
  mkdir -p "$dir"
  cat >"$dir/$1Config.cmake" <<CMAKE
# Written by scripts/device-calibrate.sh prepare: the carried headers of $1 $3.
if(NOT TARGET $2)
  add_library($2 INTERFACE IMPORTED)
  set_target_properties($2 PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "\${CMAKE_CURRENT_LIST_DIR}/../../$4")
endif()
set($1_FOUND TRUE)
CMAKE
  cat >"$dir/$1ConfigVersion.cmake" <<CMAKE
set(PACKAGE_VERSION "$3")
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
CMAKE
}

# NCCL's include/ and lib/libnccl.so* from the pip wheel that PyTorch depends on.
find_nccl() {
  if [[ -n "${NCCL_INCLUDE_DIR:-}" && -n "${NCCL_LIBRARY:-}" ]]; then
    echo "$NCCL_INCLUDE_DIR $NCCL_LIBRARY"
    return
  fi
  python3 - <<'PY'
import glob, importlib, os, sys
for name in ("nvidia.nccl", "nvidia"):
    try:
        mod = importlib.import_module(name)
    except ImportError:
        continue
    for root in list(getattr(mod, "__path__", [])):
        headers = sorted(glob.glob(os.path.join(root, "**", "nccl.h"), recursive=True))
        libs = sorted(glob.glob(os.path.join(root, "**", "libnccl.so*"), recursive=True))
        if headers and libs:
            print(os.path.dirname(headers[0]), libs[0])
            sys.exit(0)
sys.exit("no NCCL in python3's nvidia packages (pip nvidia-nccl-*); set NCCL_INCLUDE_DIR and NCCL_LIBRARY")
PY
}

run() {
  local out=${OUT:-$ROOT/build-device/out}
  local build=$ROOT/build-device
  mkdir -p "$out"
  [[ -d "$DEPS/include" ]] || { echo "device-calibrate: $DEPS is missing: run 'scripts/device-calibrate.sh prepare' where the dependencies are installed, and carry it" >&2; exit 2; }

  echo "== machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv || true
  local nccl_inc nccl_lib
  read -r nccl_inc nccl_lib < <(find_nccl) || true
  [[ -n "${nccl_lib:-}" ]] || { echo "device-calibrate: NCCL not found" >&2; exit 1; }
  echo "NCCL: $nccl_inc $nccl_lib"
  local cuda=${CUDA_HOME:-/usr/local/cuda}

  echo "== build (log: $out/build.log)"
  {
    cmake -S "$ROOT" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCLUSTERSIM_BUILD_TESTS=OFF \
      -DCMAKE_CUDA_ARCHITECTURES=90 -DCUDAToolkit_ROOT="$cuda" -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" \
      -DBoost_NO_BOOST_CMAKE=ON -DBoost_NO_SYSTEM_PATHS=ON -DBoost_INCLUDE_DIR="$DEPS/include" \
      -Dnlohmann_json_DIR="$DEPS/cmake/nlohmann_json" -DCLI11_DIR="$DEPS/cmake/CLI11" -DEigen3_DIR="$DEPS/cmake/Eigen3" \
      -DNCCL_INCLUDE_DIR="$nccl_inc" -DNCCL_LIBRARY="$nccl_lib"
    cmake --build "$build" --target clustersim-calibrate -j "$(nproc)"
  } >"$out/build.log" 2>&1 || { tail -n 40 "$out/build.log"; echo "device-calibrate: the build failed" >&2; exit 1; }
  local bin=$build/apps/clustersim-calibrate
  export LD_LIBRARY_PATH="$(dirname "$nccl_lib"):$cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  [[ -d /usr/local/nvidia/lib64 ]] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:/usr/local/nvidia/lib64"
  "$bin" --version
  if "$bin" --version | grep -q "probe: not built"; then
    echo "device-calibrate: clustersim-calibrate was built without the probe (see $out/build.log)" >&2
    exit 1
  fi

  echo "== clustersim-calibrate --quick (log: $out/calibrate.log)"
  local start=$SECONDS rc=0
  "$bin" --quick --out "$out/h200-sxm.json" 2>&1 | tee "$out/calibrate.log" || rc=$?  # pipefail: the run's status
  echo "clustersim-calibrate --quick: exit $rc after $((SECONDS - start)) s (budget: 180 s)"
  nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv || true
  [[ -f "$out/h200-sxm.json" ]] || exit 1
  "$bin" --refit "$out/h200-sxm.json" --out "$out/h200-sxm-refit.json"

  echo "== summary"
  python3 - "$out/h200-sxm.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
pts = p["points"]
for section, points in pts.items():
    ok = sum(1 for x in points if x.get("status", "ok") == "ok")
    print(f"{section:12s} {len(points):4d} points, {len(points) - ok} failed")
mamf = [g for g in pts["gemm"] if g["source"] == "mamf" and g["status"] == "ok"]
if mamf:
    g = mamf[0]
    t = g["timing"]
    print(f"bf16 8192^3: {g['flops_per_s'] / 1e12:.1f} TFLOP/s (median {t['median_s'] * 1e3:.3f} ms, spread {100 * t['spread']:.2f}%, "
          f"{t['samples']} samples, {t['discarded_throttled']} throttled); "
          "lead: 769-798 TFLOP/s through PyTorch on this kind of machine (KINDS.md)")
else:
    print("bf16 8192^3: not measured")
m = p["models"]
if m.get("memory"):
    print(f"memory model: {m['memory']['bandwidth_bytes_per_s'] / 1e12:.2f} TB/s, t0 {m['memory']['t0_s'] * 1e6:.2f} us")
if "launch_overhead_s" in m:
    print(f"launch overhead: {m['launch_overhead_s'] * 1e6:.2f} us")
print("complete:", p["provenance"]["complete"], "| notes:", p["provenance"]["notes"] or "-")
PY
  exit "$rc"
}

case "${1:-run}" in
  prepare) prepare ;;
  run) run ;;
  *) echo "usage: scripts/device-calibrate.sh [prepare|run]" >&2; exit 2 ;;
esac
