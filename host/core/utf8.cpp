#include "host/core/utf8.h"

#include <cstdint>

namespace tide {

size_t utf8SequenceLength(std::string_view text) {
  if (text.empty()) return 0;
  const auto lead = static_cast<unsigned char>(text[0]);
  if (lead < 0x80) return 1;
  const size_t len = (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || len > text.size()) return 0;
  uint32_t code_point = lead & (0xFF >> (len + 1));
  for (size_t k = 1; k < len; ++k) {
    const auto next = static_cast<unsigned char>(text[k]);
    if ((next >> 6) != 0x2) return 0;
    code_point = (code_point << 6) | (next & 0x3F);
  }
  const uint32_t shortest[] = {0, 0, 0x80, 0x800, 0x10000};
  const bool ok = code_point >= shortest[len] && code_point <= 0x10FFFF && (code_point < 0xD800 || code_point > 0xDFFF);
  return ok ? len : 0;
}

size_t firstInvalidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t len = utf8SequenceLength(text.substr(i));
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

}  // namespace tide
