#pragma once
// Reading a request's query parameters, headers and body into typed values. Every failure
// is kInvalidArgument with a detail whose `field` names the parameter, header or body.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/api/handler.h"
#include "host/core/status.h"
#include "host/ledger/ledger.h"

namespace tide::api {

// The `source` handed to the manifest parsers, so locations read "request body:3:5", when
// the client does not name its file (readSourceParam).
inline const std::string kBodySource = "request body";

// The `source` query parameter: the name of the file the body was read from, for error
// locations ("nodes.yaml:3:5"); kBodySource when absent. kInvalidArgument when longer than
// 1024 bytes, not UTF-8 or holding a control character (it is echoed into messages).
Result<std::string> readSourceParam(const ApiRequest& request);

// A filter a list route accepts: the query parameter, which is also the ledger's filter
// key, and the values it may take (any when empty). An empty value means "no filter".
// `any_of`: the value may be a comma-separated list, matching any of them, each allowed.
struct QueryFilter {
  std::string name;
  std::vector<std::string> allowed = {};
  bool any_of = false;
};

// kInvalidArgument: "query parameter '<name>' <message>", the detail naming it.
Status badParam(const std::string& name, const std::string& message);

// kInvalidArgument naming the first query parameter not in `accepted`.
Status acceptOnly(const ApiRequest& request, std::initializer_list<std::string_view> accepted);

// `limit` (1..1000, default 100), `after` (>= 0, default 0) and `filters`. Any other query
// parameter is rejected unless listed in `extra` (the caller reads those itself).
Result<ledger::ListOptions> readListOptions(const ApiRequest& request, const std::vector<QueryFilter>& filters,
                                            std::initializer_list<std::string_view> extra = {});

// The `since` and `until` query parameters of a list (docs/api.md#filtering-events-and-operations) into
// options.filters, as timestamps the ledger compares: each an RFC 3339 UTC timestamp
// ("2026-11-21T12:00:00Z", milliseconds optional) or a span back from `now` ("30m", "2h",
// "7d": parseWholeDuration). An empty value means no bound. kInvalidArgument naming the
// parameter for anything else, and naming `until` when it is not later than `since`.
// The caller lets readListOptions accept them (`extra`).
Status readTimeWindow(const ApiRequest& request, TimePoint now, ledger::ListOptions& options);

// An optional integer query parameter within [min, max]; nullopt when absent.
Result<std::optional<int64_t>> readIntegerParam(const ApiRequest& request, const std::string& name, int64_t min,
                                                int64_t max);

// An optional integer header (empty `value`: absent) within [min, max].
Result<std::optional<int64_t>> readIntegerHeader(const std::string& name, const std::string& value, int64_t min,
                                                 int64_t max);

// A positive integer path parameter, such as an operation's {id}.
Result<int64_t> readIdParam(const ApiRequest& request, const std::string& name);

// The generation the client last read, from `If-Match: <generation>` (quotes and W/
// tolerated, "*" meaning any) or `?generation=`; nullopt when neither is given. Both
// given and different is an error.
Result<ledger::Generation> readExpectedGeneration(const ApiRequest& request);

// kInvalidArgument when `body`'s arrays and objects nest deeper than `max_depth` (JSON's
// and YAML flow style's brackets, outside strings). A scan of the text, so it can run
// before anything builds a document: a parsed one nested 400,000 deep parses fine but
// overflows the stack when copied.
Status checkNestingDepth(std::string_view body, int max_depth);

// The body of a create request: Content-Type must be JSON (application/json) or YAML
// (application/yaml, application/x-yaml, text/yaml); JSON is syntax-checked here so the
// error names its "<source>:<line>:<column>". YAML syntax is left to the manifest parsers.
Result<std::string_view> readBodyText(const ApiRequest& request, const std::string& source = kBodySource);

// An optional JSON object body: a blank body reads as {}; otherwise Content-Type must be
// application/json and the object may hold only the `accepted` keys.
Result<Json> readOptionalJsonObject(const ApiRequest& request, std::initializer_list<std::string_view> accepted);

// body[key] as a string; nullopt when absent or null.
Result<std::optional<std::string>> readStringField(const Json& body, const std::string& key);

// body[key] as a boolean; nullopt when absent or null.
Result<std::optional<bool>> readBoolField(const Json& body, const std::string& key);

// body[key] as an integer within [min, max]; nullopt when absent or null.
Result<std::optional<int64_t>> readIntegerField(const Json& body, const std::string& key, int64_t min, int64_t max);

// A plan that declares `traffic:` on a host without a traffic router: kUnprocessable naming
// traffic.listen and the reason (docs/architecture.md#traffic). Ok otherwise.
Status checkTrafficServed(const ApiContext& context, const model::Plan& plan);

// The strategy `script` ("" = rolling) must be loaded and accept the params (script
// defaults ← plan ← deployment, docs/architecture.md#rollouts): kInvalidArgument naming `params.<name>` or
// `strategy.script`. OK when the host runs without scripts.
Status checkStrategyParams(ApiContext& context, const std::string& script, const Json& plan_params,
                           const Json& deployment_params);

// checkStrategyParams for a deployment of `plan`: its own strategy override (script,
// params) over the plan's.
Status checkDeploymentStrategy(ApiContext& context, const model::Plan& plan, const model::Deployment& deployment);

}  // namespace tide::api
