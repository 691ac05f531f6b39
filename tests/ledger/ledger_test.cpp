#include <doctest/doctest.h>

#include <filesystem>
#include <thread>

#include "host/config/manifest.h"
#include "host/ledger/ledger.h"
#include "host/ledger/ledger_internal.h"
#include "tests/ledger/ledger_test_util.h"
#include "tests/support/vocabulary.h"

#include <soci/soci.h>
#include <soci/sqlite3/soci-sqlite3.h>

using namespace tide;
using namespace tide::ledger;
using tide::testing::LedgerFixture;

namespace {

std::filesystem::path tempDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("tide-ledger-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE("ledger: migrations are applied once and recorded") {
  LedgerFixture f;
  CHECK(f.ledger->schemaVersion() == 15);
  CHECK(f.eventCount() == 0);
}

TEST_CASE("ledger: a node's remaining resources are derived from live reservations") {
  LedgerFixture f;
  const std::string meta = f.addInstance();
  auto before = f.ledger->inventory().getNode("node-a");
  REQUIRE(before.isOk());
  CHECK(before->remaining.cores == doctest::Approx(60));
  CHECK(before->remaining.memory_gib == doctest::Approx(480));

  RuntimeInstance ri;
  ri.meta_instance = meta;
  ri.node = "node-a";
  ri.reservation = {4, 64};
  auto created = f.ledger->instances().createRuntimeInstance(ri, "test");
  REQUIRE_MESSAGE(created.isOk(), created.status().toString());
  CHECK(created->state == model::RuntimeState::kPending);
  CHECK(f.ledger->inventory().getNode("node-a")->remaining.cores == doctest::Approx(56));
  CHECK(f.ledger->inventory().getNode("node-a")->remaining.memory_gib == doctest::Approx(416));
  CHECK(f.ledger->inventory().getNode("node-b")->remaining.cores == doctest::Approx(60));

  // Terminal states release the reservation in the same transaction.
  REQUIRE(
      f.ledger->instances().setRuntimeInstanceState(created->meta.id, model::RuntimeState::kStarting, std::nullopt, "test").isOk());
  REQUIRE(
      f.ledger->instances().setRuntimeInstanceState(created->meta.id, model::RuntimeState::kFailed, std::nullopt, "test").isOk());
  CHECK(f.ledger->inventory().getNode("node-a")->remaining.cores == doctest::Approx(60));
  auto released = f.ledger->audit().listEvents({100, 0, {{"subject", "runtime/" + std::to_string(created->meta.id)}}});
  REQUIRE(released.isOk());
  CHECK(released->items.back().data["released"]["cores"] == 4);
}

TEST_CASE("ledger: a reservation that does not fit is refused and nothing is written") {
  LedgerFixture f;
  const std::string meta = f.addInstance();
  const int64_t events = f.eventCount();
  RuntimeInstance ri;
  ri.meta_instance = meta;
  ri.node = "node-a";
  ri.reservation = {61, 1};
  auto refused = f.ledger->instances().createRuntimeInstance(ri, "test");
  CHECK(refused.status().code() == Code::kUnprocessable);
  CHECK(refused.status().message().find("remaining 60") != std::string::npos);
  CHECK(f.eventCount() == events);
  CHECK(f.ledger->instances().listRuntimeInstances({})->items.empty());
}

TEST_CASE("ledger: a reservation whose volume does not fit its local volume is refused") {
  LedgerFixture f;
  f.addInventory();
  REQUIRE(f.ledger->plans().createPlan(LedgerFixture::plan(), "test").isOk());
  REQUIRE(f.ledger->plans().addDeployment(LedgerFixture::deployment("d1", 3), "test").isOk());
  auto reserve = [&](double gib, const std::string& local) {
    RuntimeInstance ri;
    ri.meta_instance = f.ledger->instances().createMetaInstance("web", "d1", "t")->name;
    ri.node = "node-a";
    ri.reservation = {1, 1};
    ri.volumes = Json::array({Json{
        {"id", ri.meta_instance + "-0"}, {"storage_class", "SSD"}, {"capacity_gib", gib}, {"local_volume", local}}});
    return f.ledger->instances().createRuntimeInstance(ri, "t");
  };
  REQUIRE(reserve(1000, "/mnt/u001").isOk());  // node-a's /mnt/u001 holds 1024 GiB
  const int64_t events = f.eventCount();
  auto full = reserve(100, "/mnt/u001");
  CHECK(full.status().code() == Code::kUnprocessable);
  CHECK(full.status().message().find("local volume '/mnt/u001' of node 'node-a' cannot hold 100") != std::string::npos);
  auto missing = reserve(1, "/mnt/nope");
  CHECK(missing.status().code() == Code::kUnprocessable);
  CHECK(missing.status().message().find("no local volume '/mnt/nope'") != std::string::npos);
  CHECK(f.eventCount() == events + 2);  // only the two meta instances' own events
  CHECK(reserve(24, "/mnt/u001").isOk());
}

TEST_CASE("ledger: a meta instance has at most one active runtime instance") {
  LedgerFixture f;
  const std::string meta = f.addInstance();
  RuntimeInstance active;
  active.meta_instance = meta;
  active.node = "node-a";
  active.reservation = {1, 1};
  REQUIRE(f.ledger->instances().createRuntimeInstance(active, "test").isOk());
  RuntimeInstance second = active;
  second.node = "node-b";
  CHECK(f.ledger->instances().createRuntimeInstance(second, "test").status().code() == Code::kConflict);
  second.is_active = false;  // a passive one, as during RELOCATE
  CHECK(f.ledger->instances().createRuntimeInstance(second, "test").isOk());
  CHECK(f.ledger->checkInvariants()->empty());
}

TEST_CASE("ledger: invalid transitions and stale generations write nothing") {
  LedgerFixture f;
  f.addInventory();
  auto node = f.ledger->inventory().getNode("node-a");
  REQUIRE(node.isOk());
  CHECK(node->state == model::NodeState::kAllocated);
  const int64_t events = f.eventCount();

  auto invalid = f.ledger->inventory().setNodeState("node-a", model::NodeState::kSanitizing, node->meta.generation, "test");
  REQUIRE(invalid.isOk());  // ALLOCATED → SANITIZING is allowed
  auto back = f.ledger->inventory().setNodeState("node-a", model::NodeState::kAllocated, std::nullopt, "test");
  CHECK(back.status().code() == Code::kConflict);  // SANITIZING → ALLOCATED is not
  CHECK(f.eventCount() == events + 1);

  auto cordoned = f.ledger->inventory().setNodeState("node-b", model::NodeState::kCordoned, node->meta.generation, "test");
  REQUIRE(cordoned.isOk());
  CHECK(cordoned->meta.generation == node->meta.generation + 1);
  auto stale = f.ledger->inventory().setNodeState("node-b", model::NodeState::kAllocated, node->meta.generation, "test");
  CHECK(stale.status().code() == Code::kConflict);
  CHECK(stale.status().message().find("stale generation") != std::string::npos);
  CHECK(f.ledger->inventory().getNode("node-b")->state == model::NodeState::kCordoned);
  CHECK(f.eventCount() == events + 2);
}

TEST_CASE("ledger: names are unique among live records and free again after a soft delete") {
  LedgerFixture f;
  f.addInventory();
  CHECK(f.ledger->inventory().createNode(LedgerFixture::node("node-a"), "test").status().code() == Code::kAlreadyExists);
  REQUIRE(f.ledger->inventory().deleteNode("node-a", std::nullopt, "test").isOk());
  CHECK(f.ledger->inventory().getNode("node-a").status().code() == Code::kNotFound);
  CHECK(f.ledger->inventory().listNodes({})->items.size() == 1);
  CHECK(f.ledger->inventory().createNode(LedgerFixture::node("node-a"), "test").isOk());
  CHECK(f.ledger->inventory().deleteCapability("nvidia-v100", std::nullopt, "test").code() == Code::kConflict);
  CHECK(f.ledger->inventory().deleteCluster("local", std::nullopt, "test").code() == Code::kConflict);
}

TEST_CASE("ledger: references must exist and be of the right kind") {
  LedgerFixture f;
  f.addInventory();
  CHECK(f.ledger->inventory().createNode(LedgerFixture::node("node-c", "nowhere"), "test").status().code() == Code::kUnprocessable);
  // A capability nobody declared is kept, with a warning: MRDS's node files name such ones.
  auto undeclared_capability = LedgerFixture::node("node-c");
  undeclared_capability.capabilities = {"tpu-v9"};
  std::vector<ErrorDetail> warnings;
  auto kept = f.ledger->inventory().createNode(undeclared_capability, "test", &warnings);
  REQUIRE(kept.isOk());
  CHECK(kept->capabilities == std::vector<std::string>{"tpu-v9"});
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].message.find("'tpu-v9' is not declared") != std::string::npos);

  auto plan = LedgerFixture::plan();
  plan.matching_capabilities = {{"GPU", "IN", {"intel-xeon"}}};
  auto mistyped = f.ledger->plans().createPlan(plan, "test");
  CHECK(mistyped.status().code() == Code::kUnprocessable);
  CHECK(mistyped.status().details().front().field == "matching_capabilities[0].names");

  REQUIRE(f.ledger->plans().createPlan(LedgerFixture::plan(), "test").isOk());
  auto wrong_payload = LedgerFixture::deployment("d1", 1);
  wrong_payload.payload_coordinates[0].payload_name = "other";
  CHECK(f.ledger->plans().addDeployment(wrong_payload, "test").status().code() == Code::kUnprocessable);
  REQUIRE(f.ledger->plans().addDeployment(LedgerFixture::deployment("d1", 1), "test").isOk());
  CHECK(f.ledger->plans().addDeployment(LedgerFixture::deployment("d1", 2), "test").status().code() == Code::kAlreadyExists);
  auto d = f.ledger->plans().getDeployment("web", "d1");
  REQUIRE(d.isOk());
  CHECK(d->state == model::DeploymentState::kPending);
  CHECK(d->payload_coordinates[0].coordinates["image"] == "nginx:latest");
}

