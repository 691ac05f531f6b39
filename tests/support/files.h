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

// The last `bytes` of a file's text (a log quoted in a failure, whose directory goes with the
// test).
inline std::string fileTail(const std::filesystem::path& path, size_t bytes = 4000) {
  std::string text = readFile(path);
  return text.size() > bytes ? "..." + text.substr(text.size() - bytes) : text;
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
