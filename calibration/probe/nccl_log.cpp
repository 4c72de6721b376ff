#include "calibration/probe/nccl_log.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <map>
#include <tuple>

namespace cs::probe {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The next whitespace-separated word of `s`, consumed.
std::string_view next_word(std::string_view& s) {
  s = trim(s);
  std::size_t end = 0;
  while (end < s.size() && !std::isspace(static_cast<unsigned char>(s[end]))) ++end;
  const std::string_view w = s.substr(0, end);
  s.remove_prefix(end);
  return w;
}

template <class T>
bool to_number(std::string_view s, T& out) {
  if (s.empty()) return false;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

std::string normalize_algorithm(std::string_view nccl_name) {
  static const char* const kById[] = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
  int id = -1;
  if (to_number(nccl_name, id)) {
    return id >= 0 && id < 7 ? kById[id] : "algo" + std::string(nccl_name);
  }
  std::string key = lower(nccl_name);
  key.erase(std::remove(key.begin(), key.end(), '_'), key.end());
  static const std::map<std::string, std::string> kNames = {
      {"tree", "tree"}, {"ring", "ring"}, {"collnetdirect", "collnet_direct"}, {"collnetchain", "collnet_chain"},
      {"nvls", "nvls"}, {"nvlstree", "nvls_tree"}, {"pat", "pat"}};
  const auto it = kNames.find(key);
  return it != kNames.end() ? it->second : lower(nccl_name);
}

std::string normalize_protocol(std::string_view nccl_name) {
  static const char* const kById[] = {"ll", "ll128", "simple"};
  int id = -1;
  if (to_number(nccl_name, id)) {
    return id >= 0 && id < 3 ? kById[id] : "proto" + std::string(nccl_name);
  }
  return lower(nccl_name);  // LL, LL128, Simple/SIMPLE
}

std::string nccl_function_name(std::string_view op) {
  if (op == "all_reduce") return "AllReduce";
  if (op == "all_gather") return "AllGather";
  if (op == "reduce_scatter") return "ReduceScatter";
  if (op == "broadcast") return "Broadcast";
  if (op == "reduce") return "Reduce";
  return "";
}

std::optional<TuningLine> parse_tuning_line(std::string_view line) {
  // Everything after "NCCL INFO " (the prefix holds host, pid, tid, device and maybe a time).
  const std::size_t info = line.find("NCCL INFO ");
  if (info == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(info + 10);
  const std::size_t arrow = rest.find(" Bytes -> Algo ");
  if (arrow == std::string_view::npos) return std::nullopt;

  TuningLine t;
  // Before the arrow: "<Function>: <bytes>" or "<bytes>".
  std::string_view head = trim(rest.substr(0, arrow));
  const std::size_t colon = head.find(':');
  if (colon != std::string_view::npos) {
    t.function = std::string(trim(head.substr(0, colon)));
    head = trim(head.substr(colon + 1));
  }
  if (!to_number(head, t.bytes) || t.bytes < 0) return std::nullopt;

  // After the arrow: "<algo> proto <proto> [channel{Lo..Hi}={lo..hi} | time <t>]".
  std::string_view tail = rest.substr(arrow + 15);
  const std::string_view algo = next_word(tail);
  if (algo.empty() || next_word(tail) != "proto") return std::nullopt;
  const std::string_view proto = next_word(tail);
  if (proto.empty()) return std::nullopt;
  t.algorithm = normalize_algorithm(algo);
  t.protocol = normalize_protocol(proto);

  const std::size_t ch = tail.find("={");
  if (tail.find("channel") != std::string_view::npos && ch != std::string_view::npos) {
    std::string_view range = tail.substr(ch + 2);
    const std::size_t dots = range.find("..");
    const std::size_t close = range.find('}');
    int lo = 0, hi = 0;
    if (dots != std::string_view::npos && close != std::string_view::npos && dots < close &&
        to_number(range.substr(0, dots), lo) && to_number(range.substr(dots + 2, close - dots - 2), hi) && hi >= lo) {
      t.channels = hi - lo + 1;
    }
  }
  return t;
}

cal::NcclChoice dominant_choice(const std::vector<TuningLine>& lines, std::string_view function) {
  using Key = std::tuple<std::string, std::string, int>;
  std::map<Key, std::pair<int, std::size_t>> seen;  // count, last position
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const TuningLine& l = lines[i];
    if (!l.function.empty() && l.function != function) continue;
    auto& entry = seen[Key{l.algorithm, l.protocol, l.channels}];
    ++entry.first;
    entry.second = i;
  }
  cal::NcclChoice best;
  int best_count = 0;
  std::size_t best_last = 0;
  for (const auto& [key, entry] : seen) {
    if (entry.first > best_count || (entry.first == best_count && entry.second > best_last)) {
      best_count = entry.first;
      best_last = entry.second;
      best.algorithm = std::get<0>(key);
      best.protocol = std::get<1>(key);
      best.channels = std::get<2>(key);
    }
  }
  return best;
}

NcclLogTail::NcclLogTail(std::string path) : path_(std::move(path)) {}

std::vector<TuningLine> NcclLogTail::read_new() {
  std::vector<TuningLine> out;
  if (path_.empty()) return out;
  std::ifstream in(path_, std::ios::binary);
  if (!in) return out;  // NCCL creates the file at its first log line
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // an incomplete last line: read it next time
    offset_ += line.size() + 1;
    if (auto t = parse_tuning_line(line)) out.push_back(std::move(*t));
  }
  return out;
}

void NcclLogTail::skip_to_end() {
  if (path_.empty()) return;
  std::ifstream in(path_, std::ios::binary | std::ios::ate);
  if (in) offset_ = static_cast<std::uint64_t>(in.tellg());
}

std::string expand_nccl_debug_file(std::string_view pattern, std::string_view host, long pid) {
  const std::string_view short_host = host.substr(0, host.find('.'));
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 >= pattern.size()) {
      out += pattern[i];
      continue;
    }
    const char c = pattern[++i];
    if (c == '%') {
      out += '%';
    } else if (c == 'h') {
      out += short_host;
    } else if (c == 'p') {
      out += std::to_string(pid);
    } else {
      out += '%';
      out += c;
    }
  }
  return out;
}

}  // namespace cs::probe