TEST_CASE("ledger: one unfinished operation per meta instance, higher priority supersedes an unapproved one") {
  LedgerFixture f;
  const std::string meta = f.addInstance();
  Operation create;
  create.meta_instance = meta;
  create.type = model::OperationType::kCreate;
  create.intent = "d1";
  auto first = f.ledger->operations().createOperation(create, "controller");
  REQUIRE(first.isOk());
  CHECK(first->requested_by == "controller");
  CHECK(f.ledger->operations().createOperation(create, "controller").status().code() == Code::kConflict);

  Operation stop = create;
  stop.type = model::OperationType::kStop;
  stop.priority = 10;
  auto second = f.ledger->operations().createOperation(stop, "alice");
  REQUIRE(second.isOk());
  CHECK(f.ledger->operations().getOperation(first->meta.id)->state == model::OperationState::kCancelled);

  REQUIRE(
      f.ledger->operations().setOperationState(second->meta.id, model::OperationState::kApproved, std::nullopt, "bob", "ok", "bob")
          .isOk());
  CHECK(f.ledger->operations().getOperation(second->meta.id)->approved_by == "bob");
  Operation urgent = create;
  urgent.type = model::OperationType::kDelete;
  urgent.priority = 100;
  CHECK(f.ledger->operations().createOperation(urgent, "alice").status().code() == Code::kConflict);  // approved: not replaceable
  CHECK(f.ledger->checkInvariants()->empty());

  // An operation type the vocabulary does not have cannot reach the ledger: it is refused
  // where it is read (the API's body field, a ledger row).
  CHECK_FALSE(model::parse<model::OperationType>("EXPLODE").has_value());
}

TEST_CASE("ledger: a requester's reason is the operation's first message and stays in its created event") {
  LedgerFixture f;
  const std::string meta = f.addInstance();
  Operation restart;
  restart.meta_instance = meta;
  restart.type = model::OperationType::kCreate;
  restart.intent = "user";
  restart.message = "INC-4711: bring it up";
  auto created = f.ledger->operations().createOperation(restart, "alice");
  REQUIRE(created.isOk());
  CHECK(created->message == "INC-4711: bring it up");
  auto events = f.ledger->audit().listEvents({100, 0, {{"subject", "operation/" + std::to_string(created->meta.id)}}});
  REQUIRE(events.isOk());
  REQUIRE(events->items.size() == 1);
  CHECK(events->items[0].kind == "operation.created");
  CHECK(events->items[0].data["reason"] == "INC-4711: bring it up");
}

TEST_CASE("ledger: lists paginate by id and reject unknown filters") {
  LedgerFixture f;
  f.addInventory();
  for (int i = 0; i < 5; ++i) REQUIRE(f.ledger->inventory().createNode(LedgerFixture::node("n" + std::to_string(i)), "t").isOk());
  ListOptions page;
  page.limit = 3;
  auto first = f.ledger->inventory().listNodes(page);
  REQUIRE(first.isOk());
  CHECK(first->items.size() == 3);
  REQUIRE(first->next_after != 0);
  page.after = first->next_after;
  auto second = f.ledger->inventory().listNodes(page);
  CHECK(second->items.size() == 3);
  page.after = second->next_after;
  auto third = f.ledger->inventory().listNodes(page);
  CHECK(third->items.size() == 1);
  CHECK(third->next_after == 0);
  CHECK(f.ledger->inventory().listNodes({100, 0, {{"state", "CORDONED"}}})->items.empty());
  CHECK(f.ledger->inventory().listNodes({100, 0, {{"cluster", "local"}}})->items.size() == 7);
  auto bad = f.ledger->inventory().listNodes({100, 0, {{"colour", "blue"}}});
  CHECK(bad.status().code() == Code::kInvalidArgument);
  CHECK(bad.status().details().front().field == "colour");
}

