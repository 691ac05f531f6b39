#pragma once
// The one adapter between yaml-cpp and tide: YAML (and JSON, which is YAML) text becomes a
// plain tree that remembers where each value came from and whether a scalar was quoted.
// yaml-cpp's exceptions stop here; everything above works on YamlNode and Status.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "host/core/status.h"

namespace tide::config {

struct YamlNode {
  enum class Kind { kNull, kScalar, kSequence, kMapping };

  Kind kind = Kind::kNull;
  std::string scalar;           // kScalar: the text as written, escapes resolved
  bool quoted = false;          // kScalar: quoted or tagged !!str, so a string whatever it looks like
  int line = 1;                 // 1-based line where the value starts
  int column = 1;               // 1-based column where the value starts
  std::vector<YamlNode> items;  // kSequence
  std::vector<std::pair<YamlNode, YamlNode>> entries;  // kMapping, document order, duplicates kept

  // Defined where YamlNode is complete: clang would otherwise instantiate the vector of
  // pairs of this still-incomplete type while defining the constructor inline.
  YamlNode();
};

// Every non-empty document of `text`, in order (documents that hold nothing are skipped).
// Fails with kInvalidArgument and one detail located at "<source>:<line>:<column>" on a syntax
// error, on a value that is not UTF-8 (host/core/utf8.h: nothing downstream could write it
// as JSON), on nesting deeper than 64 levels and on documents whose aliases expand beyond
// 100k values (recursive aliases and "billion laughs").
Result<std::vector<YamlNode>> parseYamlDocuments(std::string_view text, const std::string& source);

}  // namespace tide::config
