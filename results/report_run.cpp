// The report of a run folder (`clustersim run --out DIR`, docs/outputs.md): the headline numbers
// and findings (summary.json), where each GPU's time went (per_gpu.csv), one iteration's timeline
// (trace.json) and what the links carried (links.csv). summary.json is required; a folder without
// one of the other files gets a note instead of its charts.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "core/config.h"
#include "core/errors.h"
#include "core/input_file.h"
#include "results/report_kinds.h"

namespace cs::results {
namespace {

namespace fs = std::filesystem;

// Above this many GPUs the stall chart shows pipeline stages (means over their GPUs), not GPUs.
constexpr std::size_t kMaxGpuBars = 64;
// The timeline: at most this many ranks (one per pipeline stage) and spans (the longest kept).
constexpr std::size_t kMaxTimelineRanks = 16;
constexpr std::size_t kMaxTimelineSpans = 6000;
constexpr std::size_t kHottestLinks = 15;

const char* const kTierNames[] = {"in_server", "endpoint_leaf", "leaf_spine", "spine_core"};

std::string tier_name(long tier) {
  return tier >= 0 && tier < 4 ? kTierNames[tier] : "tier " + std::to_string(tier);
}

std::string file_in(const ReportSource& s, const char* name) { return (fs::path(s.path) / name).string(); }

double number_at(const ConfigNode& root, std::string_view key) { return root.at(key).as_number(); }

std::optional<double> optional_number(const ConfigNode& root, std::string_view key) {
  const auto n = root.find(key);
  if (!n || n->json().is_null()) return std::nullopt;
  return n->as_number();
}

std::optional<std::string> optional_string(const ConfigNode& root, std::string_view key) {
  const auto n = root.find(key);
  if (!n || n->json().is_null()) return std::nullopt;
  return n->as_string();
}

// ---- summary.json: the headline, findings, warnings, assumptions ----

void summary_sections(const ConfigNode& root, ReportPage& page) {
  ReportSection s;
  s.title = "Headline";
  const auto name = optional_string(root, "experiment");
  if (name) page.title = "clustersim report: " + *name;
  for (const char* key : {"experiment", "cluster", "model"}) {
    if (const auto v = optional_string(root, key)) s.facts.emplace_back(key, *v);
  }
  s.facts.emplace_back("GPUs", format_count(number_at(root, "gpus")));
  if (const auto plan = root.find("plan"); plan && plan->is_object()) {
    std::string text;
    for (const char* k : {"dp", "tp", "pp", "cp", "ep"}) {
      if (const auto v = optional_number(*plan, k)) text += (text.empty() ? "" : " x ") + std::string(k) + " " + format_count(*v);
    }
    for (const char* k : {"micro_batch", "global_batch", "micro_batches", "sequence_length"}) {
      if (const auto v = optional_number(*plan, k)) text += ", " + std::string(k) + " " + format_count(*v);
    }
    s.facts.emplace_back("plan", text);
  }
  s.facts.emplace_back("iteration time", format_seconds(number_at(root, "iteration_time_s")));
  if (const auto v = optional_number(root, "tokens_per_s"); v && *v > 0) s.facts.emplace_back("tokens/s", format_count(*v));
  if (const auto v = optional_number(root, "samples_per_s")) s.facts.emplace_back("samples/s", format_number(*v, 5));
  if (const auto v = optional_number(root, "tflops_per_gpu")) s.facts.emplace_back("TFLOP/s per GPU (training)", format_number(*v, 4));
  if (const auto v = optional_number(root, "model_tflops_per_gpu")) s.facts.emplace_back("TFLOP/s per GPU (model)", format_number(*v, 4));
  if (const auto v = optional_number(root, "mfu")) s.facts.emplace_back("MFU", format_percent(*v));
  if (const auto mem = root.find("memory_bytes"); mem && mem->is_object()) {
    const auto total = optional_number(*mem, "total"), cap = optional_number(*mem, "capacity");
    if (total && cap) {
      s.facts.emplace_back("memory (worst stage)",
                           format_bytes_decimal(*total) + " of " + format_bytes_decimal(*cap) + " (" + format_percent(*total / *cap, 0) + ")");
    }
  }
  if (const auto v = optional_number(root, "simulated_ranks")) s.facts.emplace_back("ranks simulated", format_count(*v));
  if (const auto w = root.find("workload"); w && w->is_object()) {  // a replay (docs/chakra.md)
    const ConfigNode files = w->at("files");
    std::string text = format_count(static_cast<double>(files.size())) + " file" + (files.size() == 1 ? "" : "s");
    if (files.size() > 0) text += " (" + files.at(std::size_t{0}).as_string() + (files.size() > 1 ? ", ..." : "") + ")";
    if (const auto imp = w->find("import"); imp && imp->is_object()) text += ", " + format_count(number_at(*imp, "nodes")) + " Chakra nodes";
    s.facts.emplace_back("replayed workload", text);
    if (const auto v = optional_string(root, "issue_order")) s.facts.emplace_back("issue order", *v);
    if (const auto v = optional_number(root, "ops")) s.facts.emplace_back("ops", format_count(*v));
  }
  if (const auto f = optional_string(root, "finding")) s.paragraphs.push_back("Finding: " + *f);
  if (const auto f = optional_string(root, "load_imbalance")) s.paragraphs.push_back("Load imbalance: " + *f);

  if (const auto w = root.find("warnings"); w && w->is_array()) {
    if (w->size() == 0) {
      s.paragraphs.push_back("No warnings: every input is within what the hardware catalog knows.");
    } else {
      ReportTable t{"Warnings (inputs legal but outside what the catalog knows)", {"file", "path", "message"}, {}, {}};
      for (const ConfigNode& e : w->elements()) {
        t.rows.push_back({e.at("file").as_string(), e.at("path").as_string(), e.at("message").as_string()});
      }
      s.tables.push_back(std::move(t));
    }
  }
  page.sections.push_back(std::move(s));
}

// ---- per_gpu.csv: the stall breakdown per GPU, or per pipeline stage ----

struct RankStalls {
  long rank = 0;
  long stage = 0;
  std::vector<double> seconds;  // per stall category
};

// A replay's per_rank.csv has no pipeline stage: every rank is in stage 0.
std::vector<RankStalls> read_per_gpu(const std::string& file, bool replay) {
  const CsvTable t = parse_csv(read_input_file(file), file);
  const std::vector<std::string> cols = stall_columns();
  std::vector<std::size_t> idx;
  for (const std::string& c : cols) {
    const auto i = t.column(c);
    if (!i) throw InputError(file, "line 1", "the header has no column " + c + " (not a per_gpu.csv of clustersim run --out)");
    idx.push_back(*i);
  }
  const auto rank_col = t.column("rank"), pp_col = t.column("pp");
  if (!rank_col || (!pp_col && !replay)) throw InputError(file, "line 1", "the header has no column rank or pp (not a per_gpu.csv of clustersim run --out)");
  std::vector<RankStalls> out;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    RankStalls rs;
    rs.rank = static_cast<long>(cell_number(t.rows[r][*rank_col], file, t.lines[r], "rank").value_or(0));
    rs.stage = pp_col ? static_cast<long>(cell_number(t.rows[r][*pp_col], file, t.lines[r], "pp").value_or(0)) : 0;
    for (std::size_t k = 0; k < idx.size(); ++k) rs.seconds.push_back(cell_number(t.rows[r][idx[k]], file, t.lines[r], cols[k]).value_or(0));
    out.push_back(std::move(rs));
  }
  return out;
}

void stall_section(const std::vector<RankStalls>& ranks, ReportPage& page) {
  ReportSection s;
  s.title = "Where the time goes";
  const std::size_t categories = stall_columns().size();
  std::map<long, std::pair<std::size_t, std::vector<double>>> stages;  // stage -> GPUs, summed seconds
  for (const RankStalls& r : ranks) {
    auto& [count, sum] = stages[r.stage];
    if (sum.empty()) sum.assign(categories, 0.0);
    ++count;
    for (std::size_t k = 0; k < categories; ++k) sum[k] += r.seconds[k];
  }
  std::vector<std::string> labels;
  std::vector<std::vector<double>> by_category(categories);
  if (ranks.size() <= kMaxGpuBars) {
    std::vector<const RankStalls*> sorted;
    for (const RankStalls& r : ranks) sorted.push_back(&r);
    std::sort(sorted.begin(), sorted.end(), [](const RankStalls* a, const RankStalls* b) { return a->rank < b->rank; });
    for (const RankStalls* r : sorted) {
      labels.push_back("rank " + std::to_string(r->rank));
      for (std::size_t k = 0; k < categories; ++k) by_category[k].push_back(r->seconds[k]);
    }
    s.charts.push_back(stall_chart("Stall breakdown per GPU (one iteration)", labels, by_category));
    s.charts.back().note = "Each bar adds up to the iteration time (per_gpu.csv).";
  } else {
    for (const auto& [stage, cs] : stages) {
      labels.push_back("stage " + std::to_string(stage));
      for (std::size_t k = 0; k < categories; ++k) by_category[k].push_back(cs.second[k] / static_cast<double>(cs.first));
    }
    s.charts.push_back(stall_chart("Stall breakdown per pipeline stage (mean over its GPUs)", labels, by_category));
    s.charts.back().note = format_count(static_cast<double>(ranks.size())) + " GPUs, shown as the mean of each pipeline stage's GPUs (per_gpu.csv).";
  }
  ReportTable t{"Stall breakdown per pipeline stage, mean over its GPUs (ms)", {"stage", "GPUs"}, {}, {}};
  for (std::size_t k = 0; k < categories; ++k) t.header.push_back(stall_label(k));
  for (const auto& [stage, cs] : stages) {
    std::vector<std::string> row = {std::to_string(stage), std::to_string(cs.first)};
    for (std::size_t k = 0; k < categories; ++k) row.push_back(format_number(cs.second[k] / static_cast<double>(cs.first) * 1e3, 5));
    t.rows.push_back(std::move(row));
  }
  s.tables.push_back(std::move(t));
  page.sections.push_back(std::move(s));
}

// ---- trace.json: a Gantt chart of one iteration, one rank per pipeline stage ----

struct Span {
  std::size_t row;
  double start_ms, end_ms;
  std::string name;
};

void timeline_section(const std::string& file, const std::vector<RankStalls>& ranks, ReportPage& page) {
  const ConfigDocument doc = ConfigDocument::load(file);
  const ConfigNode events = doc.root().at("traceEvents");
  if (!events.is_array()) events.fail_expected("an array of trace events");
  std::map<long, std::string> process;                      // pid -> name
  std::map<std::pair<long, long>, std::string> track;       // (pid, tid) -> stream name
  struct Raw { long pid, tid; double ts, dur; std::string name; };
  std::vector<Raw> raw;
  for (const ConfigNode& e : events.elements()) {
    const std::string ph = e.at("ph").as_string();
    const long pid = static_cast<long>(e.at("pid").as_int()), tid = static_cast<long>(e.at("tid").as_int());
    if (ph == "M") {
      const std::string what = e.at("name").as_string();
      if (what == "process_name") process[pid] = e.at("args").at("name").as_string();
      else if (what == "thread_name") track[{pid, tid}] = e.at("args").at("name").as_string();
    } else if (ph == "X") {
      raw.push_back({pid, tid, e.at("ts").as_number(), e.at("dur").as_number(), e.at("name").as_string()});
    }
  }
  // One rank per pipeline stage: the trace's processes are "rank N <gpu>"; per_gpu.csv gives N's stage.
  std::map<long, long> stage_of;
  for (const RankStalls& r : ranks) stage_of[r.rank] = r.stage;
  std::set<long> with_spans;
  for (const Raw& r : raw) with_spans.insert(r.pid);
  std::map<long, std::pair<long, long>> chosen;  // stage (or pid when unknown) -> (pid, rank)
  for (long pid : with_spans) {
    long rank = -1;
    const std::string& name = process[pid];
    if (name.rfind("rank ", 0) == 0) rank = std::strtol(name.c_str() + 5, nullptr, 10);
    const auto st = stage_of.find(rank);
    const long key = st != stage_of.end() ? st->second : 1'000'000 + pid;
    if (!chosen.count(key)) chosen[key] = {pid, rank};
  }
  ReportSection s;
  s.title = "One iteration, one rank per pipeline stage";
  if (raw.empty()) {
    s.paragraphs.push_back("trace.json holds no spans: nothing to draw.");
    page.sections.push_back(std::move(s));
    return;
  }
  std::vector<std::string> rows;
  std::map<std::pair<long, long>, std::size_t> row_of;  // (pid, tid) -> row
  std::size_t ranks_shown = 0;
  for (const auto& [key, pr] : chosen) {
    if (ranks_shown++ == kMaxTimelineRanks) break;
    std::set<long> tids;
    for (const Raw& r : raw) {
      if (r.pid == pr.first) tids.insert(r.tid);
    }
    for (long tid : tids) {
      const auto tn = track.find({pr.first, tid});
      const std::string stream = tn != track.end() ? tn->second : "track " + std::to_string(tid);
      std::string label = pr.second >= 0 ? "rank " + std::to_string(pr.second) : process[pr.first];
      if (key < 1'000'000) label = "stage " + std::to_string(key) + " \xC2\xB7 " + label;
      row_of[{pr.first, tid}] = rows.size();
      rows.push_back(label + " \xC2\xB7 " + stream);
    }
  }
  std::map<std::size_t, std::string> stream_of_row;
  for (const auto& [pt, row] : row_of) {
    const auto tn = track.find(pt);
    stream_of_row[row] = tn != track.end() ? tn->second : "other";
  }
  std::vector<std::vector<Span>> by_row(rows.size());
  std::size_t all = 0;
  for (const Raw& r : raw) {
    const auto it = row_of.find({r.pid, r.tid});
    if (it == row_of.end()) continue;
    by_row[it->second].push_back({it->second, r.ts / 1e3, (r.ts + r.dur) / 1e3, r.name});
    ++all;
  }
  // The cap shared among the rows (water-filling from the row with fewest spans), each keeping its
  // longest: every stream stays visible, short compute kernels go first.
  std::vector<std::size_t> order(rows.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return by_row[a].size() < by_row[b].size(); });
  std::vector<Span> spans;
  std::size_t budget = kMaxTimelineSpans, rows_left = rows.size();
  for (std::size_t row : order) {
    std::vector<Span>& v = by_row[row];
    const std::size_t keep = std::min(v.size(), budget / rows_left--);
    std::nth_element(v.begin(), v.begin() + static_cast<long>(keep), v.end(),
                     [](const Span& a, const Span& b) { return a.end_ms - a.start_ms > b.end_ms - b.start_ms; });
    spans.insert(spans.end(), v.begin(), v.begin() + static_cast<long>(keep));
    budget -= keep;
  }
  std::map<std::string, nlohmann::json> per_stream;
  for (const Span& sp : spans) {
    nlohmann::json& d = per_stream[stream_of_row[sp.row]];
    if (d.is_null()) d = nlohmann::json::array();
    d.push_back({{"name", sp.name}, {"value", {sp.row, chart_round(sp.start_ms, 8), chart_round(sp.end_ms, 8)}}});
  }
  static const std::map<std::string, std::string> kStreamColours = {
      {"compute", "#3a9d5d"}, {"tp", "#4a7bd0"}, {"cp", "#6a5acd"}, {"pp", "#f0a030"},
      {"dp", "#2fa4c4"},      {"ep", "#1f5f8b"}, {"data", "#9c6b3c"}};
  nlohmann::json series = nlohmann::json::array();
  for (auto& [stream, data] : per_stream) {
    const auto c = kStreamColours.find(stream);
    series.push_back({{"name", stream}, {"type", "custom"}, {"renderItem", "gantt"}, {"encode", {{"x", {1, 2}}, {"y", 0}}},
                      {"itemStyle", {{"color", c != kStreamColours.end() ? c->second : "#888888"}}},
                      {"tooltip", {{"formatter", "gantt"}}}, {"data", std::move(data)}});
  }
  ReportChart c;
  c.title = "Timeline of one iteration (compute and communication streams)";
  c.height_px = std::clamp(static_cast<int>(rows.size()) * 26 + 120, 240, 900);
  c.option = {{"tooltip", {{"trigger", "item"}, {"confine", true}}},
              {"legend", {{"top", 0}}},
              {"grid", {{"left", 200}, {"right", 40}, {"top", 36}, {"bottom", 70}}},
              {"xAxis", {{"type", "value"}, {"name", "ms"}, {"nameLocation", "middle"}, {"nameGap", 24}, {"min", 0}}},
              {"yAxis", {{"type", "category"}, {"data", rows}, {"inverse", true}, {"axisLabel", {{"fontSize", 11}}}}},
              {"dataZoom", nlohmann::json::array({{{"type", "inside"}, {"filterMode", "weakFilter"}},
                                                  {{"type", "slider"}, {"height", 18}, {"bottom", 8}, {"filterMode", "weakFilter"}}})},
              {"series", std::move(series)}};
  c.note = "From trace.json (open it in ui.perfetto.dev for every op): " + std::to_string(chosen.size()) + " rank(s) with spans";
  if (chosen.size() > kMaxTimelineRanks) c.note += ", the first " + std::to_string(kMaxTimelineRanks) + " shown";
  c.note += "; " + format_count(static_cast<double>(all)) + " spans";
  if (all > spans.size()) c.note += ", " + format_count(static_cast<double>(spans.size())) + " drawn (the longest of each row)";
  c.note += ". Zoom with the wheel or the slider.";
  s.charts.push_back(std::move(c));
  page.sections.push_back(std::move(s));
}

