#pragma once
// "Did you mean ...?" for a name the reader does not know: the manifest parsers' keys and a
// strategy's params suggest the same way, so a typo reads the same wherever it is made.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tide {

// Insertions, deletions and substitutions turning `a` into `b`.
size_t editDistance(std::string_view a, std::string_view b);

// The candidate nearest `wanted`, ignoring case, when fewer than 3 edits away (a near miss
// rather than a guess); the first such candidate on a tie; nullopt when none is that near.
std::optional<std::string> nearestName(std::string_view wanted, const std::vector<std::string_view>& candidates);

}  // namespace tide