TEST_CASE("ledger: since and until are a time window of timestamps, compared as the stored ones") {
  LedgerFixture f;  // 2026-01-01T00:00:00.000Z
  REQUIRE(f.ledger->audit().appendEvent("test.first", "test/1", Json::object(), "t").isOk());
  f.clock.advance(std::chrono::milliseconds(500));
  REQUIRE(f.ledger->audit().appendEvent("test.second", "test/1", Json::object(), "t").isOk());
  auto kinds = [&](const std::map<std::string, std::string>& filters) {
    std::vector<std::string> out;
    auto page = f.ledger->audit().listEvents({100, 0, filters});
    REQUIRE_MESSAGE(page.isOk(), page.status().toString());
    for (const model::Event& event : page->items) out.push_back(event.kind);
    return out;
  };
  using Kinds = std::vector<std::string>;
  // "...00Z" sorts after "...00.500Z" as text: the bounds are rewritten with milliseconds.
  CHECK(kinds({{"since", "2026-01-01T00:00:00Z"}}) == Kinds{"test.first", "test.second"});
  CHECK(kinds({{"until", "2026-01-01T00:00:00.500Z"}}) == Kinds{"test.first"});
  CHECK(kinds({{"since", "2026-01-01T00:00:00.5Z"}}) == Kinds{"test.second"});
  CHECK(kinds({{"since", "2026-01-01T00:00:01Z"}}).empty());
  for (const char* key : {"since", "until"}) {
    auto bad = f.ledger->audit().listEvents({100, 0, {{key, "2h"}}});
    CHECK(bad.status().code() == Code::kInvalidArgument);
    CHECK(bad.status().details().front().field == key);
    auto bad_operations = f.ledger->operations().listOperations({100, 0, {{key, "soon"}}});
    CHECK(bad_operations.status().details().front().field == key);
  }
  CHECK(f.ledger->inventory().listNodes({100, 0, {{"since", "2026-01-01T00:00:00Z"}}}).status().code() ==
        Code::kInvalidArgument);  // a list without a time window
}

TEST_CASE("ledger: events are hash-chained and tampering is detected") {
  auto dir = tempDir("chain");
  const std::string url = "sqlite://" + (dir / "tide.db").string();
  {
    LedgerFixture f(url);
    f.addInventory();
    CHECK(f.ledger->audit().verifyEventChain().isOk());
    auto events = f.ledger->audit().listEvents({});
    REQUIRE(events->items.size() == 6);
    CHECK(events->items[0].prev_hash.empty());
    CHECK(events->items[1].prev_hash == events->items[0].hash);
    CHECK(events->items[0].kind == "capability.created");
    CHECK(f.ledger->audit().listEvents({100, 0, {{"kind", "node.*"}}})->items.size() == 2);
  }
  {
    soci::session raw(soci::sqlite3, "db=" + (dir / "tide.db").string());
    raw << "UPDATE events SET actor = 'mallory' WHERE seq = 3";
  }
  LedgerFixture reopened(url);
  Status broken = reopened.ledger->audit().verifyEventChain();
  CHECK(broken.code() == Code::kInternal);
  CHECK(broken.message().find("event seq 3: hash mismatch") != std::string::npos);
  CHECK_FALSE(reopened.ledger->checkInvariants()->empty());
  std::filesystem::remove_all(dir);
}

TEST_CASE("ledger: the event chain continues from the last committed event after writes that rolled back") {
  LedgerFixture f;
  f.addInventory();
  {
    Ledger::Batch batch(*f.ledger);
    REQUIRE(f.ledger->inventory().createCapability({{}, "in-batch", "CPU", 1}, "test").isOk());
    CHECK_FALSE(f.ledger->inventory().createNode(LedgerFixture::node("node-a"), "test").isOk());  // a duplicate
    REQUIRE(f.ledger->inventory().createNode(LedgerFixture::node("node-c"), "test").isOk());
    REQUIRE(batch.commit().isOk());
  }
  // A manifest whose second node fails appends events of its first ones, then rolls back.
  model::Manifest manifest;
  manifest.capabilities.push_back({{{}, "from-manifest", "CPU", 1}, "m.yaml:1"});
  manifest.nodes.push_back({LedgerFixture::node("node-d"), "m.yaml:2"});
  manifest.nodes.push_back({LedgerFixture::node("node-e", "elsewhere"), "m.yaml:3"});
  CHECK_FALSE(f.ledger->applyManifest(manifest, "test").isOk());
  REQUIRE(f.ledger->inventory().createNode(LedgerFixture::node("node-f"), "test").isOk());

  CHECK(f.ledger->audit().verifyEventChain().isOk());
  auto events = f.ledger->audit().listEvents({});
  REQUIRE(events->items.size() == 9);
  for (std::size_t i = 0; i < events->items.size(); ++i) CHECK(events->items[i].seq == static_cast<int64_t>(i + 1));
  CHECK(events->items.back().subject == "node/node-f");
}

TEST_CASE("ledger: records survive closing and reopening the database") {
  auto dir = tempDir("persist");
  const std::string url = "sqlite://" + (dir / "tide.db").string();
  {
    LedgerFixture f(url);
    f.addInstance();
  }
  LedgerFixture again(url);
  CHECK(again.ledger->schemaVersion() == 15);
  CHECK(again.ledger->inventory().listNodes({})->items.size() == 2);
  CHECK(again.ledger->plans().getDeployment("web", "d1")->state == model::DeploymentState::kPending);
  CHECK(again.ledger->instances().listMetaInstances({})->items.size() == 1);
  CHECK(again.ledger->audit().verifyEventChain().isOk());
  std::filesystem::remove_all(dir);
}

TEST_CASE("ledger: a plan's placement is stored and read back") {
  auto dir = tempDir("placement");
  const std::string url = "sqlite://" + (dir / "tide.db").string();
  {
    LedgerFixture f(url);
    f.addInventory();
    model::Plan packed = LedgerFixture::plan("packed");
    packed.placement = {3, true};
    auto created = f.ledger->plans().createPlan(packed, "test");
    REQUIRE_MESSAGE(created.isOk(), created.status().toString());
    CHECK(created->placement.max_per_node == 3);
    CHECK(created->placement.bin_pack);
    REQUIRE(f.ledger->plans().createPlan(LedgerFixture::plan("plain"), "test").isOk());

    for (int refused : {0, model::kMaxPerNodeLimit + 1}) {
      model::Plan bad = LedgerFixture::plan("bad");
      bad.placement.max_per_node = refused;
      auto status = f.ledger->plans().createPlan(bad, "test").status();
      CHECK(status.code() == Code::kInvalidArgument);
      REQUIRE(status.details().size() == 1);
      CHECK(status.details()[0].field == "placement.max_per_node");
    }
  }
  LedgerFixture again(url);
  auto packed = again.ledger->plans().getPlan("packed");
  REQUIRE(packed.isOk());
  CHECK(packed->placement.max_per_node == 3);
  CHECK(packed->placement.bin_pack);
  auto plain = again.ledger->plans().getPlan("plain");
  REQUIRE(plain.isOk());
  CHECK(plain->placement.max_per_node == 1);
  CHECK_FALSE(plain->placement.bin_pack);
  auto listed = again.ledger->plans().listPlans({});
  REQUIRE(listed.isOk());
  REQUIRE(listed->items.size() == 2);
  CHECK(listed->items[0].placement.max_per_node == 3);
  CHECK_FALSE(again.ledger->plans().getPlan("bad").isOk());
  std::filesystem::remove_all(dir);
}

