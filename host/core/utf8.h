#pragma once
// Well-formed UTF-8 (RFC 3629), the rule nlohmann/json applies when it serialises a string:
// text that passes here can always be written as JSON. One rule, one place.

#include <cstddef>
#include <string_view>

namespace tide {

// The length (1 to 4) of the well-formed sequence `text` starts with, or 0 when it starts
// with a byte that begins none: a stray continuation byte, a truncated sequence, an overlong
// form, a UTF-16 surrogate or a code point past U+10FFFF. 0 for empty text.
size_t utf8SequenceLength(std::string_view text);

// The offset of the first byte of `text` that is not part of well-formed UTF-8, or npos.
size_t firstInvalidUtf8(std::string_view text);

}  // namespace tide
