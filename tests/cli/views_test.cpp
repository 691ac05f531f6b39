#include <sstream>

#include <doctest/doctest.h>

#include "host/cli/views.h"

using namespace tide::cli;

namespace {

// The GET /v1/plans/{name} view of MRDS's nginx plan with one deployment.
Json planView() {
  return Json::parse(R"({
    "plan": {
      "metadata": {"id": 7, "generation": 2, "created_at": "", "updated_at": ""},
      "name": "nginx-deployment-plan", "namespace": "nginx-namespace", "service_name": "nginx-service",
      "matching_capabilities": [
        {"type": "GPU", "comparator": "GTE", "names": ["nvidia-v100", "nvidia-p100"]}
      ],
      "applications": [{
        "payload_name": "nginx-payload", "resources": {"cores": 4.0, "memory_gib": 64.0},
        "ports": [{"protocol": "TCP", "port": 80}, {"protocol": "UDP", "port": 53}],
        "persistent_volumes": [{"storage_class": "SSD", "capacity_gib": 100.0, "mount_path": "/data"}],
        "health_check": null
      }],
      "strategy": {"script": "rolling", "params": {}},
      "approval": {"policies": []},
      "placement": {"max_per_node": 1, "bin_pack": false},
      "state": "ACTIVE", "message": ""
    },
    "deployments": [{
      "metadata": {"id": 1, "generation": 1}, "plan": "nginx-deployment-plan", "deployment_id": "deployment-1",
      "payload_coordinates": [{"payload_name": "nginx-payload", "coordinates": {"image": "nginx:latest"}}],
      "instance_count": 1, "strategy": null, "rollout_state": {}, "state": "PENDING", "message": ""
    }],
    "instance_summary": {"total": 0, "running": 0, "pending": 0, "failed": 0},
    "operations_summary": {},
    "instances": []
  })");
}

std::string show(const Json& view) {
  std::ostringstream out;
  printPlanShow(out, view, tide::parseTimestamp("2026-11-21T12:00:00Z").value());
  return out.str();
}

}  // namespace

TEST_CASE("cli: deployment show prints MRDS's sections for a plan without instances") {
  CHECK(show(planView()) ==
        "Deployment Plan Info\n"
        "Name:                     nginx-deployment-plan\n"
        "ID:                       7\n"
        "Version:                  2\n"
        "Namespace:                nginx-namespace\n"
        "Service Name:             nginx-service\n"
        "Strategy:                 rolling\n"
        "Max Per Node:             1\n"
        "Bin Pack:                 false\n"
        "\n"
        "Status\n"
        "    State:                ACTIVE\n"
        "    Message:              <unset>\n"
        "\n"
        "Matching Compute Capabilities\n"
        "+-----------------+------------+-------------------------+\n"
        "| Capability Type | Comparator |    Capability Names     |\n"
        "+-----------------+------------+-------------------------+\n"
        "|       GPU       |    GTE     | nvidia-v100,nvidia-p100 |\n"
        "+-----------------+------------+-------------------------+\n"
        "Total: 1\n"
        "\n"
        "Applications\n"
        "+---------------+-------+--------------+--------+---------------------------------------------------------+\n"
        "| Payload Name  | Cores | Memory (GiB) | Ports  |                   Persistent Volumes                    |\n"
        "+---------------+-------+--------------+--------+---------------------------------------------------------+\n"
        "| nginx-payload |   4   |      64      | TCP:80 | Storage Class: SSD, Capacity: 100 GB, Mount Path: /data |\n"
        "|               |       |              | UDP:53 |                                                         |\n"
        "+---------------+-------+--------------+--------+---------------------------------------------------------+\n"
        "Total: 1\n"
        "\n"
        "Deployments\n"
        "+---------------+----------------+---------+---------+--------------------------------------------------------"
        "------------+\n"
        "| Deployment ID | Instance Count |  State  | Message |                        Payload Information             "
        "            |\n"
        "+---------------+----------------+---------+---------+--------------------------------------------------------"
        "------------+\n"
        "| deployment-1  |       1        | PENDING |         | Payload Name: nginx-payload, Coordinates: "
        "{\"image\":\"nginx:latest\"} |\n"
        "+---------------+----------------+---------+---------+--------------------------------------------------------"
        "------------+\n"
        "Total: 1\n"
        "\n"
        "Rollout\n"
        "    Deployment ID:        deployment-1\n"
        "    Strategy:             rolling\n"
        "    State:                PENDING\n"
        "    Message:              <unset>\n"
        "    Progress Time:        not started\n"
        "\n"
        "Instance Summary\n"
        "No instances found\n");
}

