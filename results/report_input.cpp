#include "results/report_input.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <system_error>

#include "core/errors.h"
#include "core/input_file.h"

namespace cs::results {

std::string_view ReportSource::first_line() const {
  std::string_view t = text;
  const std::size_t nl = t.find('\n');
  t = t.substr(0, nl);
  if (!t.empty() && t.back() == '\r') t.remove_suffix(1);
  return t;
}

ReportSource open_report_source(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw InputError(path, "", "no such file or folder");
  ReportSource s;
  s.path = path;
  if (fs::is_directory(st)) {
    s.folder = true;
    return s;
  }
  s.text = read_input_file(path);
  return s;
}

std::optional<std::size_t> CsvTable::column(std::string_view name) const {
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return i;
  }
  return std::nullopt;
}

std::string csv_quoted(std::string_view text) {
  const bool quote = text.find_first_of(",\"\n\r") != std::string_view::npos ||
                     (!text.empty() && (text.front() == ' ' || text.back() == ' '));
  if (!quote) return std::string(text);
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

CsvTable parse_csv(std::string_view text, const std::string& file, bool allow_torn_tail) {
  CsvTable t;
  if (text.empty()) throw InputError(file, "line 1", "the file is empty (expected a CSV header)");
  std::vector<std::string> record;
  std::string field;
  std::size_t line = 1, record_line = 1;
  bool quoted = false, was_quoted = false;
  std::size_t i = 0;
  const auto end_record = [&](bool complete) {
    record.push_back(std::move(field));
    field.clear();
    was_quoted = false;
    if (t.header.empty()) {
      t.header = std::move(record);
    } else if (record.size() != t.header.size()) {
      if (!complete && allow_torn_tail) {
        t.torn_tail = true;
      } else {
        throw InputError(file, "line " + std::to_string(record_line),
                         "expected " + std::to_string(t.header.size()) + " fields, as the header has; got " + std::to_string(record.size()));
      }
    } else {
      t.rows.push_back(std::move(record));
      t.lines.push_back(record_line);
    }
    record.clear();
  };
  while (i < text.size()) {
    const char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
    } else if (c == '"') {
      if (!field.empty() || was_quoted) {
        throw InputError(file, "line " + std::to_string(line), "a quote inside an unquoted CSV field (RFC 4180 quotes the whole field)");
      }
      quoted = was_quoted = true;
    } else if (c == ',') {
      record.push_back(std::move(field));
      field.clear();
      was_quoted = false;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      end_record(true);
      ++line;
      record_line = line;
    } else {
      field += c;
    }
    ++i;
  }
  if (quoted) {
    if (!allow_torn_tail || t.header.empty()) throw InputError(file, "line " + std::to_string(record_line), "a quoted field is not closed");
    t.torn_tail = true;
  } else if (!record.empty() || !field.empty() || was_quoted) {
    end_record(false);
  }
  if (t.header.empty()) throw InputError(file, "line 1", "the file is empty (expected a CSV header)");
  return t;
}

std::optional<double> cell_number(const std::string& cell, const std::string& file, std::size_t line, std::string_view column) {
  if (cell.empty()) return std::nullopt;
  double v = 0;
  const char* first = cell.data();
  const char* last = first + cell.size();
  const auto [ptr, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || ptr != last || !std::isfinite(v)) {
    std::string shown = cell.size() > 40 ? cell.substr(0, 37) + "..." : cell;
    throw InputError(file, "line " + std::to_string(line) + ", column " + std::string(column), "expected a number; got \"" + shown + "\"");
  }
  return v;
}

}  // namespace cs::results
