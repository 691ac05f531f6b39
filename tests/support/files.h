#pragma once
// Files and directories tests make and read.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tide::testing {

// A file's whole text; empty when it cannot be read.
inline std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// An empty directory of this test process under the temp dir, named after `prefix` and
// `name`: removed first, so a test run before this one leaves nothing behind in it.
inline std::filesystem::path freshDir(const std::string& prefix, const std::string& name) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tide-" + prefix + "-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace tide::testing
