#include "host/cli/table.h"

#include <algorithm>
#include <cstdio>

namespace tide::cli {
namespace {

constexpr size_t kKeyColumn = 26;
constexpr std::string_view kIndent = "    ";

// Terminal columns of UTF-8 text: one per code point (continuation bytes take none).
size_t displayWidth(std::string_view text) {
  return static_cast<size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (true) {
    size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return lines;
    start = end + 1;
  }
}

std::string pad(const std::string& text, size_t width, bool centered) {
  size_t gap = width - std::min(width, displayWidth(text));
  size_t left = centered ? gap / 2 : 0;
  return std::string(left, ' ') + text + std::string(gap - left, ' ');
}

}  // namespace

Table::Table(std::vector<std::string> headers, TableStyle style) : headers_(std::move(headers)), style_(style) {}

void Table::addRow(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

void Table::print(std::ostream& out) const {
  std::vector<std::vector<std::vector<std::string>>> split_rows;
  std::vector<size_t> widths;
  for (const auto& header : headers_) widths.push_back(displayWidth(header));
  for (const auto& row : rows_) {
    auto& split = split_rows.emplace_back();
    for (size_t i = 0; i < row.size(); ++i) {
      split.push_back(splitLines(row[i]));
      for (const auto& line : split.back()) widths[i] = std::max(widths[i], displayWidth(line));
    }
  }

  std::string border = "+";
  for (size_t width : widths) border += std::string(width + 2, '-') + "+";
  auto printLine = [&](const std::vector<std::string>& cells, bool centered) {
    out << '|';
    for (size_t i = 0; i < cells.size(); ++i) out << ' ' << pad(cells[i], widths[i], centered) << " |";
    out << '\n';
  };

  out << border << '\n';
  printLine(headers_, true);
  out << border << '\n';
  for (size_t r = 0; r < split_rows.size(); ++r) {
    const auto& cells = split_rows[r];
    size_t height = 0;
    for (const auto& lines : cells) height = std::max(height, lines.size());
    for (size_t l = 0; l < height; ++l) {
      std::vector<std::string> line;
      for (const auto& lines : cells) line.push_back(l < lines.size() ? lines[l] : "");
      printLine(line, !style_.align_left);
    }
    bool last = r + 1 == split_rows.size();
    if (style_.row_separator || last) out << border << '\n';
  }
  if (style_.show_total) out << "Total: " << rows_.size() << '\n';
}

void printHeading(std::ostream& out, std::string_view title) { out << title << '\n'; }

void printField(std::ostream& out, std::string_view key, std::string_view value, bool indented) {
  std::string_view indent = indented ? kIndent : "";
  std::string label = std::string(key) + ":";
  label.resize(std::max(kKeyColumn - indent.size(), label.size() + 1), ' ');
  auto lines = splitLines(value.empty() ? "<unset>" : std::string(value));
  out << indent << label << lines.front() << '\n';
  for (size_t i = 1; i < lines.size(); ++i) out << indent << std::string(label.size(), ' ') << lines[i] << '\n';
}

std::string formatNumber(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.10g", value);
  return buffer;
}

}  // namespace tide::cli
