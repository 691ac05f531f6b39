#pragma once
// The web console's files (host/api/console/assets/), compiled into the binary by CMake's
// tide_embed_bytes() (CMakeLists.txt): the host serves them with nothing read from the
// source tree or the network at run time.

#include <string_view>
#include <vector>

namespace tide::api::console {

struct Asset {
  std::string_view name;   // the file's name, without its folder: "app.js"
  std::string_view bytes;  // its content, byte for byte
};

// In the order CMakeLists.txt lists them.
const std::vector<Asset>& assets();

}  // namespace tide::api::console
