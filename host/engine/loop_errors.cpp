#include "host/engine/loop_errors.h"

#include <iostream>

namespace tide::engine {

void reportLoopException(ledger::Ledger& ledger, const std::string& where, const std::string& what) noexcept {
  try {
    std::cerr << "tide: " << where << ": unexpected exception: " << what << std::endl;
    // Best effort: stderr above already has it; a ledger that fails here has no better place.
    (void)ledger.audit().appendEvent("engine.error", "engine", model::Json{{"where", where}, {"exception", what}},
                                     "host");
  } catch (...) {}
}

}  // namespace tide::engine
