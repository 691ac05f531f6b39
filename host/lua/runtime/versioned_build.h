#pragma once
// What an engine builds from a ScriptSet (an interpreter, the hooks' Lua state), rebuilt
// when the ScriptSetProvider publishes another version. The policy, strategy and hook
// engines all hold one, so they rebuild and fail alike: the old build is freed before the
// new one is made, a failed build leaves nothing built and is tried again on the next
// ensure(), and its error reads "cannot build the <what>: <why>".
//
// Thread-safety: none; owned by one engine.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "host/core/status.h"
#include "host/lua/runtime/script_set.h"

namespace tide::lua {

template <class Built>
class VersionedBuild {
 public:
  // `what` names the built thing in errors: "policy state".
  explicit VersionedBuild(std::string what) : what_(std::move(what)) {}

  // Makes get() the thing built from `set`: keeps it when it was built from set->version,
  // else calls `build(set)`, a Result<std::unique_ptr<Built>>(std::shared_ptr<const
  // ScriptSet>). OK when get() is usable, else the build's error (and get() is null).
  template <class Build>
  Status ensure(std::shared_ptr<const ScriptSet> set, Build&& build) {
    if (built_ && version_ == set->version) return Status::ok();
    built_.reset();  // free the old state before building the new one
    version_ = set->version;
    ++builds_;
    Result<std::unique_ptr<Built>> created = build(std::move(set));
    if (!created.isOk()) return created.status().withPrefix("cannot build the " + what_);
    built_ = std::move(created).value();
    return Status::ok();
  }

  // Frees what was built, so the next ensure() builds again whatever the version.
  void reset() { built_.reset(); }

  // Null before the first ensure(), after a failed one and after reset().
  Built* get() const { return built_.get(); }
  // The ScriptSet version get() was built from; 0 when nothing is built.
  uint64_t version() const { return built_ ? version_ : 0; }
  // How many times ensure() called its build (failed attempts included).
  uint64_t builds() const { return builds_; }

 private:
  std::string what_;
  std::unique_ptr<Built> built_;
  uint64_t version_ = 0;
  uint64_t builds_ = 0;
};

}  // namespace tide::lua
