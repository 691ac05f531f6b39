#pragma once
// SHA-256 (FIPS 180-4). Used for the event hash chain and to name script versions.
// Pure function, thread-safe.

#include <string>
#include <string_view>

namespace tide {

// Lower-case hex digest of `data`.
std::string sha256Hex(std::string_view data);

}  // namespace tide
