#pragma once
// Running a policy's own `tests` table (test_table.h). Used when a policy is (re)loaded —
// a version whose tests fail never becomes active — and by `tide scripts test`.
//
// A case:
//   { name = "prod deletes wait for a human",
//     op = { type = "DELETE", plan = { namespace = "prod-web" } },  -- normalized like
//                                                                   -- production ops
//     ctx = { now = "2026-03-03T10:00:00Z", in_flight = 1 },        -- a SnapshotDataSource
//                                                                   -- fixture
//     expect = "manual",          -- approve | deny | manual | abstain | not_applicable
//     reason = "need a human" }   -- optional: text the verdict's reason must contain
// A case whose policy errors fails, whatever it expected. Without ctx.now, cases run at
// kDefaultTestNow.

#include <vector>

#include "host/core/status.h"
#include "host/lua/runtime/lua_state.h"
#include "host/lua/runtime/script_set.h"
#include "host/lua/runtime/test_table.h"

namespace tide::lua {

// Loads `policy` with the libs of `libs` in a fresh state (the production loader and
// sandbox) and runs its cases. An error Status means the file or its tests table could not
// be loaded; failing cases are results with passed == false.
Result<std::vector<CaseResult>> runPolicyFileTests(const ScriptFile& policy, const ScriptSet& libs,
                                                   const LuaLimits& limits);

}  // namespace tide::lua
