#include "host/cli/log_follow.h"

#include <algorithm>
#include <vector>

namespace tide::cli {
namespace {

// The length of the longest prefix of `head` that is also a suffix of `tail`: Knuth-Morris-
// Pratt, matching `head` along `tail`, in time linear in both.
size_t overlap(std::string_view tail, std::string_view head) {
  head = head.substr(0, std::min(head.size(), tail.size()));
  if (head.empty()) return 0;
  std::vector<size_t> fallback(head.size(), 0);  // longest proper border of head[0..i]
  for (size_t i = 1, k = 0; i < head.size(); ++i) {
    while (k > 0 && head[i] != head[k]) k = fallback[k - 1];
    if (head[i] == head[k]) ++k;
    fallback[i] = k;
  }
  size_t matched = 0;
  for (char c : tail) {
    if (matched == head.size()) matched = fallback[matched - 1];
    while (matched > 0 && c != head[matched]) matched = fallback[matched - 1];
    if (c == head[matched]) ++matched;
  }
  return matched;
}

}  // namespace

LogUpdate logUpdate(std::string_view before, std::string_view now, size_t window) {
  if (now.size() < window) {
    // `now` is the whole log: it continues `before` exactly when it starts with it.
    if (now.starts_with(before)) return {std::string(now.substr(before.size())), false};
    return {std::string(now), true};
  }
  if (before.empty()) return {std::string(now), false};
  const size_t shared = overlap(before, now);
  if (shared == 0) return {std::string(now), true};
  return {std::string(now.substr(shared)), false};
}

}  // namespace tide::cli