TEST_CASE("ledger: plans of a ledger from before plan placement migrate to one per node, least-allocated") {
  auto dir = tempDir("migrate-placement");
  const std::string path = (dir / "tide.db").string();
  {
    // A ledger as the last release left it: migrations 001..003 and a plan row of that shape.
    auto db = Db::open("sqlite://" + path);
    REQUIRE(db.isOk());
    const auto& all = embedded::sqliteMigrations();
    REQUIRE(all.size() >= 4);
    const std::vector<embedded::File> before(all.begin(), all.begin() + 3);
    auto version = (*db)->migrate(before, "2026-01-01T00:00:00.000Z");
    REQUIRE(version.isOk());
    REQUIRE(*version == 3);
    (*db)->session() << "INSERT INTO plans (name, namespace, service_name, spec, state, created_at, updated_at) "
                        "VALUES ('old', 'ns', 'svc', '{\"applications\": [{\"payload_name\": \"app\"}]}', 'ACTIVE', "
                        "'2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')";
  }
  LedgerFixture migrated("sqlite://" + path);
  CHECK(migrated.ledger->schemaVersion() == 15);
  auto old = migrated.ledger->plans().getPlan("old");
  REQUIRE_MESSAGE(old.isOk(), old.status().toString());
  CHECK(old->applications.size() == 1);
  CHECK(old->placement.max_per_node == 1);
  CHECK_FALSE(old->placement.bin_pack);
  std::filesystem::remove_all(dir);
}

TEST_CASE("ledger: deployments of a ledger from before plan snapshots keep their plan as it was at the upgrade") {
  auto dir = tempDir("migrate-snapshots");
  const std::string path = (dir / "tide.db").string();
  {
    // Every migration before 012, a plan with placement and a deployment of it.
    auto db = Db::open("sqlite://" + path);
    REQUIRE(db.isOk());
    std::vector<embedded::File> before;
    for (const auto& file : embedded::sqliteMigrations()) {
      if (std::string(file.name).substr(0, 3) < "012") before.push_back(file);
    }
    REQUIRE((*db)->migrate(before, "2026-01-01T00:00:00.000Z").isOk());
    (*db)->session() << "INSERT INTO plans (name, namespace, service_name, spec, state, max_per_node, bin_pack, "
                        "generation, created_at, updated_at) VALUES ('old', 'ns', 'svc', "
                        "'{\"applications\": [{\"payload_name\": \"app\", \"resources\": {\"cores\": 2}}]}', "
                        "'ACTIVE', 3, 1, 5, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')";
    (*db)->session() << "INSERT INTO deployments (plan_id, deployment_id, spec, instance_count, state, created_at, "
                        "updated_at) VALUES ((SELECT id FROM plans WHERE name = 'old'), 'd1', "
                        "'{\"payload_coordinates\": []}', 1, 'COMPLETED', '2026-01-01T00:00:00.000Z', "
                        "'2026-01-01T00:00:00.000Z')";
  }
  LedgerFixture migrated("sqlite://" + path);
  auto d1 = migrated.ledger->plans().getDeployment("old", "d1");
  REQUIRE_MESSAGE(d1.isOk(), d1.status().toString());
  CHECK(d1->plan_generation == 5);
  REQUIRE(d1->plan_snapshot != nullptr);
  CHECK(d1->plan_snapshot->ns == "ns");
  REQUIRE(d1->plan_snapshot->applications.size() == 1);
  CHECK(d1->plan_snapshot->applications[0].resources.cores == 2);
  CHECK(d1->plan_snapshot->placement.max_per_node == 3);
  CHECK(d1->plan_snapshot->placement.bin_pack);
  std::filesystem::remove_all(dir);
}

TEST_CASE("ledger: waitForEvents wakes when another thread writes") {
  LedgerFixture f;
  const int64_t last = f.ledger->audit().lastEventSeq();
  CHECK_FALSE(f.ledger->audit().waitForEvents(last, std::chrono::milliseconds(1)));
  std::thread writer([&] { CHECK(f.ledger->audit().appendEvent("alarm.test", "system", {{"n", 1}}, "test").isOk()); });
  CHECK(f.ledger->audit().waitForEvents(last, std::chrono::seconds(30)));
  writer.join();
  CHECK(f.ledger->audit().lastEventSeq() == last + 1);
}

TEST_CASE("ledger: concurrent reservations never over-commit a node") {
  LedgerFixture f;
  f.addInventory();
  REQUIRE(f.ledger->plans().createPlan(LedgerFixture::plan(), "test").isOk());
  REQUIRE(f.ledger->plans().addDeployment(LedgerFixture::deployment("d1", 40), "test").isOk());
  std::vector<std::string> metas;
  for (int i = 0; i < 40; ++i) metas.push_back(f.ledger->instances().createMetaInstance("web", "d1", "t")->name);
  std::atomic<int> placed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < 40; i += 4) {
        RuntimeInstance ri;
        ri.meta_instance = metas[i];
        ri.node = "node-a";
        ri.reservation = {4, 1};  // 60 free cores hold 15 of these
        if (f.ledger->instances().createRuntimeInstance(ri, "t").isOk()) ++placed;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(placed == 15);
  CHECK(f.ledger->inventory().getNode("node-a")->remaining.cores == doctest::Approx(0));
  CHECK(f.ledger->checkInvariants()->empty());
}

