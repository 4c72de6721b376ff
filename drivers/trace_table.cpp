#include "drivers/trace_table.h"

#include <charconv>
#include <sstream>

#include "core/errors.h"
#include "core/input_file.h"

namespace cs::drv {
namespace {

std::string format(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

TraceTable::TraceTable(std::string path, std::initializer_list<const char*> required)
    : path_(std::move(path)), table_(results::parse_csv(read_input_file(path_), path_)) {
  for (const char* r : required) {
    if (!has(r)) throw InputError(path_, "line 1", std::string("the header has no column \"") + r + "\"");
  }
}

std::string_view TraceTable::cell(std::size_t row, std::string_view column) const {
  const auto c = table_.column(column);
  return c ? std::string_view(table_.rows[row][*c]) : std::string_view{};
}

std::int64_t TraceTable::integer(std::size_t row, std::string_view column, std::int64_t lo, std::int64_t hi) const {
  const std::string_view f = cell(row, column);
  std::int64_t v = 0;
  const auto r = std::from_chars(f.data(), f.data() + f.size(), v);
  if (f.empty() || r.ec != std::errc{} || r.ptr != f.data() + f.size() || v < lo || v > hi) {
    fail(row, "column \"" + std::string(column) + "\": expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                  ", got \"" + std::string(f) + "\"");
  }
  return v;
}

double TraceTable::number(std::size_t row, std::string_view column, double lo, double hi) const {
  const std::string_view f = cell(row, column);
  double v = 0;
  const auto r = std::from_chars(f.data(), f.data() + f.size(), v);
  if (f.empty() || r.ec != std::errc{} || r.ptr != f.data() + f.size() || !(v >= lo && v <= hi)) {
    fail(row, "column \"" + std::string(column) + "\": expected a number from " + format(lo) + " to " + format(hi) + ", got \"" +
                  std::string(f) + "\"");
  }
  return v;
}

void TraceTable::fail(std::size_t row, const std::string& why) const {
  throw InputError(path_, "line " + std::to_string(table_.lines[row]), why);
}

}  // namespace cs::drv
