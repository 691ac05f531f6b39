#include "host/cli/terminal_text.h"

namespace tide::cli {
namespace {

constexpr unsigned char kEscape = 0x1b;
constexpr unsigned char kBell = 0x07;

bool between(unsigned char c, unsigned char low, unsigned char high) { return c >= low && c <= high; }

// The index just past the escape sequence that starts at text[start] (an ESC).
size_t skipEscape(std::string_view text, size_t start) {
  size_t i = start + 1;
  if (i >= text.size()) return i;
  const unsigned char kind = static_cast<unsigned char>(text[i++]);
  if (kind == '[') {  // CSI: parameters, intermediates, one final byte
    while (i < text.size() && between(static_cast<unsigned char>(text[i]), 0x20, 0x3f)) ++i;
    if (i < text.size() && between(static_cast<unsigned char>(text[i]), 0x40, 0x7e)) ++i;
    return i;
  }
  if (std::string_view("]PX^_").find(static_cast<char>(kind)) != std::string_view::npos) {
    // OSC, DCS, SOS, PM, APC: a string ended by BEL or ST (ESC \).
    for (; i < text.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(text[i]);
      if (c == kBell) return i + 1;
      if (c == kEscape) return i + 1 < text.size() && text[i + 1] == '\\' ? i + 2 : i + 1;
    }
    return i;
  }
  // Two-byte sequences, with intermediates (ESC ( B, ESC c, ESC 7, ...).
  size_t j = i - 1;
  while (j < text.size() && between(static_cast<unsigned char>(text[j]), 0x20, 0x2f)) ++j;
  if (j < text.size() && between(static_cast<unsigned char>(text[j]), 0x30, 0x7e)) ++j;
  return j;
}

// The length of the UTF-8 character at text[i] (a byte >= 0x80), 0 when it is not one.
size_t utf8Length(std::string_view text, size_t i) {
  const unsigned char lead = static_cast<unsigned char>(text[i]);
  const size_t length = between(lead, 0xc2, 0xdf)   ? 2
                        : between(lead, 0xe0, 0xef) ? 3
                        : between(lead, 0xf0, 0xf4) ? 4
                                                    : 0;
  if (length == 0 || i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if (!between(static_cast<unsigned char>(text[i + k]), 0x80, 0xbf)) return 0;
  }
  return length;
}

}  // namespace

std::string stripTerminalControls(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == kEscape) {
      i = skipEscape(text, i);
    } else if (c < 0x20 || c == 0x7f) {
      if (c == '\n' || c == '\t') out += static_cast<char>(c);
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else if (size_t length = utf8Length(text, i); length == 0) {
      ++i;  // a lone byte: in an 8-bit terminal 0x80..0x9f are controls
    } else {
      // U+0080..U+009F are C2 80..C2 9F.
      const bool c1 = c == 0xc2 && static_cast<unsigned char>(text[i + 1]) <= 0x9f;
      if (!c1) out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

TerminalSafeBuffer::int_type TerminalSafeBuffer::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  line_ += traits_type::to_char_type(c);
  if (c == '\n' && !flushLine()) return traits_type::eof();
  return c;
}

std::streamsize TerminalSafeBuffer::xsputn(const char* text, std::streamsize size) {
  for (std::streamsize i = 0; i < size; ++i) {
    if (traits_type::eq_int_type(overflow(traits_type::to_int_type(text[i])), traits_type::eof())) return i;
  }
  return size;
}

int TerminalSafeBuffer::sync() {
  if (!flushLine()) return -1;
  target_.flush();
  return target_ ? 0 : -1;
}

bool TerminalSafeBuffer::flushLine() {
  if (!line_.empty()) target_ << stripTerminalControls(line_);
  line_.clear();
  return static_cast<bool>(target_);
}

}  // namespace tide::cli