TEST_CASE("ledger: a manifest is applied whole or not at all, naming the failing line") {
  LedgerFixture f;
  auto manifest = config::parseManifest(R"(capabilities:
  - {name: nvidia-v100, type: GPU, score: 80}
clusters:
  - {name: local}
nodes:
  - name: worker-1
    cluster: local
    updateDomain: ud-1
    totalResources: {cores: 8, memory: 32}
    systemReservedResources: {cores: 1, memory: 2}
    capabilityIDs: [nvidia-v100]
  - name: worker-2
    cluster: elsewhere
    updateDomain: ud-2
    totalResources: {cores: 8, memory: 32}
    systemReservedResources: {cores: 1, memory: 2}
)",
                                        "nodes.yaml");
  REQUIRE_MESSAGE(manifest.isOk(), manifest.status().toString());
  auto applied = f.ledger->applyManifest(*manifest, "test");
  REQUIRE_FALSE(applied.isOk());
  CHECK(applied.status().code() == Code::kUnprocessable);
  // At the value the ledger refuses, named as written.
  CHECK(applied.status().message().rfind("nodes.yaml:13:14: ", 0) == 0);
  CHECK(applied.status().details().front().location == "nodes.yaml:13:14");
  CHECK(applied.status().details().front().field == "nodes[1].cluster");
  CHECK(f.eventCount() == 0);
  CHECK(f.ledger->inventory().listCapabilities({})->items.empty());
  CHECK(f.ledger->inventory().listNodes({})->items.empty());

  manifest->nodes.pop_back();
  auto ok = f.ledger->applyManifest(*manifest, "test");
  REQUIRE_MESSAGE(ok.isOk(), ok.status().toString());
  CHECK(ok->nodes == std::vector<std::string>{"worker-1"});
  CHECK(f.ledger->inventory().getNode("worker-1")->remaining.cores == doctest::Approx(7));
}

TEST_CASE("ledger: tokens are stored by hash and looked up by it") {
  LedgerFixture f;
  CHECK(f.ledger->tokens().countTokens() == 0);
  REQUIRE(f.ledger->tokens().createToken("admin", "abc123", "admin", "bootstrap").isOk());
  CHECK(f.ledger->tokens().findToken("abc123")->role == "admin");
  CHECK(f.ledger->tokens().findToken("nope").status().code() == Code::kNotFound);
  CHECK(f.ledger->tokens().createToken("x", "def", "god", "bootstrap").status().code() == Code::kInvalidArgument);
  CHECK(f.ledger->tokens().countTokens() == 1);
}

TEST_CASE("ledger: script versions and decisions are recorded") {
  LedgerFixture f;
  auto v = f.ledger->audit().recordScriptVersion({0, "policies/a.lua", "policy", "deadbeef", "", "active", ""});
  REQUIRE(v.isOk());
  CHECK(v->loaded_at == "2026-01-01T00:00:00.000Z");
  CHECK(f.ledger->audit().listScriptVersions("policies/a.lua")->size() == 1);
  REQUIRE(f.ledger->operations().recordDecisions({{0, 7, "a", "deadbeef", "approve", Json::array({"ok"}), 12, "", ""}}).isOk());
  auto decisions = f.ledger->operations().listDecisions(7);
  REQUIRE(decisions->size() == 1);
  CHECK(decisions->front().script_sha256 == "deadbeef");
  CHECK(decisions->front().reasons[0] == "ok");
}

TEST_CASE("ledger: a script version's text is kept once by its sha256 and read back") {
  LedgerFixture f;
  CHECK(f.ledger->audit().scriptText("deadbeef")->has_value() == false);
  REQUIRE(f.ledger->audit().keepScriptText("deadbeef", "return {}").isOk());
  REQUIRE(f.ledger->audit().keepScriptText("deadbeef", "return {}").isOk());
  CHECK(f.ledger->audit().scriptText("deadbeef")->value() == "return {}");
  CHECK(f.eventCount() == 0);
}

TEST_CASE("ledger: a reservation made for an operation is recorded on it, once") {
  LedgerFixture f;
  const std::string name = f.addInstance();
  model::Operation op;
  op.meta_instance = name;
  op.type = model::OperationType::kCreate;
  op.intent = "d1";
  auto created = f.ledger->operations().createOperation(op, "test");
  REQUIRE(created.isOk());
  model::RuntimeInstance ri;
  ri.meta_instance = name;
  ri.node = "node-a";
  ri.reservation = {4, 64};
  auto reserved = f.ledger->instances().reserveForOperation(created->meta.id, ri, "test");
  REQUIRE(reserved.isOk());
  auto reloaded = f.ledger->operations().getOperation(created->meta.id);
  REQUIRE(reloaded.isOk());
  CHECK(reloaded->target["runtime_instance"] == reserved->meta.id);
  CHECK(reloaded->target["node"] == "node-a");
  CHECK(f.ledger->instances().reserveForOperation(created->meta.id, ri, "test").status().code() == Code::kConflict);
  auto node = f.ledger->inventory().getNode("node-a");
  CHECK(node->remaining.cores == doctest::Approx(64 - 4 - 4));
}

TEST_CASE("ledger: an instance and its first operation are created together") {
  LedgerFixture f;
  f.addInventory();
  REQUIRE(f.ledger->plans().createPlan(LedgerFixture::plan(), "test").isOk());
  REQUIRE(f.ledger->plans().addDeployment(LedgerFixture::deployment("d1", 1), "test").isOk());
  model::Operation op;
  op.type = model::OperationType::kCreate;
  op.intent = "d1";
  auto created = f.ledger->operations().createInstanceWithOperation("web", "d1", op, "controller");
  REQUIRE(created.isOk());
  CHECK(f.ledger->instances().getMetaInstance(created->meta_instance)->deployment_id == "d1");
  // A person's UPDATE of an instance that runs nowhere does not fit it: the insert is refused.
  op.type = model::OperationType::kUpdate;
  op.intent = "user";
  const int64_t before = f.eventCount();
  CHECK(f.ledger->operations().createInstanceWithOperation("web", "d1", op, "controller").status().code() == Code::kConflict);
  CHECK(f.eventCount() == before);  // no meta instance without its operation
  auto latest = f.ledger->operations().latestOperations();
  REQUIRE(latest.isOk());
  REQUIRE(latest->size() == 1);
  CHECK(latest->front().meta.id == created->meta.id);
}

