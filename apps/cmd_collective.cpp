#include "apps/cmd_collective.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <iostream>
#include <set>

#include <nlohmann/json.hpp>

#include "apps/cli_common.h"
#include "core/output_file.h"
#include "core/errors.h"
#include "core/limits.h"
#include "core/unit_parse.h"
#include "calibration/profile_model.h"
#include "drivers/calibrated_protocol.h"
#include "drivers/config_paths.h"
#include "results/chrome_trace.h"
#include "sim/collectives/collective_simulator.h"

namespace cs::cli {
namespace {

// Errors in command-line values are reported against the option's name.
[[noreturn]] void option_error(const std::string& option, const std::string& message) {
  throw ConfigError("", option, message);
}

Bytes parse_size_option(const std::string& option, const std::string& text) {
  try {
    return parse_bytes(text);
  } catch (const UnitParseError& e) {
    option_error(option, e.what());
  }
}

std::vector<Bytes> sizes_of(const CollectiveOptions& o) {
  if (o.sweep.empty()) return {parse_size_option("--bytes", o.bytes)};
  const auto c1 = o.sweep.find(':');
  if (c1 == std::string::npos) option_error("--sweep", "expected MIN:MAX such as 8B:8GiB; got \"" + o.sweep + "\"");
  const auto c2 = o.sweep.find(':', c1 + 1);
  const Bytes lo = parse_size_option("--sweep", o.sweep.substr(0, c1));
  const Bytes hi = parse_size_option("--sweep", o.sweep.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1));
  std::int64_t factor = 2;
  if (c2 != std::string::npos) {
    // The whole rest must be the integer: "2x" and "3:4" are refused, not read as 2 and 3.
    const std::string text = o.sweep.substr(c2 + 1);
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), factor);
    if (ec != std::errc{} || end != text.data() + text.size() || factor < 2 || factor > (std::int64_t{1} << 40)) {
      option_error("--sweep", "the step factor must be an integer >= 2; got \"" + text + "\"");
    }
  }
  if (lo.value() <= 0 || hi < lo) option_error("--sweep", "expected 0 < MIN <= MAX; got \"" + o.sweep + "\"");
  std::vector<Bytes> sizes;
  for (std::int64_t s = lo.value(); s <= hi.value(); s *= factor) {
    sizes.push_back(Bytes{s});
    if (s > hi.value() / factor) break;
  }
  if (sizes.size() > 64) option_error("--sweep", "more than 64 sizes; use a larger step factor");
  return sizes;
}


std::string pad_left(const std::string& s, std::size_t w) {
  return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}

}  // namespace

void add_collective_command(CLI::App& app, CollectiveOptions& o) {
  auto* cmd = app.add_subcommand("collective", "Simulate one collective (or a size sweep) on a cluster");
  cmd->add_option("--cluster", o.cluster, "Cluster file, or the name of a bundled example (dgx-h100)")->required();
  cmd->add_option("--op", o.op, "all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce, send_recv");
  cmd->add_option("--bytes", o.bytes, "Size S as nccl-tests defines it, with a unit (1GiB)");
  cmd->add_option("--sweep", o.sweep, "Sizes MIN:MAX[:FACTOR], doubling by default (8B:8GiB)");
  cmd->add_option("--ranks", o.ranks, "Use the first N GPUs in rank order (default: all; send_recv: 2)")->check(CLI::Validator(
      [](std::string& v) { return v == "0" ? std::string("expected at least 1 rank; got 0 (leave --ranks out for every GPU)") : std::string(); }, "N>=1"));
  cmd->add_option("--algo", o.algo, "ring, tree, hd, direct, hierarchical, nvls, nvls_tree, collnet or auto");
  cmd->add_option("--trace", o.trace, "Write a Chrome/Perfetto trace of the run(s) to this file");
  cmd->add_option("--set", o.overrides, "Override a cluster value: /json/pointer=value (repeatable)");
  cmd->add_option("--profile", o.profile, "Take link efficiencies and step latencies from a calibration profile");
  cmd->add_flag("--json", o.json, "Print JSON instead of the table");
}

