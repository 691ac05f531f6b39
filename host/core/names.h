#pragma once
// Names of user-facing records end up in file paths, process titles and URLs, so they
// are restricted to [a-z0-9][a-z0-9._-]{0,62}. One rule, one place.

#include <string>
#include <string_view>

namespace tide {

bool isValidName(std::string_view name);

// Empty when `name` is valid, otherwise the reason (for an ErrorDetail message).
std::string nameProblem(std::string_view name);

// `<prefix>-<n random lower-case alphanumerics>`, e.g. meta instance names.
std::string randomName(std::string_view prefix, int n = 10);

}  // namespace tide