TEST_CASE("ledger: runtime facts, activation and deployment moves") {
  LedgerFixture f;
  const std::string name = f.addInstance();
  REQUIRE(f.ledger->plans().addDeployment(LedgerFixture::deployment("d2", 1), "test").isOk());
  model::RuntimeInstance ri;
  ri.meta_instance = name;
  ri.node = "node-a";
  auto first = f.ledger->instances().createRuntimeInstance(ri, "test");
  REQUIRE(first.isOk());
  ri.node = "node-b";
  ri.is_active = false;
  auto second = f.ledger->instances().createRuntimeInstance(ri, "test");
  REQUIRE(second.isOk());

  ledger::RuntimeUpdate update;
  update.healthy = true;
  update.ports = Json{{"tcp/80", 31000}};
  update.driver_handle = "pid:1:2";
  auto updated = f.ledger->instances().updateRuntimeInstance(second->meta.id, update, second->meta.generation, "observer");
  REQUIRE(updated.isOk());
  CHECK(updated->healthy);
  CHECK(updated->ports["tcp/80"] == 31000);
  CHECK(updated->driver_handle == "pid:1:2");
  // A writer that read the record before that update is refused, and changes nothing.
  ledger::RuntimeUpdate stale;
  stale.healthy = false;
  auto refused = f.ledger->instances().updateRuntimeInstance(second->meta.id, stale, second->meta.generation, "observer");
  CHECK(refused.status().code() == Code::kConflict);
  CHECK(f.ledger->instances().getRuntimeInstance(second->meta.id)->healthy);

  auto activated = f.ledger->instances().activateRuntimeInstance(second->meta.id, "executor");
  REQUIRE(activated.isOk());
  CHECK(activated->is_active);
  CHECK_FALSE(f.ledger->instances().getRuntimeInstance(first->meta.id)->is_active);
  auto current = f.ledger->instances().currentRuntimeInstances();
  REQUIRE(current.isOk());
  CHECK(current->size() == 2);

  auto moved = f.ledger->instances().setMetaInstanceDeployment(name, "d2", "controller");
  REQUIRE(moved.isOk());
  CHECK(moved->deployment_id == "d2");
  CHECK(f.ledger->instances().setMetaInstanceDeployment(name, "nope", "controller").status().code() == Code::kNotFound);
  auto invariants = f.ledger->checkInvariants();
  REQUIRE(invariants.isOk());
  CHECK(invariants->empty());
}

TEST_CASE("ledger: a state list in SQL is one bound placeholder per state, and names no state") {
  Bindings values;
  const std::string sql = boundStates(values, "released", model::kReleasedRuntimeStates);
  CHECK(sql == "(:released0, :released1)");
  CHECK(sql == placeholderList("released", model::kReleasedRuntimeStates.size()));
  for (model::RuntimeState state : model::valuesOf<model::RuntimeState>()) {
    const bool released = std::find(model::kReleasedRuntimeStates.begin(), model::kReleasedRuntimeStates.end(),
                                    state) != model::kReleasedRuntimeStates.end();
    CHECK_MESSAGE(model::holdsResources(state) == !released, state);
  }
}

namespace {

// Operation `type` on `meta`, as a person asks for it (intent "user", priority 10).
Result<Operation> askAsUser(Ledger& ledger, const std::string& meta, const std::string& type) {
  Operation op;
  op.meta_instance = meta;
  op.type = testing::parsed<model::OperationType>(type);
  op.intent = "user";
  op.priority = 10;
  return ledger.operations().createOperation(op, "alice");
}

// Reserves node-a for `op`'s runtime instance, as the approval stage does.
RuntimeInstance reserveFor(LedgerFixture& f, const Operation& op) {
  RuntimeInstance ri;
  ri.meta_instance = op.meta_instance;
  ri.node = "node-a";
  ri.reservation = {4, 64};
  auto reserved = f.ledger->instances().reserveForOperation(op.meta.id, ri, "approval");
  REQUIRE_MESSAGE(reserved.isOk(), reserved.status().toString());
  return *reserved;
}

// Makes `meta` run: its CREATE reserved, started and SUCCEEDED.
void makeRunning(LedgerFixture& f, const std::string& meta) {
  const Operation create = f.addOperation(meta);
  const RuntimeInstance ri = reserveFor(f, create);
  for (model::RuntimeState state : {model::RuntimeState::kStarting, model::RuntimeState::kRunning}) {
    REQUIRE(f.ledger->instances().setRuntimeInstanceState(ri.meta.id, state, std::nullopt, "executor").isOk());
  }
  for (model::OperationState state :
       {model::OperationState::kApproved, model::OperationState::kRunning, model::OperationState::kSucceeded}) {
    REQUIRE(f.ledger->operations().setOperationState(create.meta.id, state, std::nullopt, "executor").isOk());
  }
}

// A fresh instance with a CREATE whose placement is reserved, and node-a's free cores
// before the reservation.
struct ReservedCreate {
  std::string meta;
  double free_cores = 0;
  Operation create;
  RuntimeInstance reserved;
};

ReservedCreate reservedCreate(LedgerFixture& f) {
  ReservedCreate out;
  out.meta = f.addInstance();
  out.free_cores = f.ledger->inventory().getNode("node-a")->remaining.cores;
  out.create = f.addOperation(out.meta);
  out.reserved = reserveFor(f, out.create);
  return out;
}

// The last event of `kind` on `subject`.
Event lastEvent(Ledger& ledger, const std::string& kind, const std::string& subject) {
  ListOptions o;
  o.limit = kMaxPageSize;
  o.filters["kind"] = kind;
  o.filters["subject"] = subject;
  auto page = ledger.audit().listEvents(o);
  REQUIRE(page.isOk());
  REQUIRE_FALSE(page->items.empty());
  return page->items.back();
}

}  // namespace

TEST_CASE("ledger: cancelling an operation that has not started releases its placement and frees the instance") {
  LedgerFixture f;
  const auto [meta, free_cores, create, reserved] = reservedCreate(f);
  REQUIRE(f.ledger->operations().setOperationState(create.meta.id, model::OperationState::kPendingApproval, std::nullopt, "approval")
              .isOk());

  auto cancelled = f.ledger->operations().cancelOperation(create.meta.id, std::nullopt, "alice", "not today");
  REQUIRE_MESSAGE(cancelled.isOk(), cancelled.status().toString());
  CHECK(cancelled->state == model::OperationState::kCancelled);
  CHECK(cancelled->message == "not today");
  const Event event = lastEvent(*f.ledger, "operation.state", "operation/" + std::to_string(create.meta.id));
  CHECK(event.actor == "alice");
  CHECK(event.data["from"] == "PENDING_APPROVAL");
  CHECK(event.data["to"] == "CANCELLED");
  CHECK(f.ledger->instances().getRuntimeInstance(reserved.meta.id)->state == model::RuntimeState::kTerminated);
  CHECK(f.ledger->inventory().getNode("node-a")->remaining.cores == doctest::Approx(free_cores));
  CHECK(f.ledger->instances().getMetaInstance(meta)->state == model::MetaState::kActive);  // the rollout may still want it
  CHECK(askAsUser(*f.ledger, meta, "CREATE").isOk());         // nothing blocks the instance now
  CHECK(f.ledger->checkInvariants()->empty());

  // An APPROVED operation the executor has not begun can be cancelled too.
  const std::string other = f.ledger->instances().createMetaInstance("web", "d1", "test")->name;
  const Operation approved = f.addOperation(other);
  REQUIRE(
      f.ledger->operations().setOperationState(approved.meta.id, model::OperationState::kApproved, std::nullopt, "approval").isOk());
  CHECK(f.ledger->operations().cancelOperation(approved.meta.id, std::nullopt, "alice", "cancelled by alice").isOk());
}

