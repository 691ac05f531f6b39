#include <sstream>

#include <doctest/doctest.h>

#include "host/cli/table.h"

using namespace tide::cli;

namespace {
std::string render(const Table& table) {
  std::ostringstream out;
  table.print(out);
  return out.str();
}
}  // namespace

TEST_CASE("cli: a table centers cells, grows rows for multi-line cells and counts its rows") {
  Table table({"Name", "Ports"});
  table.addRow({"web", "TCP:80\nUDP:53"});
  table.addRow({"db", "TCP:5432"});
  CHECK(render(table) ==
        "+------+----------+\n"
        "| Name |  Ports   |\n"
        "+------+----------+\n"
        "| web  |  TCP:80  |\n"
        "|      |  UDP:53  |\n"
        "|  db  | TCP:5432 |\n"
        "+------+----------+\n"
        "Total: 2\n");
}

TEST_CASE("cli: a table with row separators, left alignment and no total") {
  Table table({"Key", "Value"}, {.row_separator = true, .align_left = true, .show_total = false});
  table.addRow({"a", "one\ntwo"});
  table.addRow({"bb"});  // missing cells are empty
  CHECK(render(table) ==
        "+-----+-------+\n"
        "| Key | Value |\n"
        "+-----+-------+\n"
        "| a   | one   |\n"
        "|     | two   |\n"
        "+-----+-------+\n"
        "| bb  |       |\n"
        "+-----+-------+\n");
}

TEST_CASE("cli: an empty table still shows its headers and a zero total") {
  CHECK(render(Table({"Node Name"})) ==
        "+-----------+\n"
        "| Node Name |\n"
        "+-----------+\n"
        "Total: 0\n");
}

TEST_CASE("cli: multi-byte characters take one column each") {
  Table table({"X"});
  table.addRow({"é—"});
  CHECK(render(table) ==
        "+----+\n"
        "| X  |\n"
        "+----+\n"
        "| é— |\n"
        "+----+\n"
        "Total: 1\n");
}

TEST_CASE("cli: info fields line up, show <unset> for empty values and indent sub-sections") {
  std::ostringstream out;
  printHeading(out, "Status");
  printField(out, "State", "PENDING", true);
  printField(out, "Message", "");
  printField(out, "Lines", "first\nsecond");
  CHECK(out.str() ==
        "Status\n"
        "    State:                PENDING\n"
        "Message:                  <unset>\n"
        "Lines:                    first\n"
        "                          second\n");
}

TEST_CASE("cli: numbers print without trailing zeros") {
  CHECK(formatNumber(4) == "4");
  CHECK(formatNumber(0.5) == "0.5");
  CHECK(formatNumber(15.25) == "15.25");
  CHECK(formatNumber(1024) == "1024");
}
