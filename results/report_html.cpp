#include "results/report_html.h"

#include "core/config.h"
#include "core/errors.h"
#include "results/report_kinds.h"

namespace cs::results {
namespace {

// The kinds, tried in order; the first that recognizes the content fills the page.
constexpr ReportKind kReportKinds[] = {
    {"serving folder (clustersim serve --out)", is_serving_folder, serving_folder_report},
    {"run folder (clustersim run --out)", is_run_folder, run_folder_report},
    {"sweep results (clustersim sweep)", is_sweep_results, sweep_results_report},
    {"sizing result (clustersim size --json)", is_size_result, size_result_report},
};

[[noreturn]] void unrecognized(const ReportSource& s) {
  const std::string_view first = s.first_line();
  const std::size_t lead = first.find_first_not_of(" \t\xEF\xBB\xBF");
  if (lead != std::string_view::npos && (first[lead] == '{' || first[lead] == '[')) {
    // JSON, but not a kind we know: a syntax error names its line; a valid document is refused whole.
    (void)ConfigDocument::parse(s.text, s.path);
    throw InputError(s.path, "/", "a JSON document that is not a report input (a run folder, or a sweep's results file in CSV or JSON Lines)");
  }
  throw InputError(s.path, "line 1",
                   "not a report input: expected a `clustersim run --out` folder or a sweep's results file (a CSV header "
                   "\"point,...,status,reason,...\" or JSON Lines rows {\"point\": ...})");
}

}  // namespace

std::string report_html(const std::string& path) {
  const ReportSource source = open_report_source(path);
  for (const ReportKind& kind : kReportKinds) {
    if (!kind.recognizes(source)) continue;
    ReportPage page;
    page.title = "clustersim report";
    page.kind = kind.name;
    page.input = path;
    kind.fill(source, page);
    return render_report_page(page);
  }
  unrecognized(source);
}

}  // namespace cs::results