TEST_CASE("ledger: an operation that has started or ended cannot be cancelled, and the refusal writes nothing") {
  LedgerFixture f;
  const std::string meta = f.addInstance();
  const Operation op = f.addOperation(meta);
  auto refused = [&](const std::string& state_named) {
    const int64_t before = f.eventCount();
    Status status = f.ledger->operations().cancelOperation(op.meta.id, std::nullopt, "alice", "x").status();
    CHECK(status.code() == Code::kConflict);
    CHECK_MESSAGE(status.message().find("is " + state_named + ";") != std::string::npos, status.message());
    CHECK(f.eventCount() == before);
  };
  // A stale generation is refused before anything else.
  CHECK(f.ledger->operations().cancelOperation(op.meta.id, op.meta.generation + 5, "alice", "x").status().code() == Code::kConflict);
  CHECK(f.ledger->operations().getOperation(op.meta.id)->state == model::OperationState::kPending);

  REQUIRE(f.ledger->operations().setOperationState(op.meta.id, model::OperationState::kApproved, std::nullopt, "approval").isOk());
  OperationUpdate attempt;
  attempt.attempts = 1;
  REQUIRE(f.ledger->operations().updateOperation(op.meta.id, attempt, "executor").isOk());
  refused("APPROVED after 1 attempt");  // a retry waiting for its backoff: something may run
  REQUIRE(f.ledger->operations().setOperationState(op.meta.id, model::OperationState::kRunning, std::nullopt, "executor").isOk());
  refused("RUNNING");
  REQUIRE(f.ledger->operations().setOperationState(op.meta.id, model::OperationState::kSucceeded, std::nullopt, "executor").isOk());
  refused("SUCCEEDED");
  CHECK(f.ledger->operations().cancelOperation(9999, std::nullopt, "alice", "x").status().code() == Code::kNotFound);
}

TEST_CASE("ledger: a rejected CREATE releases its placement and leaves its instance STOPPED") {
  LedgerFixture f;
  const auto [meta, free_cores, create, reserved] = reservedCreate(f);
  REQUIRE(f.ledger
              ->operations().setOperationState(create.meta.id, model::OperationState::kRejected, std::nullopt, "approval", "denied",
                                  "policy")
              .isOk());
  const MetaInstance after = *f.ledger->instances().getMetaInstance(meta);
  CHECK(after.state == model::MetaState::kStopped);
  CHECK(after.message.find("was rejected") != std::string::npos);
  CHECK(f.ledger->instances().getRuntimeInstance(reserved.meta.id)->state == model::RuntimeState::kTerminated);
  CHECK(f.ledger->inventory().getNode("node-a")->remaining.cores == doctest::Approx(free_cores));
  CHECK(f.ledger->checkInvariants()->empty());

  // A rejection on an instance that runs changes nothing about it.
  const std::string running = f.ledger->instances().createMetaInstance("web", "d1", "test")->name;
  makeRunning(f, running);
  const Operation update = f.addOperation(running, "UPDATE");
  REQUIRE(f.ledger
              ->operations().setOperationState(update.meta.id, model::OperationState::kRejected, std::nullopt, "approval", "denied",
                                  "policy")
              .isOk());
  CHECK(f.ledger->instances().getMetaInstance(running)->state == model::MetaState::kActive);
}

TEST_CASE("ledger: an operation a person asks for must fit the instance, and a refusal writes nothing") {
  LedgerFixture f;
  const std::string fresh = f.addInstance();
  const std::string running = f.ledger->instances().createMetaInstance("web", "d1", "test")->name;
  makeRunning(f, running);
  const std::string stopped = f.ledger->instances().createMetaInstance("web", "d1", "test")->name;
  REQUIRE(f.ledger->instances().setMetaInstanceState(stopped, model::MetaState::kStopped, std::nullopt, "test").isOk());
  const std::string marked = f.ledger->instances().createMetaInstance("web", "d1", "test")->name;
  REQUIRE(f.ledger->instances().setMetaInstanceState(marked, model::MetaState::kMarkedForDeletion, std::nullopt, "test").isOk());

  struct Refusal {
    std::string meta, type, state_named;
  };
  const Refusal refusals[] = {
      {running, "CREATE", "ACTIVE and its runtime instance is RUNNING"},
      {fresh, "UPDATE", "ACTIVE and runs nowhere"},
      {fresh, "RELOCATE", "ACTIVE and runs nowhere"},
      {stopped, "STOP", "STOPPED"},
      {stopped, "CREATE", "STOPPED"},
      {stopped, "UPDATE", "STOPPED"},
      {marked, "RESTART", "MARKED_FOR_DELETION"},
  };
  for (const Refusal& r : refusals) {
    const int64_t before = f.eventCount();
    Status status = askAsUser(*f.ledger, r.meta, r.type).status();
    CHECK(status.code() == Code::kConflict);
    CHECK_MESSAGE(status.message().rfind("instance '" + r.meta + "': " + r.type + " needs ", 0) == 0, status.message());
    CHECK_MESSAGE(status.message().find("the instance is " + r.state_named) != std::string::npos, status.message());
    CHECK(f.eventCount() == before);
  }
  // A refused one does not cancel the operation it would have superseded either.
  const Operation controller = f.addOperation(fresh, "CREATE");
  CHECK(askAsUser(*f.ledger, fresh, "UPDATE").status().code() == Code::kConflict);
  CHECK(f.ledger->operations().getOperation(controller.meta.id)->state == model::OperationState::kPending);

  CHECK(askAsUser(*f.ledger, running, "RELOCATE").isOk());
  CHECK(askAsUser(*f.ledger, stopped, "RESTART").isOk());
  CHECK(askAsUser(*f.ledger, marked, "DELETE").isOk());  // finishes a deletion that failed
}

TEST_CASE("ledger: aborting a deployment cancels its operations but a DELETE under way, which runs to its end") {
  LedgerFixture f;
  const std::string deleting = f.addInstance();
  auto waiting = f.ledger->instances().createMetaInstance("web", "d1", "test");
  REQUIRE(waiting.isOk());
  REQUIRE(f.ledger
              ->plans().setDeploymentState("web", "d1", model::DeploymentState::kInProgress, std::nullopt, "controller",
                                   "rolling out")
              .isOk());
  const Operation del = f.addOperation(deleting, "DELETE");
  REQUIRE(f.ledger->operations().setOperationState(del.meta.id, model::OperationState::kApproved, std::nullopt, "approval").isOk());
  REQUIRE(f.ledger->operations().setOperationState(del.meta.id, model::OperationState::kRunning, std::nullopt, "executor").isOk());
  const Operation create = f.addOperation(waiting->name, "CREATE");
  // Another DELETE between two attempts: its first attempt failed, the next waits its backoff.
  auto second = f.ledger->instances().createMetaInstance("web", "d1", "test");
  REQUIRE(second.isOk());
  const Operation retrying = f.addOperation(second->name, "DELETE");
  REQUIRE(
      f.ledger->operations().setOperationState(retrying.meta.id, model::OperationState::kApproved, std::nullopt, "approval").isOk());
  REQUIRE(
      f.ledger->operations().setOperationState(retrying.meta.id, model::OperationState::kRunning, std::nullopt, "executor").isOk());
  OperationUpdate failed_once;
  failed_once.attempts = 1;
  REQUIRE(f.ledger->operations().updateOperation(retrying.meta.id, failed_once, "executor").isOk());
  REQUIRE(
      f.ledger->operations().setOperationState(retrying.meta.id, model::OperationState::kApproved, std::nullopt, "executor").isOk());

  RestoreRequest abort{model::DeploymentState::kFailed, "aborted by alice: latency", "abort", "latency", ""};
  REQUIRE(f.ledger->plans().restoreDeployment("web", "d1", abort, "alice").isOk());
  // What a DELETE removed cannot come back: it stays RUNNING and the executor ends it.
  CHECK(f.ledger->operations().getOperation(del.meta.id)->state == model::OperationState::kRunning);
  CHECK(f.ledger->operations().getOperation(retrying.meta.id)->state == model::OperationState::kApproved);
  CHECK(f.ledger->operations().getOperation(create.meta.id)->state == model::OperationState::kCancelled);
}

