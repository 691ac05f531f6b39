#pragma once
// Watches directories with inotify and calls back, debounced, when a *.lua file in them
// changes (created, written, renamed, deleted). Runs its own thread between start() and
// stop(). A directory that does not exist yet (or is removed and recreated) is picked up
// within about a second, followed by a callback.
//
// Thread-safety: start()/stop() from one owning thread. The callback runs on the watcher
// thread; it must be thread-safe with respect to the rest of the program.

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <thread>
#include <vector>

#include "host/core/status.h"

namespace tide::lua {

class DirectoryWatcher {
 public:
  DirectoryWatcher(std::vector<std::filesystem::path> dirs, std::chrono::milliseconds debounce,
                   std::function<void()> on_change);
  ~DirectoryWatcher();  // stop()s
  DirectoryWatcher(const DirectoryWatcher&) = delete;
  DirectoryWatcher& operator=(const DirectoryWatcher&) = delete;

  Status start();
  // Idempotent; joins the thread. A callback in progress finishes first.
  void stop();

 private:
  void run();
  bool addMissingWatches();  // true when a directory was newly watched
  bool drainEvents();        // true when a relevant event arrived

  std::vector<std::filesystem::path> dirs_;
  std::chrono::milliseconds debounce_;
  std::function<void()> on_change_;
  int inotify_fd_ = -1;
  int wake_fd_ = -1;
  std::map<int, std::filesystem::path> watches_;  // watch descriptor -> directory
  std::thread thread_;
};

}  // namespace tide::lua
