#pragma once
// A directory under the system temp dir, removed with everything in it at scope exit: the
// one every test area uses (a test's data dir, scripts, sockets).

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

#include <doctest/doctest.h>

namespace tide::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tide-test-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace tide::testing