// ---- links.csv (and summary.json's network): utilization by tier, the hottest links ----

struct LinkRow {
  std::string src, dst, cls;
  long tier = 0;
  double bytes = 0, busy_s = 0, utilization = 0;
};

void links_section(const std::string& file, const ConfigNode& summary, bool have_links, ReportPage& page) {
  ReportSection s;
  s.title = "Network";
  if (const auto net = summary.find("network"); net && net->is_object()) {
    if (const auto tiers = net->find("bytes_by_tier"); tiers && tiers->is_object()) {
      ReportTable t{"Bytes carried per link tier (summary.json)", {"tier", "bytes"}, {}, {}};
      for (const auto& [tier, v] : tiers->members()) t.rows.push_back({tier, format_bytes_decimal(v.as_number())});
      s.tables.push_back(std::move(t));
    }
  }
  if (!have_links) {
    s.paragraphs.push_back("links.csv is not in the folder: link utilization not charted.");
    page.sections.push_back(std::move(s));
    return;
  }
  const CsvTable t = parse_csv(read_input_file(file), file);
  std::vector<std::size_t> idx;
  for (const char* c : {"src", "dst", "class", "tier", "bytes", "busy_s", "utilization"}) {
    const auto i = t.column(c);
    if (!i) throw InputError(file, "line 1", std::string("the header has no column ") + c + " (not a links.csv of clustersim run --out)");
    idx.push_back(*i);
  }
  std::vector<LinkRow> links;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const auto& row = t.rows[r];
    const std::size_t line = t.lines[r];
    links.push_back({row[idx[0]], row[idx[1]], row[idx[2]], static_cast<long>(cell_number(row[idx[3]], file, line, "tier").value_or(0)),
                     cell_number(row[idx[4]], file, line, "bytes").value_or(0), cell_number(row[idx[5]], file, line, "busy_s").value_or(0),
                     cell_number(row[idx[6]], file, line, "utilization").value_or(0)});
  }
  if (links.empty()) {
    s.paragraphs.push_back("No link carried bytes in this iteration.");
    page.sections.push_back(std::move(s));
    return;
  }
  struct TierUse { std::size_t links = 0; double bytes = 0, sum_util = 0, max_util = 0; };
  std::map<long, TierUse> tiers;
  for (const LinkRow& l : links) {
    TierUse& u = tiers[l.tier];
    ++u.links;
    u.bytes += l.bytes;
    u.sum_util += l.utilization;
    u.max_util = std::max(u.max_util, l.utilization);
  }
  nlohmann::json names = nlohmann::json::array(), mean = nlohmann::json::array(), max = nlohmann::json::array();
  ReportTable tt{"Links by tier (links.csv: the links that carried bytes)", {"tier", "links", "bytes", "mean utilization", "max utilization"}, {}, {}};
  for (const auto& [tier, u] : tiers) {
    names.push_back(tier_name(tier));
    mean.push_back(chart_round(100 * u.sum_util / static_cast<double>(u.links), 4));
    max.push_back(chart_round(100 * u.max_util, 4));
    tt.rows.push_back({tier_name(tier), format_count(static_cast<double>(u.links)), format_bytes_decimal(u.bytes),
                       format_percent(u.sum_util / static_cast<double>(u.links)), format_percent(u.max_util)});
  }
  ReportChart byt;
  byt.title = "Link utilization by tier";
  byt.height_px = 300;
  byt.option = {{"tooltip", {{"trigger", "axis"}, {"axisPointer", {{"type", "shadow"}}}}},
                {"legend", {{"top", 0}}},
                {"grid", {{"left", 60}, {"right", 30}, {"top", 40}, {"bottom", 40}}},
                {"xAxis", {{"type", "category"}, {"data", names}}},
                {"yAxis", {{"type", "value"}, {"name", "% of the iteration"}}},
                {"series", {{{"name", "mean over links"}, {"type", "bar"}, {"data", mean}, {"itemStyle", {{"color", "#4a7bd0"}}}},
                            {{"name", "busiest link"}, {"type", "bar"}, {"data", max}, {"itemStyle", {{"color", "#d9534f"}}}}}}};
  byt.note = "Utilization = bytes / (usable capacity x iteration time), over the links that carried bytes.";
  s.charts.push_back(std::move(byt));

  std::stable_sort(links.begin(), links.end(), [](const LinkRow& a, const LinkRow& b) { return a.utilization > b.utilization; });
  const std::size_t n = std::min(links.size(), kHottestLinks);
  nlohmann::json labels = nlohmann::json::array(), util = nlohmann::json::array();
  ReportTable ht{"The hottest links", {"src", "dst", "class", "tier", "bytes", "busy", "utilization"}, {}, {}};
  for (std::size_t i = 0; i < n; ++i) {
    const LinkRow& l = links[i];
    labels.push_back(l.src + " \xE2\x86\x92 " + l.dst + " (" + l.cls + ")");
    util.push_back(chart_round(100 * l.utilization, 4));
    ht.rows.push_back({l.src, l.dst, l.cls, tier_name(l.tier), format_bytes_decimal(l.bytes), format_seconds(l.busy_s), format_percent(l.utilization)});
  }
  ReportChart hot;
  hot.title = "The hottest links";
  hot.height_px = static_cast<int>(n) * 24 + 90;
  hot.option = {{"tooltip", {{"trigger", "axis"}, {"axisPointer", {{"type", "shadow"}}}}},
                {"grid", {{"left", 20}, {"right", 40}, {"top", 20}, {"bottom", 40}, {"containLabel", true}}},
                {"xAxis", {{"type", "value"}, {"name", "% utilization"}, {"nameLocation", "middle"}, {"nameGap", 26}}},
                {"yAxis", {{"type", "category"}, {"data", labels}, {"inverse", true}}},
                {"series", {{{"name", "utilization %"}, {"type", "bar"}, {"data", util}, {"itemStyle", {{"color", "#d9534f"}}}}}}};
  hot.note = "The " + std::to_string(n) + " most utilized of " + format_count(static_cast<double>(links.size())) + " links that carried bytes.";
  s.charts.push_back(std::move(hot));
  s.tables.push_back(std::move(tt));
  s.tables.push_back(std::move(ht));
  page.sections.push_back(std::move(s));
}

}  // namespace

