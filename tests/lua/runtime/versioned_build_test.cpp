#include "host/lua/runtime/versioned_build.h"
#include <doctest/doctest.h>

#include <memory>

using namespace tide;
using namespace tide::lua;

namespace {

struct Built {
  uint64_t from_version = 0;
};

std::shared_ptr<const ScriptSet> setAt(uint64_t version) {
  auto set = std::make_shared<ScriptSet>();
  set->version = version;
  return set;
}

}  // namespace

TEST_CASE("lua: a versioned build is rebuilt only for another set version, and a failed build is retried") {
  VersionedBuild<Built> build("test state");
  int builds = 0;
  bool fail = false;
  auto make = [&](std::shared_ptr<const ScriptSet> set) -> Result<std::unique_ptr<Built>> {
    ++builds;
    if (fail) return Status::resourceExhausted("out of memory");
    return std::make_unique<Built>(Built{set->version});
  };
  CHECK(build.get() == nullptr);
  CHECK(build.version() == 0);

  REQUIRE(build.ensure(setAt(1), make).isOk());
  REQUIRE(build.ensure(setAt(1), make).isOk());
  CHECK(builds == 1);
  CHECK(build.get()->from_version == 1);
  CHECK(build.version() == 1);

  fail = true;
  const Status failed = build.ensure(setAt(2), make);
  CHECK(failed.code() == Code::kResourceExhausted);
  CHECK(failed.message() == "cannot build the test state: out of memory");
  CHECK(build.get() == nullptr);  // the old build is gone, not kept for the new version
  CHECK(build.version() == 0);

  fail = false;
  REQUIRE(build.ensure(setAt(2), make).isOk());
  CHECK(builds == 3);
  CHECK(build.builds() == 3);
  CHECK(build.get()->from_version == 2);
}

TEST_CASE("lua: a reset versioned build is built again for the same set version") {
  VersionedBuild<Built> build("test state");
  auto make = [](std::shared_ptr<const ScriptSet> set) -> Result<std::unique_ptr<Built>> {
    return std::make_unique<Built>(Built{set->version});
  };
  REQUIRE(build.ensure(setAt(4), make).isOk());
  build.reset();
  CHECK(build.get() == nullptr);
  CHECK(build.version() == 0);
  REQUIRE(build.ensure(setAt(4), make).isOk());
  CHECK(build.builds() == 2);
  CHECK(build.get()->from_version == 4);
}