int run_collective_command(const CollectiveOptions& o) {
  // Validate everything before simulating or writing anything.
  const auto op = parse_collective_op(o.op);
  if (!op) option_error("--op", "unknown collective \"" + o.op + "\" (all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce, send_recv)");
  const auto algo = parse_collective_algorithm(o.algo);
  if (!algo) option_error("--algo", "unknown algorithm \"" + o.algo + "\" (ring, tree, hd, direct, hierarchical, nvls, nvls_tree, collnet, auto)");
  const std::vector<Bytes> sizes = sizes_of(o);
  coll::Machine machine = load_machine(o.cluster, o.overrides);
  const topo::Cluster& cluster = machine.cluster;
  if (!o.profile.empty()) {
    const std::string path = drv::resolve_profile(o.profile, "", "", "--profile");
    const cal::ProfileModel profile(cal::load_profile(path));
    drv::check_profile_gpu(profile, cluster, path, "", "--profile");
    machine.protocol = drv::calibrate_protocol(profile, machine.protocol).protocol;
  }
  const auto gpus = cluster.gpus();
  const bool send_recv = *op == CollectiveOp::kSendRecv;
  // --ranks not given: every GPU (send_recv: the first two).
  const std::size_t n = o.ranks == 0 ? (send_recv ? std::min<std::size_t>(2, gpus.size()) : gpus.size()) : o.ranks;
  if (n > gpus.size()) {
    option_error("--ranks", std::to_string(n) + " ranks but the cluster has " + std::to_string(gpus.size()) + " GPUs");
  }
  if (n < 2) option_error("--ranks", "a collective over " + std::to_string(n) + " rank moves no data; give 2 ranks or more");
  if (send_recv && n != 2) option_error("--ranks", "send_recv runs between 2 ranks; got " + std::to_string(n));
  coll::CollectiveSpec spec;
  spec.op = *op;
  spec.algorithm = *algo;
  spec.ranks.assign(gpus.begin(), gpus.begin() + static_cast<std::ptrdiff_t>(n));
  coll::CollectiveSimulator simulator(machine);
  const bool tracing = !o.trace.empty();
  if (*op == CollectiveOp::kAllToAll) {
    // Every rank's transfer to every other server's ranks: a connection each, before PXN
    // aggregates them by proxy (docs/network-model.md); a folded run opens one server's
    // (sim/collectives/network_fold.h). A run prepared in parts (static ECMP, no trace) holds one
    // sending server's connections at a time: its count bounds the time, against a limit of its
    // own. Beyond the limit the run would take many GB or many minutes: refuse before building
    // anything (docs/cli.md, "Limits").
    std::int64_t servers = 0;
    for (std::size_t r = 0, last = SIZE_MAX; r < n; ++r) {
      const auto server = static_cast<std::size_t>(cluster.node(gpus[r]).server);
      if (server != last) ++servers;
      last = server;
    }
    const bool in_parts = simulator.prepares_in_parts(spec, CollectiveAlgorithm::kDirect, tracing);
    const std::int64_t folded = in_parts ? 1 : simulator.fold_servers(spec, CollectiveAlgorithm::kDirect);
    const std::int64_t connections = static_cast<std::int64_t>(n) * (servers - 1) / std::max<std::int64_t>(folded, 1);
    const std::int64_t limit = in_parts ? limits().streamed_connections : limits().connections;
    if (connections > limit) {
      std::string why = "an all-to-all over " + std::to_string(n) + " ranks on " + std::to_string(servers) + " servers opens " +
                        std::to_string(connections) + " connections, more than the limit of " + std::to_string(limit);
      if (in_parts) why += " for a run prepared in parts";
      else if (tracing) why += " for a traced run, which holds them all";
      why += "; ";
      why += limit_hint(in_parts ? "streamed_connections" : "connections");
      option_error("--ranks", why);
    }
  }
  print_warnings(machine.warnings);  // once the input is known to be good

  results::ChromeTrace trace;
  if (tracing) {
    trace.name_process(1, "GPUs");
    for (std::size_t r = 0; r < spec.ranks.size(); ++r) {
      trace.name_track(1, static_cast<std::int64_t>(r), "rank " + std::to_string(r) + " " + cluster.node(spec.ranks[r]).name);
    }
    trace.name_process(2, "links");
  }
  const bool progress = !o.json && sizes.size() > 4 && stderr_is_terminal();
  nlohmann::json rows = nlohmann::json::array();
  SimTime offset = kTimeZero;
  std::set<std::uint32_t> named_links;
  const double factor = busbw_factor(spec.op, spec.ranks.size());
  std::vector<std::string> lines;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (progress) std::cerr << "\r  simulating " << format_bytes(sizes[i]) << " (" << i + 1 << "/" << sizes.size() << ")   " << std::flush;
    spec.size = sizes[i];
    std::vector<coll::LinkActivity> activity;
    const coll::CollectiveResult r = simulator.run(spec, "--algo", tracing ? &activity : nullptr);
    const double t = to_seconds(r.time);
    const double algbw = static_cast<double>(spec.size.value()) / t / 1e9;
    const double busbw = algbw * factor;
    rows.push_back({{"op", to_string(spec.op)},
                    {"ranks", spec.ranks.size()},
                    {"bytes", spec.size.value()},
                    {"time_s", t},
                    {"time_ps", r.time.count()},
                    {"algbw_GBps", algbw},
                    {"busbw_GBps", busbw},
                    {"algo", to_string(r.algorithm)},
                    {"protocol", coll::to_string(r.protocol)},
                    {"flows", r.flows},
                    {"wire_bytes", r.wire_bytes.value()},
                    {"folded_servers", r.folded_servers}});
    list_warnings_in(rows.back(), machine.warnings);
    if (tracing) {
      const std::string label = std::string(to_string(spec.op)) + " " + format_bytes(spec.size) + " (" + to_string(r.algorithm) + "/" + coll::to_string(r.protocol) + ")";
      for (std::size_t k = 0; k < spec.ranks.size(); ++k) {
        trace.span(1, static_cast<std::int64_t>(k), label, offset, r.time, {{"bytes", spec.size.value()}, {"busbw_GBps", busbw}});
      }
      for (const auto& a : activity) {
        const auto tid = static_cast<std::int64_t>(a.link.value);
        if (named_links.insert(a.link.value).second) {
          if (a.link.value < cluster.link_count()) {
            const auto& l = cluster.link(a.link);
            trace.name_track(2, tid, cluster.node(l.src).name + " -> " + cluster.node(l.dst).name);
          } else if (const auto port = simulator.layout().engine_port(a.link)) {
            trace.name_track(2, tid, cluster.node(port->first).name + " reduction engine of " + cluster.node(port->second).name);
          } else {
            trace.name_track(2, tid, "virtual link " + std::to_string(a.link.value));
          }
        }
        for (const auto& iv : a.intervals) {
          trace.span(2, tid, "busy", offset + (iv.begin - kTimeZero), iv.end - iv.begin, {{"bytes", iv.bytes.value()}});
        }
      }
      offset += r.time;
    }
  }
  if (progress) std::cerr << "\r" << std::string(60, ' ') << "\r" << std::flush;

  if (tracing) write_output_file(o.trace, trace.dump(), "--trace");
  if (o.trace == "-") return 0;  // standard output holds the trace alone
  if (o.json) {
    std::cout << (o.sweep.empty() ? rows[0] : rows).dump(2) << "\n";
    return 0;
  }
  std::cout << "# clustersim collective: " << to_string(spec.op) << " on " << cluster.name() << ", "
            << spec.ranks.size() << " ranks, algorithm " << o.algo << "\n";
  std::cout << "# busbw = algbw x " << fixed(factor, 4) << " (nccl-tests definition)\n";
  const std::uint32_t folded = rows[0]["folded_servers"].get<std::uint32_t>();
  if (folded > 0) {
    std::cout << "# folded: the flows of " << folded << " servers simulated as one server's, by symmetry (the same result;\n"
              << "#   docs/network-model.md, \"Folding symmetric collectives\")\n";
  }
  std::cout << "#" << pad_left("size", 13) << pad_left("time(us)", 13) << pad_left("algbw(GB/s)", 13)
            << pad_left("busbw(GB/s)", 13) << "  algo/protocol\n";
  for (const auto& row : rows) {
    std::cout << " " << pad_left(format_bytes(Bytes{row["bytes"].get<std::int64_t>()}), 13)
              << pad_left(fixed(row["time_s"].get<double>() * 1e6, 2), 13)
              << pad_left(fixed(row["algbw_GBps"].get<double>(), 2), 13)
              << pad_left(fixed(row["busbw_GBps"].get<double>(), 2), 13) << "  "
              << row["algo"].get<std::string>() << "/" << row["protocol"].get<std::string>() << "\n";
  }
  return 0;
}

}  // namespace cs::cli
