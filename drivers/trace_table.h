// A CSV trace read whole (results::parse_csv: RFC 4180, every row the header's width) with typed
// access to its cells: errors name the file, the row's line and the column (exit 2).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "results/report_input.h"

namespace cs::drv {

class TraceTable {
 public:
  // Reads `path` (core/input_file.h's cap) and checks that every `required` column is there.
  TraceTable(std::string path, std::initializer_list<const char*> required);

  std::size_t rows() const { return table_.rows.size(); }
  bool has(std::string_view column) const { return table_.column(column).has_value(); }
  // The cell of a row; empty when the column is absent.
  std::string_view cell(std::size_t row, std::string_view column) const;
  std::int64_t integer(std::size_t row, std::string_view column, std::int64_t lo, std::int64_t hi) const;
  double number(std::size_t row, std::string_view column, double lo, double hi) const;
  [[noreturn]] void fail(std::size_t row, const std::string& why) const;

 private:
  std::string path_;
  results::CsvTable table_;
};

}  // namespace cs::drv
