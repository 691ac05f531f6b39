#include "tests/soak/soak_host.h"

#include <unistd.h>

#include "drivers/fault/fault_driver.h"
#include "host/config/host_config.h"

namespace tide::soak {

drivers::Driver& underneathFaults(drivers::Driver& driver) {
  auto* fault = dynamic_cast<drivers::FaultDriver*>(&driver);
  return fault ? underneathFaults(fault->inner()) : driver;
}

Result<std::unique_ptr<SoakHost>> SoakHost::start(SoakHostOptions options) {
  std::unique_ptr<SoakHost> host(new SoakHost());
  const std::filesystem::path& dir = options.data_dir;
  TIDE_ASSIGN_OR_RETURN(host->ledger_, ledger::Ledger::open("sqlite://" + (dir / "tide.db").string(), host->clock_));

  // Only the dev namespace approves itself (policies/auto_approve_dev.lua); every other
  // operation falls to the default verdict, a person: the soak's approver.
  const std::filesystem::path policies = dir / "policies";
  std::filesystem::create_directories(policies);
  std::filesystem::copy_file(std::filesystem::path(TIDE_SOURCE_DIR) / "policies" / "auto_approve_dev.lua",
                             policies / "auto_approve_dev.lua");
  lua::ScriptRegistryOptions script_options;
  script_options.policies_dir = policies;
  script_options.scripts_dir = std::filesystem::path(TIDE_SOURCE_DIR) / "scripts";
  script_options.limits = options.engine.lua_limits;
  host->recorder_ = std::make_unique<engine::LedgerScriptRecorder>(*host->ledger_);
  host->scripts_ = std::make_unique<lua::ScriptRegistry>(script_options, *host->recorder_, host->clock_);
  const lua::ReloadSummary loaded = host->scripts_->reloadAll();
  if (loaded.failed > 0) return Status::internal("scripts did not load: " + loaded.errors.front());

  drivers::DriverContext context;
  context.clock = &host->clock_;
  context.data_dir = dir.string();
  context.tide_binary = TIDE_BINARY;
  context.image_catalog = config::HostConfig{}.process.image_catalog;
  // Below the test suite's port blocks (tests/support/ports.h), one range per soak process.
  context.port_range_start = 14000 + static_cast<int>(::getpid() % 40) * 100;
  context.port_range_end = context.port_range_start + 99;
  host->drivers_ = std::make_unique<engine::DriverSet>(*host->ledger_, context);
  options.engine.hooks_output_dir = dir / "hooks";
  host->engine_ =
      std::make_unique<engine::Engine>(*host->ledger_, *host->scripts_, *host->drivers_, host->clock_, options.engine);

  api::ServerOptions server;
  server.host = "127.0.0.1";
  server.port = 0;
  server.data_dir = dir.string();
  server.config_tokens = {{"soak-operator", kOperatorToken, "operator", {}},
                          {"soak-approver", kApproverToken, "approver", {}}};
  server.scripts = host->scripts_.get();
  server.lua_limits = options.engine.lua_limits;
  server.extra_metrics = [engine = host->engine_.get()] { return engine->metrics().render(); };
  host->server_ = std::make_unique<api::ApiServer>(server, *host->ledger_, host->clock_);
  TIDE_RETURN_IF_ERROR(host->server_->start());
  host->engine_->start();
  return host;
}

SoakHost::~SoakHost() { stop(); }

void SoakHost::stop() {
  if (drivers_) {
    for (auto& [cluster, driver] : drivers_->built()) {
      if (auto* fault = dynamic_cast<drivers::FaultDriver*>(driver)) fault->interrupt();
    }
  }
  if (engine_) engine_->stop();
  if (server_) server_->stop();
}

std::string SoakHost::url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }

Result<std::vector<InventoryObject>> SoakHost::inventory() {
  std::vector<InventoryObject> all;
  for (auto& [cluster, driver] : drivers_->built()) {
    TIDE_ASSIGN_OR_RETURN(std::vector<InventoryObject> objects, readInventory(cluster, underneathFaults(*driver)));
    all.insert(all.end(), objects.begin(), objects.end());
  }
  return all;
}

void SoakHost::removeEverything() {
  for (auto& [cluster, driver] : drivers_->built()) {
    drivers::Driver& underneath = underneathFaults(*driver);
    auto listed = underneath.list();
    if (!listed.isOk()) continue;
    for (const auto& ref : *listed) (void)underneath.remove(ref);  // best effort at exit
  }
}

}  // namespace tide::soak
