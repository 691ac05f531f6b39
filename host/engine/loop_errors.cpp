#include "host/engine/loop_errors.h"

#include <iostream>

namespace tide::engine {

void reportLoopException(ledger::Ledger& ledger, const std::string& where, const std::string& what) noexcept {
  try {
    std::cerr << "tide: " << where << ": unexpected exception: " << what << std::endl;
    (void)ledger.appendEvent("engine.error", "engine", model::Json{{"where", where}, {"exception", what}}, "host");
  } catch (...) {}
}

}  // namespace tide::engine