TEST_CASE("cli: deployment show lists instances with their runtime instances and operations") {
  Json view = planView();
  view["instance_summary"] = {{"total", 1}, {"running", 0}, {"pending", 1}, {"failed", 0}, {"ready", 0}};
  view["operations_summary"] = {
      {"CREATE",
       {{"PENDING", 0}, {"PENDING_APPROVAL", 1}, {"APPROVED", 0}, {"RUNNING", 0}, {"SUCCEEDED", 0}, {"FAILED", 0}}}};
  view["instances"] = Json::parse(R"([{
    "meta_instance": {"name": "nginx-service-a1b2c3", "plan": "nginx-deployment-plan",
                      "deployment_id": "deployment-1", "state": "ACTIVE"},
    "runtime_instances": [
      {"metadata": {"id": 3}, "node": "kind-worker", "is_active": true, "state": "RUNNING", "message": "",
       "ports": {"tcp/80": 31080, "udp/53": 31081}, "health": {"healthy": true, "ready_since": "2026-11-21T12:00:05Z"},
       "coordinates": {"image": "nginx:latest"}},
      {"metadata": {"id": 4}, "node": "kind-worker3", "is_active": false, "state": "PENDING", "message": "passive",
       "ports": {}, "health": {"healthy": false, "ready_since": ""},
       "coordinates": {"command": ["tide", "workload", "--listen", ":8080"]}}
    ],
    "operations": [
      {"metadata": {"id": 9}, "type": "CREATE", "intent": "deployment-1", "state": "PENDING_APPROVAL",
       "requested_by": "controller", "approved_by": "", "attempts": 0, "message": "waiting for a human"}
    ]
  }])");

  std::string text = show(view);
  CHECK(text.find("No instances found") == std::string::npos);
  CHECK(text.find("    Total Instances:      1\n"
                  "    Running Instances:    0\n"
                  "    Pending Instances:    1\n"
                  "    Failed Instances:     0\n"
                  "    Ready Instances:      0\n") != std::string::npos);
  CHECK(text.find("Operations Summary\n"
                  "+----------------+--------------------+------------+----------+-------------+\n"
                  "| Operation Type | # Pending Approval | # Approved | # Failed | # Succeeded |\n"
                  "+----------------+--------------------+------------+----------+-------------+\n"
                  "|     CREATE     |         1          |     0      |    0     |      0      |\n"
                  "|     UPDATE     |         0          |     0      |    0     |      0      |\n") !=
        std::string::npos);
  CHECK(text.find("|     DELETE     |         0          |     0      |    0     |      0      |\n"
                  "+----------------+--------------------+------------+----------+-------------+\n"
                  "\n"
                  "Instances\n") != std::string::npos);
  CHECK(text.ends_with(
      "+----------------------+-----------------------+---------------+--------+---------------------------------"
      "-------------+------------------------------+\n"
      "|  Meta Instance Name  | Deployment Plan Name  | Deployment ID | State  |              Runtime Instances  "
      "             |          Operations          |\n"
      "+----------------------+-----------------------+---------------+--------+---------------------------------"
      "-------------+------------------------------+\n"
      "| nginx-service-a1b2c3 | nginx-deployment-plan | deployment-1  | ACTIVE | Node Name: kind-worker          "
      "             | ID: 9                        |\n"
      "|                      |                       |               |        | Is Active: true                 "
      "             | Type: CREATE                 |\n"
      "|                      |                       |               |        | ID: 3                           "
      "             | Intent ID: deployment-1      |\n"
      "|                      |                       |               |        | State: RUNNING                  "
      "             | State: PENDING_APPROVAL      |\n"
      "|                      |                       |               |        | Host Ports: tcp/80 -> 31080, "
      "udp/53 -> 31081 | Requested By: controller     |\n"
      "|                      |                       |               |        | Healthy: true                   "
      "             | Approved By:                 |\n"
      "|                      |                       |               |        | Ready Since: "
      "2026-11-21T12:00:05Z            | Attempts: 0                  |\n"
      "|                      |                       |               |        | Image: nginx:latest             "
      "             | Message: waiting for a human |\n"
      "|                      |                       |               |        | Message:                        "
      "             |                              |\n"
      "|                      |                       |               |        | ----------------                "
      "             |                              |\n"
      "|                      |                       |               |        | Node Name: kind-worker3         "
      "             |                              |\n"
      "|                      |                       |               |        | Is Active: false                "
      "             |                              |\n"
      "|                      |                       |               |        | ID: 4                           "
      "             |                              |\n"
      "|                      |                       |               |        | State: PENDING                  "
      "             |                              |\n"
      "|                      |                       |               |        | Host Ports:                     "
      "             |                              |\n"
      "|                      |                       |               |        | Healthy: false                  "
      "             |                              |\n"
      "|                      |                       |               |        | Ready Since:                    "
      "             |                              |\n"
      "|                      |                       |               |        | Command: tide workload --listen "
      ":8080        |                              |\n"
      "|                      |                       |               |        | Message: passive                "
      "             |                              |\n"
      "+----------------------+-----------------------+---------------+--------+---------------------------------"
      "-------------+------------------------------+\n"
      "Total: 1\n"));

  // A plan larger than the host's page of instances says where the rest are.
  view["instance_summary"]["total"] = 250;
  view["next_after"] = 100;
  CHECK(show(view).ends_with("Total: 1\nShowing the first 1 of 250 instances; all of them: tide instances list --plan "
                             "nginx-deployment-plan\n"));
}

