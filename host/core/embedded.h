#pragma once
// Files compiled into the binary by CMake's tide_embed() (see CMakeLists.txt).

#include <string_view>
#include <vector>

namespace tide::embedded {

struct File {
  std::string_view name;
  std::string_view text;
};

// db/sqlite/*.sql in migration order.
const std::vector<File>& sqliteMigrations();
// host/api/openapi.json.
const std::vector<File>& openapiDocument();

}  // namespace tide::embedded
