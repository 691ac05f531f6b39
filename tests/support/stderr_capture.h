#pragma once
// This process's stderr sent to a file for a scope, for tests of what the host logs there.
// Only for test processes that run one test at a time (ctest runs each case alone).

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tide::testing {

class StderrCapture {
 public:
  StderrCapture()
      : path_(std::filesystem::temp_directory_path() / ("tide-stderr-" + std::to_string(::getpid()))) {
    std::fflush(stderr);
    saved_ = ::dup(STDERR_FILENO);
    const int file = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (file >= 0) {
      ::dup2(file, STDERR_FILENO);
      ::close(file);
    }
  }
  ~StderrCapture() {
    std::fflush(stderr);
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  // What was written so far.
  std::string text() const {
    std::stringstream read;
    read << std::ifstream(path_).rdbuf();
    return read.str();
  }

 private:
  std::filesystem::path path_;
  int saved_ = -1;
};

}  // namespace tide::testing
