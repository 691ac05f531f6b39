// Day-two verbs on a plan (docs/api.md#scaling-and-new-images): POST /v1/plans/{name}/scale
// and POST /v1/plans/{name}/set-image. Each adds a deployment made from the plan's current
// one with one thing changed, so it rolls out through the plan's strategy, its policies and
// its approvals like any deployment added by hand.

#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <vector>

#include "host/api/handler.h"
#include "host/api/handlers.h"
#include "host/api/request_inputs.h"
#include "host/core/names.h"
#include "host/model/transitions.h"

namespace tide::api::plans {
namespace {

// The most instances a deployment may ask for (as a manifest's instance_count).
constexpr int64_t kMaxInstances = 10000;

struct Start {
  model::Deployment current;
  std::set<std::string> ids;  // every deployment id the plan has used
};

// The plan's current deployment (model::currentDeployment) and the ids taken.
Result<Start> startOf(ApiContext& context, const std::string& plan) {
  TIDE_RETURN_IF_ERROR(context.ledger.plans().getPlan(plan).status());
  TIDE_ASSIGN_OR_RETURN(std::vector<model::Deployment> all,
                        listAll(context.ledger.plans(), &ledger::PlanRecords::listDeployments, {{"plan", plan}}));
  const model::Deployment* current = model::currentDeployment(all);
  if (current == nullptr) {
    return Status::conflict("plan '" + plan + "' has no deployment to start from; add one first (tide deployment " +
                            "add-deployment -m FILE)");
  }
  Start start{*current, {}};
  for (const model::Deployment& d : all) start.ids.insert(d.deployment_id);
  return start;
}

// `asked` when given (it must be a free, valid name), else the current id with its trailing
// number raised ("web-7" → "web-8", "v1" → "v2", "canary" → "canary-2") to the first one free.
Result<std::string> newDeploymentId(const Start& start, const std::optional<std::string>& asked) {
  if (asked) {
    if (!isValidName(*asked)) {
      return Status::invalidArgument("body field 'deployment_id' is not a valid name",
                                     {{"deployment_id", "not a valid name: " + *asked, ""}});
    }
    if (start.ids.contains(*asked)) {
      return Status::alreadyExists("deployment '" + *asked + "' exists already in this plan");
    }
    return *asked;
  }
  const std::string& id = start.current.deployment_id;
  size_t digits = id.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(id[digits - 1]))) --digits;
  const bool numbered = digits < id.size() && id.size() - digits < 10;
  const std::string stem = numbered ? id.substr(0, digits) : id + "-";
  for (long long n = numbered ? std::stoll(id.substr(digits)) + 1 : 2;; ++n) {
    std::string candidate = stem + std::to_string(n);
    if (!start.ids.contains(candidate)) return candidate;
  }
}

// A new deployment of the plan with the current one's payloads, size and strategy.
model::Deployment nextOf(const model::Deployment& current, std::string id) {
  model::Deployment next;
  next.plan = current.plan;
  next.deployment_id = std::move(id);
  next.payload_coordinates = current.payload_coordinates;
  next.instance_count = current.instance_count;
  next.strategy = current.strategy;
  return next;
}

// Adds `next` as POST /v1/plans/{name}/deployments would (a dry run too), and answers with it
// and what it was made from.
Result<ApiResponse> add(ApiContext& context, const ApiRequest& request, const model::Deployment& from,
                        const model::Deployment& next) {
  return deployments::addAndReply(context, request, next, Json{{"from_deployment", from.deployment_id}});
}

// "nginx:1.25" stays; a bare "1.25" is a tag for `current`'s repository ("nginx:latest" →
// "nginx:1.25", "registry:5000/web" → "registry:5000/web:1.25").
std::string imageFor(const std::string& current, const std::string& version) {
  if (version.find(':') != std::string::npos || version.find('/') != std::string::npos) return version;
  const size_t slash = current.rfind('/');
  const size_t colon = current.rfind(':');
  const bool tagged = colon != std::string::npos && (slash == std::string::npos || colon > slash);
  return (tagged ? current.substr(0, colon) : current) + ":" + version;
}

}  // namespace

