#pragma once
// Whole numbers read from text: query parameters, path ids, header values.

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tide {

// The int64 that all of `text` spells in decimal, with an optional '-' ("42", "-3"); nullopt
// when it is empty, holds anything else, or is beyond int64.
inline std::optional<int64_t> parseWholeNumber(std::string_view text) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace tide
