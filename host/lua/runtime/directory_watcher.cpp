#include "host/lua/runtime/directory_watcher.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "host/core/thread_guard.h"

namespace tide::lua {
namespace {

constexpr uint32_t kWatchMask =
    IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE | IN_MODIFY | IN_DELETE_SELF | IN_MOVE_SELF;
constexpr std::chrono::milliseconds kRescanInterval{1000};

bool isLuaFile(const char* name) {
  const size_t len = std::strlen(name);
  return len > 4 && std::strcmp(name + len - 4, ".lua") == 0;
}

}  // namespace

DirectoryWatcher::DirectoryWatcher(std::vector<std::filesystem::path> dirs, std::chrono::milliseconds debounce,
                                   std::function<void()> on_change)
    : dirs_(std::move(dirs)), debounce_(debounce), on_change_(std::move(on_change)) {}

DirectoryWatcher::~DirectoryWatcher() { stop(); }

Status DirectoryWatcher::start() {
  if (thread_.joinable()) return Status::ok();
  inotify_fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ < 0) return Status::unavailable(std::string("inotify_init1: ") + std::strerror(errno));
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    ::close(inotify_fd_);
    inotify_fd_ = -1;
    return Status::unavailable(std::string("eventfd: ") + std::strerror(errno));
  }
  addMissingWatches();
  thread_ = std::thread([this] { run(); });
  return Status::ok();
}

void DirectoryWatcher::stop() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
    thread_.join();
  }
  if (inotify_fd_ >= 0) ::close(inotify_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  inotify_fd_ = wake_fd_ = -1;
  watches_.clear();
}

bool DirectoryWatcher::addMissingWatches() {
  bool added = false;
  for (const auto& dir : dirs_) {
    const bool watched =
        std::any_of(watches_.begin(), watches_.end(), [&dir](const auto& entry) { return entry.second == dir; });
    if (watched) continue;
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) continue;
    const int wd = inotify_add_watch(inotify_fd_, dir.c_str(), kWatchMask);
    if (wd < 0) continue;
    watches_[wd] = dir;
    added = true;
  }
  return added;
}

bool DirectoryWatcher::drainEvents() {
  bool relevant = false;
  alignas(inotify_event) char buffer[16384];
  while (true) {
    const ssize_t n = ::read(inotify_fd_, buffer, sizeof buffer);
    if (n <= 0) break;
    for (ssize_t offset = 0; offset < n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + offset);
      offset += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      if (event->mask & IN_IGNORED) {
        watches_.erase(event->wd);  // the directory went away; rescans re-add it
        relevant = true;
      } else if (event->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_Q_OVERFLOW)) {
        relevant = true;
      } else if (event->len > 0 && isLuaFile(event->name)) {
        relevant = true;
      }
    }
  }
  return relevant;
}

void DirectoryWatcher::run() {
  using Clock = std::chrono::steady_clock;
  bool pending = false;
  Clock::time_point last_event;
  Clock::time_point last_rescan = Clock::now();
  while (true) {
    auto timeout = kRescanInterval;
    if (pending) {
      timeout = std::max(std::chrono::milliseconds(0),
                         std::chrono::duration_cast<std::chrono::milliseconds>(last_event + debounce_ - Clock::now()));
    }
    pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {inotify_fd_, POLLIN, 0}};
    const int ready = ::poll(fds, 2, static_cast<int>(timeout.count()));
    if (ready < 0 && errno != EINTR) break;
    if (fds[0].revents & POLLIN) break;
    if ((fds[1].revents & POLLIN) && drainEvents()) {
      pending = true;
      last_event = Clock::now();
    }
    if (Clock::now() - last_rescan >= kRescanInterval) {
      last_rescan = Clock::now();
      if (addMissingWatches()) {
        pending = true;
        last_event = Clock::now();
      }
    }
    if (pending && Clock::now() - last_event >= debounce_) {
      pending = false;
      // A reload that throws anyway must not end the watcher (or the host): say so, go on.
      runGuarded(on_change_, [](const std::string& what) {
        std::cerr << "tide: script watcher: reload failed with an unexpected exception: " << what << std::endl;
      });
    }
  }
}

}  // namespace tide::lua
