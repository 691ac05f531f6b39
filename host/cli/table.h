#pragma once
// Plain-text output of the CLI, shaped like mrds-ctl's so MRDS users read it at a glance:
// bordered tables (`+---+`, centered cells, multi-line cells, a `Total: N` line) and
// "Key: value" info blocks under a heading. No colours: output is the same on a terminal,
// in a pipe and in a test.

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace tide::cli {

struct TableStyle {
  bool row_separator = false;  // a border line between rows (for multi-line cells)
  bool align_left = false;     // cells flush left instead of centered (headers stay centered)
  bool show_total = true;      // the "Total: N" line under the table
};

class Table {
 public:
  explicit Table(std::vector<std::string> headers, TableStyle style = {});

  // A row with fewer cells than headers is padded with empty cells; '\n' in a cell
  // starts another line within the row.
  void addRow(std::vector<std::string> cells);
  size_t rowCount() const { return rows_.size(); }

  void print(std::ostream& out) const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
  TableStyle style_;
};

// A section title ("Deployment Plan Info").
void printHeading(std::ostream& out, std::string_view title);

// "Key:" padded so that values start in one column, then the value; an empty value reads
// "<unset>", and the lines of a multi-line value line up under the first. `indented`
// shifts the key right, for the fields of a sub-section such as "Status".
void printField(std::ostream& out, std::string_view key, std::string_view value, bool indented = false);

// Number formatting shared by every view: "4", "0.5", "15.25" (no trailing zeros).
std::string formatNumber(double value);

}  // namespace tide::cli