TEST_CASE("cli: node show prints resources, volumes and labels") {
  Json node = Json::parse(R"({
    "metadata": {"id": 1, "generation": 3}, "name": "kind-worker", "cluster": "local",
    "update_domain": "update-domain-1", "total": {"cores": 64.0, "memory_gib": 512.0},
    "system_reserved": {"cores": 4.0, "memory_gib": 32.0}, "remaining": {"cores": 60.0, "memory_gib": 480.0},
    "capabilities": ["nvidia-v100", "intel-xeon"],
    "local_volumes": [{"mount_path": "/mnt/u001", "storage_class": "SSD", "capacity_gib": 1024.0}],
    "labels": {"rack": "r1"}, "state": "ALLOCATED", "message": ""
  })");
  std::ostringstream out;
  printNodeInfo(out, node);
  std::string text = out.str();
  CHECK(text.starts_with("Node Info\nName:                     kind-worker\n"));
  CHECK(text.find("Capabilities\n    Capability Names:     nvidia-v100, intel-xeon\n") != std::string::npos);
  CHECK(text.find("Remaining Resources\n    Cores:                60\n    Memory (GiB):         480\n") !=
        std::string::npos);
  CHECK(text.find("| /mnt/u001  |      SSD      |      1024      |") != std::string::npos);
  CHECK(
      text.ends_with("Labels\n"
                     "+------+-------+\n"
                     "| Key  | Value |\n"
                     "+------+-------+\n"
                     "| rack |  r1   |\n"
                     "+------+-------+\n"
                     "Total: 1\n"));
}

TEST_CASE("cli: node list shows an agent node's reachability, version and last heartbeat") {
  Json nodes = Json::parse(R"([
    {"name": "n1", "cluster": "edge", "state": "ALLOCATED",
     "agent": {"reachable": true, "version": "0.14.0", "last_heartbeat": "2026-11-21T12:00:00.000Z",
               "heartbeat_age_s": 2.4}},
    {"name": "n2", "cluster": "edge", "state": "ALLOCATED",
     "agent": {"reachable": false, "version": "", "last_heartbeat": null, "heartbeat_age_s": null}},
    {"name": "n3", "cluster": "edge", "state": "ALLOCATED",
     "agent": {"reachable": true, "version": "", "last_heartbeat": null, "heartbeat_age_s": null}},
    {"name": "p1", "cluster": "local", "state": "ALLOCATED"}
  ])");
  std::ostringstream out;
  printNodeTable(out, nodes);
  const std::string text = out.str();
  CHECK(text.find("reachable, 0.14.0, heard 2s ago") != std::string::npos);
  CHECK(text.find("UNREACHABLE, never heard") != std::string::npos);
  // Within heartbeat_ttl_s of its creation a node counts as reachable, though nothing came yet.
  CHECK(text.find("no report yet") != std::string::npos);
  CHECK(text.find("reachable, never heard") == std::string::npos);
  CHECK(text.find("Agent") != std::string::npos);
}
