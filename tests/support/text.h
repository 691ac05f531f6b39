#pragma once
// Small questions tests ask of text.

#include <string>

namespace tide::testing {

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace tide::testing
