#include <doctest/doctest.h>

#include "host/cli/client.h"

using namespace tide;
using namespace tide::cli;

TEST_CASE("cli: the error envelope becomes a Status with the server's code and details") {
  Status status = statusFromErrorResponse(
      400, R"({"error":{"code":"invalid_argument","message":"request body:3: nodes[0].name: required",
               "details":[{"field":"nodes[0].name","message":"required","location":"request body:3"}]}})");
  CHECK(status.code() == Code::kInvalidArgument);
  CHECK(status.message() == "request body:3: nodes[0].name: required");
  REQUIRE(status.details().size() == 1);
  CHECK(status.details()[0] == ErrorDetail{"nodes[0].name", "required", "request body:3"});

  CHECK(statusFromErrorResponse(409, R"({"error":{"code":"conflict","message":"stale"}})").code() == Code::kConflict);
}

TEST_CASE("cli: an error reply without an envelope is classified by its HTTP status") {
  Status not_found = statusFromErrorResponse(404, "<html>nope</html>");
  CHECK(not_found.code() == Code::kNotFound);
  CHECK(not_found.message() == "HTTP 404: <html>nope</html>");
  CHECK(statusFromErrorResponse(502, "").code() == Code::kInternal);
  CHECK(statusFromErrorResponse(401, R"({"error":{"code":"no_such_code","message":"who?"}})").code() ==
        Code::kUnauthenticated);
}

TEST_CASE("cli: path segments are percent-encoded") {
  CHECK(pathSegment("kind-worker_1.a~") == "kind-worker_1.a~");
  CHECK(pathSegment("../a b/c") == "..%2Fa%20b%2Fc");
}