// {"instances": N, "deployment_id"?: "..."}: the current deployment at N instances.
Result<ApiResponse> scale(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {"dry_run"}));
  TIDE_ASSIGN_OR_RETURN(Json body, readOptionalJsonObject(request, {"instances", "deployment_id"}));
  TIDE_ASSIGN_OR_RETURN(std::optional<int64_t> instances, readIntegerField(body, "instances", 0, kMaxInstances));
  if (!instances) {
    return Status::invalidArgument("body field 'instances' is required", {{"instances", "required", ""}});
  }
  TIDE_ASSIGN_OR_RETURN(std::optional<std::string> asked, readStringField(body, "deployment_id"));
  TIDE_ASSIGN_OR_RETURN(Start start, startOf(context, request.param("name")));
  if (start.current.instance_count == *instances) {
    return Status::conflict("deployment '" + start.current.deployment_id + "' asks for " + std::to_string(*instances) +
                            " instances already; nothing to change");
  }
  TIDE_ASSIGN_OR_RETURN(std::string id, newDeploymentId(start, asked));
  model::Deployment next = nextOf(start.current, std::move(id));
  next.instance_count = *instances;
  return add(context, request, start.current, next);
}

// {"images": {"<payload>": "<image or tag>", ...}, "deployment_id"?: "..."}: the current
// deployment with those payloads on new images.
Result<ApiResponse> setImage(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {"dry_run"}));
  TIDE_ASSIGN_OR_RETURN(Json body, readOptionalJsonObject(request, {"images", "deployment_id"}));
  const Json* images = body.contains("images") ? &body["images"] : nullptr;
  if (images == nullptr || !images->is_object() || images->empty()) {
    return Status::invalidArgument(
        "body field 'images' must map payload names to images, e.g. {\"web\": \"nginx:1.25\"}",
        {{"images", "required: an object of payload name to image", ""}});
  }
  TIDE_ASSIGN_OR_RETURN(std::optional<std::string> asked, readStringField(body, "deployment_id"));
  TIDE_ASSIGN_OR_RETURN(Start start, startOf(context, request.param("name")));
  model::Deployment next = nextOf(start.current, "");
  std::vector<ErrorDetail> problems;
  bool changed = false;
  for (const auto& [payload, value] : images->items()) {
    const std::string field = "images." + payload;
    auto it = std::find_if(next.payload_coordinates.begin(), next.payload_coordinates.end(),
                           [&, name = payload](const model::PayloadCoordinates& p) { return p.payload_name == name; });
    if (!value.is_string() || value.get<std::string>().empty()) {
      problems.push_back({field, "must be an image (nginx:1.25) or a tag (1.25)", ""});
    } else if (it == next.payload_coordinates.end()) {
      std::string known;
      for (const auto& p : next.payload_coordinates) known += (known.empty() ? "" : ", ") + p.payload_name;
      problems.push_back(
          {field,
           "deployment '" + start.current.deployment_id + "' has no payload '" + payload + "'; its payloads: " + known,
           ""});
    } else if (!it->coordinates.contains("image") || !it->coordinates["image"].is_string()) {
      problems.push_back({field,
                          "payload '" + payload + "' runs a command, not an image; add a deployment with " +
                              "its new coordinates instead (tide deployment add-deployment -m FILE)",
                          ""});
    } else {
      const std::string image = imageFor(it->coordinates["image"].get<std::string>(), value.get<std::string>());
      changed = changed || image != it->coordinates["image"];
      it->coordinates["image"] = image;
    }
  }
  if (!problems.empty()) {
    std::string first = problems.front().field + ": " + problems.front().message;  // before problems moves
    return Status::invalidArgument(std::move(first), std::move(problems));
  }
  if (!changed) {
    return Status::conflict("deployment '" + start.current.deployment_id +
                            "' runs those images already; nothing to change");
  }
  TIDE_ASSIGN_OR_RETURN(next.deployment_id, newDeploymentId(start, asked));
  return add(context, request, start.current, next);
}

}  // namespace tide::api::plans
