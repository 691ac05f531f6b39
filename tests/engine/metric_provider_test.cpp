// The metric providers against a loopback cpp-httplib server playing Prometheus or a JSON
// endpoint: answers, Prometheus error answers, bad JSON, timeouts.
#include "host/engine/metric_provider.h"

#include <doctest/doctest.h>
#include <httplib.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>

#include "tests/support/eventually.h"

using namespace tide;
using namespace tide::engine;
using namespace tide::testing;

namespace {

// A loopback HTTP server answering GETs with `answer(request, response)`; it remembers the
// last request's path and query params.
class FakeMetricsServer {
 public:
  explicit FakeMetricsServer(std::function<void(const httplib::Request&, httplib::Response&)> answer) {
    server_.Get(".*", [this, answer](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        path_ = req.path;
        params_ = req.params;
        ++requests_;
      }
      answer(req, res);
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    REQUIRE(port_ > 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    REQUIRE(eventually([this] { return server_.is_running(); }));
  }
  ~FakeMetricsServer() {
    server_.stop();
    thread_.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string path() {
    std::lock_guard<std::mutex> lock(mu_);
    return path_;
  }
  std::string param(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = params_.find(name);
    return it == params_.end() ? "" : it->second;
  }
  int requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::string path_;
  httplib::Params params_;
  int requests_ = 0;
};

std::function<void(const httplib::Request&, httplib::Response&)> answering(int status, std::string body) {
  return [status, body](const httplib::Request&, httplib::Response& res) {
    res.status = status;
    res.set_content(body, "application/json");
  };
}

model::MetricProvider prometheus(const std::string& url) { return {"prometheus", url, 2000, ""}; }

model::MetricQuery instant(const std::string& text) {
  model::MetricQuery q;
  q.provider = "prom";
  q.query = text;
  return q;
}

}  // namespace

TEST_CASE("prometheus provider: an instant query's one series is its number, asked of /api/v1/query") {
  FakeMetricsServer server(answering(
      200, R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1767614400,"0.25"]}]}})"));
  auto value = fetchMetric(prometheus(server.url()), instant("sum(rate(x[1m]))"));
  REQUIRE_MESSAGE(value.isOk(), value.status().toString());
  CHECK(*value == doctest::Approx(0.25));
  CHECK(server.path() == "/api/v1/query");
  CHECK(server.param("query") == "sum(rate(x[1m]))");
}

TEST_CASE("prometheus provider: a range query asks /api/v1/query_range and reduces its points") {
  FakeMetricsServer server(answering(200, R"({"status":"success","data":{"resultType":"matrix","result":[
      {"metric":{},"values":[[1,"0.1"],[2,"NaN"],[3,"0.4"],[4,"0.1"]]}]}})"));
  model::MetricQuery q = instant("rate(x[1m])");
  q.range_seconds = 300;
  auto max = fetchMetric(prometheus(server.url()), q);
  REQUIRE_MESSAGE(max.isOk(), max.status().toString());
  CHECK(*max == doctest::Approx(0.4));
  CHECK(server.path() == "/api/v1/query_range");
  CHECK(server.param("step") == "30");
  CHECK(std::stod(server.param("end")) - std::stod(server.param("start")) == doctest::Approx(300));

  q.reduce = "avg";
  q.step_seconds = 15;
  auto avg = fetchMetric(prometheus(server.url()), q);
  REQUIRE(avg.isOk());
  CHECK(*avg == doctest::Approx(0.2));  // the NaN point says nothing
  CHECK(server.param("step") == "15");
  q.reduce = "last";
  CHECK(*fetchMetric(prometheus(server.url()), q) == doctest::Approx(0.1));
  q.reduce = "min";
  CHECK(*fetchMetric(prometheus(server.url()), q) == doctest::Approx(0.1));
}

