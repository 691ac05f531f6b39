#pragma once
// The one place that decides what HTTP status and body a client sees for a Status.
// Handlers return Status values; only this file knows the numbers.

#include <string>

#include "host/core/status.h"

namespace tide::api {

// 400 invalid_argument, 401 unauthenticated, 403 permission_denied, 404 not_found,
// 409 already_exists / conflict, 413 payload_too_large, 422 unprocessable,
// 429 resource_exhausted, 503 unavailable, 504 deadline_exceeded, 500 internal (and OK
// mapped to 200, which callers never ask for).
int httpStatusOf(Code code);

// The error envelope:
// {"error":{"code":"invalid_argument","message":"...","details":[{"field","message","location"}]}}
// `details` is always present, possibly empty. REQUIRES: !status.isOk().
std::string errorEnvelope(const Status& status);

// The Status a bare HTTP error produced by the transport itself (a body over the limit,
// an unparsable request, no route) stands for, so it can be rendered like any other.
Status statusForTransportError(int http_status, const std::string& method, const std::string& path);

}  // namespace tide::api
