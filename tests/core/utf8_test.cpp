// Well-formed UTF-8 (host/core/utf8.h): what nlohmann/json can serialise.

#include <doctest/doctest.h>

#include <string>

#include "host/core/utf8.h"

using tide::firstInvalidUtf8;
using tide::utf8SequenceLength;

TEST_CASE("utf8: each well-formed sequence has its length, anything else 0") {
  CHECK(utf8SequenceLength("a") == 1);
  CHECK(utf8SequenceLength("\xC3\xA9") == 2);          // é
  CHECK(utf8SequenceLength("\xE2\x82\xAC") == 3);      // €
  CHECK(utf8SequenceLength("\xF0\x9F\x8C\x8A") == 4);  // 🌊
  CHECK(utf8SequenceLength("\xF4\x8F\xBF\xBF") == 4);  // U+10FFFF
  CHECK(utf8SequenceLength("") == 0);
  CHECK(utf8SequenceLength("\x80") == 0);              // a continuation byte first
  CHECK(utf8SequenceLength("\xF2") == 0);              // truncated
  CHECK(utf8SequenceLength("\xE2\x82") == 0);          // truncated
  CHECK(utf8SequenceLength("\xC3(") == 0);             // not a continuation byte
  CHECK(utf8SequenceLength("\xC0\xAF") == 0);          // overlong '/'
  CHECK(utf8SequenceLength("\xE0\x80\xAF") == 0);      // overlong '/'
  CHECK(utf8SequenceLength("\xED\xA0\x80") == 0);      // U+D800, a surrogate
  CHECK(utf8SequenceLength("\xF4\x90\x80\x80") == 0);  // past U+10FFFF
  CHECK(utf8SequenceLength("\xF8\x88\x80\x80\x80") == 0);
}

TEST_CASE("utf8: firstInvalidUtf8 finds the first byte outside well-formed text") {
  CHECK(firstInvalidUtf8("") == std::string::npos);
  CHECK(firstInvalidUtf8("plain ascii") == std::string::npos);
  CHECK(firstInvalidUtf8("caf\xC3\xA9 \xE2\x82\xAC") == std::string::npos);
  CHECK(firstInvalidUtf8("ab\xF2\xF2") == 2);
  CHECK(firstInvalidUtf8("\xC3\xA9\xED\xA0\x80") == 2);
  CHECK(firstInvalidUtf8(std::string("a\0b", 3)) == std::string::npos);
}
