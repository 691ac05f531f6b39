#pragma once
// Lists as the CLI prints them in one string: "4, 5, 6", "PENDING CANCELLED", lines.

#include <string>
#include <string_view>

namespace tide::cli {

// Each item of `items` as `text(item)` gives it, `separator` between two of them.
template <class Items, class Text>
std::string joined(const Items& items, std::string_view separator, Text text) {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += separator;
    out += text(item);
    first = false;
  }
  return out;
}

// Items that are text already (std::string, std::string_view, const char*).
template <class Items>
std::string joined(const Items& items, std::string_view separator) {
  return joined(items, separator, [](const auto& item) -> const auto& { return item; });
}

}  // namespace tide::cli
