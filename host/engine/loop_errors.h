#pragma once
// What the barrier of an engine thread's loop (host/core/thread_guard.h) does with an
// exception that escaped one round: a line on stderr and an `engine.error` event naming where
// it happened, so an operator sees it and the host keeps running.

#include <string>

#include "host/ledger/ledger.h"

namespace tide::engine {

// Never throws; a ledger that cannot take the event leaves only the stderr line.
void reportLoopException(ledger::Ledger& ledger, const std::string& where, const std::string& what) noexcept;

}  // namespace tide::engine