bool is_run_folder(const ReportSource& s) { return s.folder; }

void run_folder_report(const ReportSource& s, ReportPage& page) {
  const std::string summary_file = file_in(s, "summary.json");
  std::error_code ec;
  if (!fs::exists(summary_file, ec)) {
    throw InputError(s.path, "", "a folder without summary.json: not the output of `clustersim run --out` (docs/outputs.md)");
  }
  const ConfigDocument summary = ConfigDocument::load(summary_file);
  const ConfigNode root = summary.root();
  if (!root.is_object()) root.fail_expected("an object (the summary of clustersim run)");
  page.title = "clustersim report";
  summary_sections(root, page);

  // A replay (`run --trace`) writes per_rank.csv in place of per_gpu.csv.
  const bool replay = optional_string(root, "schema") == "clustersim-replay";
  const char* per_rank_name = replay ? "per_rank.csv" : "per_gpu.csv";
  const std::string per_gpu = file_in(s, per_rank_name), trace = file_in(s, "trace.json"), links = file_in(s, "links.csv");
  std::vector<RankStalls> ranks;
  if (fs::exists(per_gpu, ec)) {
    ranks = read_per_gpu(per_gpu, replay);
    stall_section(ranks, page);
  } else {
    page.sections.push_back({"Where the time goes", {std::string(per_rank_name) + " is not in the folder: the stall breakdown is not charted."}, {}, {}, {}});
  }
  if (fs::exists(trace, ec)) {
    timeline_section(trace, ranks, page);
  } else {
    page.sections.push_back({"One iteration", {"trace.json is not in the folder: the timeline is not charted."}, {}, {}, {}});
  }
  links_section(links, root, fs::exists(links, ec), page);
  page.sections.push_back(assumptions_section(root));
}

}  // namespace cs::results
