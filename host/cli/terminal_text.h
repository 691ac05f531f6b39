#pragma once
// What the CLI prints comes largely from the server: names, messages, reasons, workload
// logs. Control characters in it could move the cursor, rewrite lines already shown, set
// the window title or talk to the terminal, so every print path passes through
// stripTerminalControls: verbs print through a TerminalSafeBuffer, errors are stripped
// before they are written.

#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>

namespace tide::cli {

// `text` without escape sequences (ESC and what it introduces: CSI, OSC, DCS, ..., and
// two-byte sequences), C0 controls other than \n and \t, DEL, and C1 controls (U+0080 to
// U+009F encoded as UTF-8, and bytes that are not part of a UTF-8 character).
std::string stripTerminalControls(std::string_view text);

// An output buffer that hands what is written to `target` a line at a time (and on flush),
// through stripTerminalControls. It fails when `target` does. Not thread-safe.
class TerminalSafeBuffer final : public std::streambuf {
 public:
  explicit TerminalSafeBuffer(std::ostream& target) : target_(target) {}
  ~TerminalSafeBuffer() override { sync(); }

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* text, std::streamsize size) override;
  int sync() override;

 private:
  bool flushLine();

  std::ostream& target_;
  std::string line_;
};

}  // namespace tide::cli
