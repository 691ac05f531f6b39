#include <doctest/doctest.h>

#include "host/core/names.h"

using tide::isValidName;

TEST_CASE("names follow [a-z0-9][a-z0-9._-]{0,62}") {
  CHECK(isValidName("kind-worker2"));
  CHECK(isValidName("nginx-deployment-plan"));
  CHECK(isValidName("a"));
  CHECK(isValidName("v1.2_3"));
  CHECK_FALSE(isValidName(""));
  CHECK_FALSE(isValidName("Kind"));
  CHECK_FALSE(isValidName("-lead"));
  CHECK_FALSE(isValidName("../etc"));
  CHECK_FALSE(isValidName("a/b"));
  CHECK_FALSE(isValidName("a..b"));
  CHECK_FALSE(isValidName(std::string(64, 'a')));
  CHECK(isValidName(std::string(63, 'a')));
  CHECK(tide::nameProblem("UPPER").find("lower-case") != std::string::npos);
}

TEST_CASE("random names keep the prefix and stay valid") {
  auto a = tide::randomName("nginx-service");
  auto b = tide::randomName("nginx-service");
  CHECK(a.rfind("nginx-service-", 0) == 0);
  CHECK(a.size() == std::string("nginx-service-").size() + 10);
  CHECK(isValidName(a));
  CHECK(a != b);
}
