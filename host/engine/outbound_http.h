#pragma once
// What the host's own HTTP requests to other services share (metric providers, webhooks):
// splitting a URL for httplib and saying why a request got no answer.

#include <string>

#include <httplib.h>

namespace tide::engine {

// "http://host:9090/prefix" → {"http://host:9090", "/prefix"} (trailing slashes dropped);
// false when it has no scheme or no host.
bool splitUrl(const std::string& url, std::string& origin, std::string& path);

// Why a request that got no answer failed, in words, its timeout named.
std::string transportError(httplib::Error error, int timeout_ms);

}  // namespace tide::engine
