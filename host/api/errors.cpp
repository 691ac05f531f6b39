#include "host/api/errors.h"

#include <nlohmann/json.hpp>

namespace tide::api {

int httpStatusOf(Code code) {
  switch (code) {
    case Code::kOk: return 200;
    case Code::kInvalidArgument: return 400;
    case Code::kUnauthenticated: return 401;
    case Code::kPermissionDenied: return 403;
    case Code::kNotFound: return 404;
    case Code::kMethodNotAllowed: return 405;
    case Code::kAlreadyExists: return 409;
    case Code::kConflict: return 409;
    case Code::kPreconditionFailed: return 412;
    case Code::kPayloadTooLarge: return 413;
    case Code::kUnprocessable: return 422;
    case Code::kResourceExhausted: return 429;
    case Code::kDeadlineExceeded: return 504;
    case Code::kUnavailable: return 503;
    case Code::kInternal: return 500;
  }
  return 500;
}

std::string errorEnvelope(const Status& status) {
  nlohmann::json details = nlohmann::json::array();
  for (const ErrorDetail& detail : status.details()) {
    details.push_back({{"field", detail.field}, {"message", detail.message}, {"location", detail.location}});
  }
  nlohmann::json envelope = {
      {"error", {{"code", codeName(status.code())}, {"message", status.message()}, {"details", details}}}};
  // Messages may quote client input; invalid UTF-8 is replaced rather than thrown on.
  return envelope.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Status statusForTransportError(int http_status, const std::string& method, const std::string& path) {
  switch (http_status) {
    case 404: return Status::notFound("no route for " + method + " " + path);
    case 413: return Status::payloadTooLarge("request body is larger than the server accepts");
    case 400: return Status::invalidArgument("malformed HTTP request");
    case 414: return Status::invalidArgument("the request target is longer than the server accepts");
    case 503: return Status::unavailable("server is shutting down");
    default: return Status::internal("HTTP " + std::to_string(http_status) + " while serving " + method + " " + path);
  }
}

}  // namespace tide::api
