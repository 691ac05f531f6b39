#pragma once
// One shape for every family of extensions tide builds by kind (docs/architecture.md#extensions):
// drivers (drivers/registry.h) and traffic routers (drivers/traffic/routers.h). A family is
// an explicit table of rows, one per kind:
//   kind     what a cluster's driver_kind (or a router's kind) names
//   summary  one line for people (`tide doctor`, docs)
//   parse    the kind's config as JSON → the kind's config struct, every problem named by its
//            field ("driver_config.seed"); run when a product is built, and by check()
//   factory  the parsed config and what the host hands the family (its Context) → the product
// Adding a kind is adding a row; nothing registers itself (STYLE.md: for a handful of kinds
// an explicit table beats static self-registration), and nothing outside a kind's own folder
// and its row knows the kind's config.
//
// Thread-safety: rows are immutable; check() and make() may run on any threads at once.

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/core/status.h"

namespace tide::drivers {

template <typename Product, typename Context>
class ExtensionKind {
 public:
  using Made = Result<std::unique_ptr<Product>>;
  template <typename Config>
  using Parse = Result<Config> (*)(const nlohmann::json& config);
  template <typename Config>
  using Factory = Made (*)(const Config& config, const Context& context);

  template <typename Config>
  ExtensionKind(std::string_view kind, std::string_view summary, Parse<Config> parse, Factory<Config> factory)
      : kind(kind),
        summary(summary),
        check_([parse](const nlohmann::json& config) { return parse(config).status(); }),
        make_([parse, factory](const nlohmann::json& config, const Context& context) -> Made {
          TIDE_ASSIGN_OR_RETURN(Config parsed, parse(config));
          return factory(parsed, context);
        }) {}

  // The kind's config parsed and validated, nothing built: kInvalidArgument naming each bad field.
  Status check(const nlohmann::json& config) const { return check_(config); }
  // The config parsed (its problems, as check()), then the factory's product.
  Made make(const nlohmann::json& config, const Context& context) const { return make_(config, context); }

  std::string_view kind;
  std::string_view summary;

 private:
  std::function<Status(const nlohmann::json&)> check_;
  std::function<Made(const nlohmann::json&, const Context&)> make_;
};

// A parse function for a kind whose factory reads its JSON config itself: null (no config)
// reads as {}, anything but an object is refused at `config`.
inline Result<nlohmann::json> objectConfig(const nlohmann::json& config) {
  if (config.is_null()) return nlohmann::json::object();
  if (!config.is_object()) return Status::invalidArgument("bad config", {{"config", "must be an object", ""}});
  return config;
}

// The row of `kind` in `table`. kInvalidArgument otherwise, listing the known kinds:
// `unknown <family> kind "x" (known: a, b)` with a detail at `field`.
template <typename Row>
Result<const Row*> findKind(const std::vector<Row>& table, std::string_view kind, std::string_view family,
                            std::string_view field) {
  std::string known;
  for (const Row& row : table) {
    if (row.kind == kind) return &row;
    known += (known.empty() ? "" : ", ") + std::string(row.kind);
  }
  if (known.empty()) known = "none yet";
  return Status::invalidArgument(
      "unknown " + std::string(family) + " kind \"" + std::string(kind) + "\" (known: " + known + ")",
      {{std::string(field), "unknown " + std::string(family) + " kind; known: " + known, ""}});
}

}  // namespace tide::drivers
