#pragma once
// Running a strategy's own `tests` table (test_table.h). Used when a strategy is
// (re)loaded — a version whose tests fail never becomes active — and by `tide scripts test`.
//
// A case:
//   { name = "surge 1 creates one extra instance first",
//     r = { count = 3, params = { max_surge = 1 },          -- a rollout snapshot fixture
//           old = { { name = "web-a", state = "RUNNING", healthy = true } } },
//     expect = { create(1) },          -- exactly these actions, in any order
//     expect_state = { step = 1 },              -- optional: fields r.state must end with
//     check = function(actions, state) ... end, -- optional: false or an error fails
//     expect_error = "max_surge" }     -- or: reconcile must fail with this text
// The fixture `r` is a snapshot (strategy_engine.h) with shorthands: `count` for
// deployment.count, `params` for deployment_params, `new` and `old` for instances of that
// version, and `now` as unix seconds or RFC 3339. Without `now`, cases run at
// kDefaultTestNow. A case in which reconcile errors fails unless it expected the error.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/core/status.h"
#include "host/lua/runtime/lua_state.h"
#include "host/lua/runtime/script_set.h"
#include "host/lua/runtime/test_table.h"

namespace tide::lua {

// The snapshot a test fixture stands for (the shorthands above expanded).
Result<nlohmann::json> fixtureSnapshot(const nlohmann::json& fixture);

// Loads `strategy` with the libs of `libs` in a fresh state (the production loader and
// sandbox) and runs its cases. An error Status means the file, its params declaration or
// its tests table could not be loaded; failing cases are results with passed == false.
Result<std::vector<CaseResult>> runStrategyFileTests(const ScriptFile& strategy, const ScriptSet& libs,
                                                     const LuaLimits& limits);

}  // namespace tide::lua
