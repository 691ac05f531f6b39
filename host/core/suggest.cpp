#include "host/core/suggest.h"

#include <algorithm>
#include <cctype>

namespace tide {
namespace {

constexpr size_t kNearMiss = 3;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string> nearestName(std::string_view wanted, const std::vector<std::string_view>& candidates) {
  std::optional<std::string> best;
  size_t best_distance = kNearMiss;
  const std::string folded = lower(wanted);
  for (std::string_view candidate : candidates) {
    // The distance is at least the difference in length: a name of 100 KiB costs nothing.
    const size_t longer = std::max(folded.size(), candidate.size());
    if (longer - std::min(folded.size(), candidate.size()) >= best_distance) continue;
    const size_t distance = editDistance(folded, lower(candidate));
    if (distance < best_distance) best_distance = distance, best = std::string(candidate);
  }
  return best;
}

}  // namespace tide
