#pragma once
// Tests name states and operation types by their wire strings; this reads one as its enum.

#include <doctest/doctest.h>

#include <optional>
#include <string_view>

#include "host/model/states.h"

namespace tide::testing {

// The value `text` spells ("RUNNING" as a RuntimeState); fails the test when E has none.
template <model::Vocabulary E>
E parsed(std::string_view text) {
  const std::optional<E> value = model::parse<E>(text);
  REQUIRE_MESSAGE(value.has_value(), "no ", model::Spelling<E>::kWhat, " '", text, "'");
  return value.value_or(E{});
}

}  // namespace tide::testing
