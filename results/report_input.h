// What `clustersim report` reads: the input named on the command line, and the tables inside it.
// The kind of input (a run folder, a sweep's results file, ...) is told from its content by the
// report kinds (results/report_kinds.h), never from its name.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cs::results {

// The input as found: a folder, or a file's whole text (read with the input size cap).
struct ReportSource {
  std::string path;
  bool folder = false;
  std::string text;  // a file's contents; empty for a folder

  std::string_view first_line() const;  // without its line break
};

// Opens `path`: InputError naming it when there is nothing there or it cannot be read.
ReportSource open_report_source(const std::string& path);

// A CSV table (RFC 4180, as clustersim writes them: quoted fields may hold commas, quotes and
// line breaks; an empty field is empty). Every row must have the header's number of fields: an
// InputError names `file` and the row's line otherwise. A last line without its line break that
// is not a whole row (a file still being written, or a writer killed) is left out and counted in
// `torn_tail`; with `allow_torn_tail` false it is an error like any other.
struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::size_t> lines;  // the line each row starts on (1-based)
  bool torn_tail = false;

  // The index of a header column, if there is one of that name.
  std::optional<std::size_t> column(std::string_view name) const;
};
CsvTable parse_csv(std::string_view text, const std::string& file, bool allow_torn_tail = false);
// A field as a CSV writer puts it (RFC 4180, what parse_csv reads back): quoted, with quotes
// doubled, when it holds a separator, a quote, a line break or spaces at its ends.
std::string csv_quoted(std::string_view text);

// A number in a table cell: nothing for an empty cell, an InputError naming `file`, the line and
// the column for anything else that is not a finite number.
std::optional<double> cell_number(const std::string& cell, const std::string& file, std::size_t line, std::string_view column);

}  // namespace cs::results