TEST_CASE("ledger: a hook's hold pauses a rollout, counts as paused time, and its release says for how long") {
  LedgerFixture f;
  f.addInstance();
  REQUIRE(f.ledger
              ->plans().setDeploymentState("web", "d1", model::DeploymentState::kInProgress, std::nullopt, "controller",
                                   "rolling out")
              .isOk());
  auto events = [&](const std::string& kind) {
    auto found = listAll(f.ledger->audit(), &AuditRecords::listEvents, {{"kind", kind}});
    REQUIRE(found.isOk());
    return found.value();
  };

  const HookHold freeze{7, "veto", "held by hook freeze: change freeze"};
  auto held = f.ledger->plans().holdForHook("web", "d1", freeze, "controller");
  REQUIRE_MESSAGE(held.isOk(), held.status().toString());
  CHECK(held->state == model::DeploymentState::kPaused);
  CHECK(held->message == freeze.message);
  CHECK_FALSE(held->paused_since.empty());
  const model::Json note = held->signals[model::kHookHoldSignal];
  CHECK(note["operation"] == 7);
  CHECK(note["kind"] == "veto");
  CHECK(note["since"] == "2026-01-01T00:00:00.000Z");
  REQUIRE(events("deployment.held").size() == 1);
  CHECK(events("deployment.held")[0].data["message"] == freeze.message);

  // Held again for the same reason: nothing new to say, and the hold keeps its start.
  f.clock.advance(std::chrono::seconds(30));
  held = f.ledger->plans().holdForHook("web", "d1", {8, "veto", freeze.message}, "controller");
  REQUIRE(held.isOk());
  CHECK(events("deployment.held").size() == 1);
  CHECK(held->signals[model::kHookHoldSignal]["since"] == "2026-01-01T00:00:00.000Z");
  // A new reason is news.
  held = f.ledger->plans().holdForHook("web", "d1", {8, "delay", "delayed by hook later: 60 s"}, "controller");
  REQUIRE(held.isOk());
  CHECK(held->message == "delayed by hook later: 60 s");
  CHECK(events("deployment.held").size() == 2);

  // Consuming the signals a strategy saw never consumes the hold.
  REQUIRE(f.ledger->plans().consumeSignals("web", "d1", held->signals, "controller").isOk());
  CHECK(f.ledger->plans().getDeployment("web", "d1")->signals.contains(model::kHookHoldSignal));

  f.clock.advance(std::chrono::seconds(60));
  auto released = f.ledger->plans().releaseHookHold("web", "d1", "controller");
  REQUIRE(released.isOk());
  CHECK(released->state == model::DeploymentState::kPaused);  // the strategy decides what comes next
  CHECK(released->message == "hold ended: delayed by hook later: 60 s");
  CHECK_FALSE(released->signals.contains(model::kHookHoldSignal));
  auto ended = events("deployment.released");
  REQUIRE(ended.size() == 1);
  CHECK(ended[0].data["held_seconds"] == 90.0);
  CHECK(ended[0].data["operation"] == 8);
  CHECK(f.ledger->plans().releaseHookHold("web", "d1", "controller").isOk());  // nothing held: no change
  CHECK(events("deployment.released").size() == 1);

  auto resumed = f.ledger->plans().setDeploymentState("web", "d1", model::DeploymentState::kInProgress, std::nullopt,
                                              "controller", "resumed");
  REQUIRE(resumed.isOk());
  CHECK(resumed->paused_seconds == 90.0);

  // A hold ends with the rollout, and a rollout that ended cannot be held.
  REQUIRE(f.ledger->plans().holdForHook("web", "d1", freeze, "controller").isOk());
  auto cancelled = f.ledger->plans().setDeploymentState("web", "d1", model::DeploymentState::kCancelled, std::nullopt,
                                                "controller", "superseded");
  REQUIRE(cancelled.isOk());
  CHECK_FALSE(cancelled->signals.contains(model::kHookHoldSignal));
  CHECK(f.ledger->plans().holdForHook("web", "d1", freeze, "controller").status().code() == Code::kConflict);
}

TEST_CASE("ledger: a rehearsed write answers as the write would and leaves nothing behind") {
  for (const char* url : {"sqlite://:memory:", "file"}) {
    CAPTURE(url);
    const auto dir = tempDir("rehearsal");
    LedgerFixture f(std::string(url) == "file" ? "sqlite://" + (dir / "ledger.db").string() : url);
    f.addInventory();
    const int64_t events = f.eventCount();
    {
      Ledger::Rehearsal rehearsal(*f.ledger);
      Ledger::Rehearsal nested(*f.ledger);  // the outer one's work
      auto created = f.ledger->plans().createPlan(LedgerFixture::plan("web"), "test");
      REQUIRE_MESSAGE(created.isOk(), created.status().toString());
      CHECK(created->name == "web");
      // The same checks and errors as a real write: an unknown cluster's node is refused.
      auto refused = f.ledger->inventory().createNode(LedgerFixture::node("node-c", "nowhere"), "test");
      CHECK_FALSE(refused.isOk());
      // Each write is rehearsed alone: the plan above is not there for the next one.
      CHECK(f.ledger->plans().getPlan("web").status().code() == Code::kNotFound);
    }
    CHECK(f.ledger->plans().getPlan("web").status().code() == Code::kNotFound);
    CHECK(f.eventCount() == events);
    CHECK(f.ledger->checkInvariants()->empty());
    // Writes after it commit as always, and the event chain still holds.
    REQUIRE(f.ledger->plans().createPlan(LedgerFixture::plan("web"), "test").isOk());
    CHECK(f.eventCount() > events);
    auto audit = f.ledger->audit().verifyAudit();
    REQUIRE(audit.isOk());
    CHECK(audit->ok);
    std::filesystem::remove_all(dir);
  }
}