TEST_CASE("prometheus provider: an error answer is reported in Prometheus's own words") {
  FakeMetricsServer server(
      answering(400, R"({"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected \")\""})"));
  auto value = fetchMetric(prometheus(server.url()), instant("sum(x))"));
  REQUIRE(!value.isOk());
  CHECK(value.status().message() == "bad_data: 1:5: parse error: unexpected \")\"");
}

TEST_CASE("prometheus provider: no series, several series, NaN and bad JSON are errors that say so") {
  CHECK(prometheusValue(R"({"status":"success","data":{"resultType":"vector","result":[]}})", "").status().message() ==
        "no data: the query matched no series");
  CHECK(prometheusValue(R"({"status":"success","data":{"resultType":"vector","result":[
          {"metric":{"a":"1"},"value":[1,"1"]},{"metric":{"a":"2"},"value":[1,"2"]}]}})",
                        "")
            .status()
            .message() == "the query answered 2 series; it must answer one (aggregate it, e.g. sum(...))");
  CHECK(prometheusValue(R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"NaN"]}]}})",
                        "")
            .status()
            .message()
            .rfind("no data", 0) == 0);
  CHECK(prometheusValue(R"({"status":"success","data":{"resultType":"scalar","result":[1,"3"]}})", "").value() == 3);

  FakeMetricsServer server(answering(200, "<html>not json</html>"));
  auto value = fetchMetric(prometheus(server.url()), instant("up"));
  REQUIRE(!value.isOk());
  CHECK(value.status().message() == "the answer is not JSON");
}

TEST_CASE("metric providers: a server slower than timeout_ms is a timeout, and a closed port is refused") {
  std::atomic<bool> release{false};
  FakeMetricsServer server([&release](const httplib::Request&, httplib::Response& res) {
    eventually([&release] { return release.load(); }, std::chrono::seconds(30));
    res.set_content("{}", "application/json");
  });
  model::MetricProvider slow = prometheus(server.url());
  slow.timeout_ms = 200;
  auto value = fetchMetric(slow, instant("up"));
  release = true;
  REQUIRE(!value.isOk());
  CHECK(value.status().message() == "no complete answer (timed out after 200 ms or closed)");

  model::MetricProvider closed = prometheus("http://127.0.0.1:1");
  auto refused = fetchMetric(closed, instant("up"));
  REQUIRE(!refused.isOk());
  CHECK(refused.status().message() == "cannot connect (refused or unreachable)");
}

TEST_CASE("http provider: GET the provider's URL with the query appended, the number at json_path") {
  FakeMetricsServer server(answering(200, R"({"data":{"rates":[{"value":0.5},{"value":"0.125"}]}})"));
  model::MetricProvider web{"http", server.url() + "/stats/", 2000, "data.rates[1].value"};
  model::MetricQuery q;
  q.provider = "web";
  q.query = "/web/errors?window=30";
  auto value = fetchMetric(web, q);
  REQUIRE_MESSAGE(value.isOk(), value.status().toString());
  CHECK(*value == doctest::Approx(0.125));
  CHECK(server.path() == "/stats/web/errors");
  CHECK(server.param("window") == "30");

  q.json_path = "data.rates[0].value";
  CHECK(fetchMetric(web, q).value() == doctest::Approx(0.5));
  q.json_path = "data.rates[2].value";
  CHECK(fetchMetric(web, q).status().message() == "the answer has no data.rates[2]");
  q.json_path = "data";
  CHECK(fetchMetric(web, q).status().message().rfind("data is not a number", 0) == 0);
}

TEST_CASE("http provider: an answer that is not 2xx or not JSON is an error") {
  FakeMetricsServer server(answering(503, R"({"error":"down"})"));
  model::MetricProvider web{"http", server.url(), 2000, "value"};
  model::MetricQuery q;
  q.provider = "web";
  q.query = "/x";
  CHECK(fetchMetric(web, q).status().message() == "HTTP 503");
  CHECK(jsonPathValue("{nope", "value").status().message() == "the answer is not JSON");
  CHECK(jsonPathValue("[1, 2.5]", "[1]").value() == doctest::Approx(2.5));
}
