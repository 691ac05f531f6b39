// The transport's limits and TLS (host/api/transport.cpp), over real sockets on 127.0.0.1.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <regex>
#include <string>
#include <vector>

#include "host/api/request_inputs.h"
#include "host/api/routes.h"
#include "tests/api/api_test_support.h"
#include "tests/support/eventually.h"
#include "tests/support/self_signed.h"
#include "tests/support/stderr_capture.h"

using namespace tide;
using namespace tide::testing;
using namespace std::chrono_literals;

namespace {

bool mentions(const Reply& reply, const std::string& part) {
  return reply.json()["error"].value("message", "").find(part) != std::string::npos;
}

int connectTo(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  return fd;
}

// What arrives on `fd` until `needle` is in it, the peer closes, or `give_up` passes (a
// liveness bound: the server answers in milliseconds).
std::string receiveUntil(int fd, const std::string& needle, std::chrono::seconds give_up = 30s) {
  const auto deadline = std::chrono::steady_clock::now() + give_up;
  std::string received;
  while (received.find(needle) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd ready{fd, POLLIN, 0};
    if (::poll(&ready, 1, 100) <= 0) continue;
    char buffer[4096];
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    received.append(buffer, static_cast<size_t>(n));
  }
  return received;
}

void sendText(int fd, const std::string& text) {
  REQUIRE(::send(fd, text.data(), text.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(text.size()));
}

struct Drip {
  std::chrono::steady_clock::duration lasted{};
  size_t bytes = 0;      // dripped after the prefix
  bool cut_off = false;  // the server closed the connection
  std::string answer;    // what the server sent before closing
};

// A slow client: sends `prefix`, then one byte every `interval` (each well within the
// server's idle read timeout) until the server closes the connection or `give_up` passes.
Drip dripUntilCutOff(int port, const std::string& prefix, std::chrono::milliseconds interval,
                     std::chrono::seconds give_up) {
  const auto start = std::chrono::steady_clock::now();
  int fd = connectTo(port);
  Drip drip;
  REQUIRE(::send(fd, prefix.data(), prefix.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(prefix.size()));
  while (std::chrono::steady_clock::now() - start < give_up) {
    pollfd ready{fd, POLLIN, 0};
    if (::poll(&ready, 1, static_cast<int>(interval.count())) > 0) {
      char buffer[4096];
      ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n <= 0) {
        drip.cut_off = true;
        break;
      }
      drip.answer.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (::send(fd, "a", 1, MSG_NOSIGNAL) != 1) {
      drip.cut_off = true;
      break;
    }
    ++drip.bytes;
  }
  drip.lasted = std::chrono::steady_clock::now() - start;
  ::close(fd);
  return drip;
}

struct SlowClientRun {
  Drip drip;
  std::vector<int> health_meanwhile;  // GET /healthz statuses while the slow client was connected
};

// A slow client sending `prefix` then a byte every 100 ms to `h`, while this thread asks
// GET /healthz over and over.
SlowClientRun runSlowClient(const ApiHarness& h, const std::string& prefix) {
  const int port = h.server->port();
  auto slow = std::async(std::launch::async, [&] { return dripUntilCutOff(port, prefix, 100ms, 120s); });
  SlowClientRun run;
  while (slow.wait_for(10ms) != std::future_status::ready) run.health_meanwhile.push_back(h.get("/healthz", "").status);
  run.drip = slow.get();
  return run;
}

}  // namespace

TEST_CASE("transport: a body nested deeper than max_json_depth is refused with 400 before it is parsed") {
  ApiHarness h;
  Json before = h.everything();
  const std::string deep = std::string(400'000, '[') + std::string(400'000, ']');
  // Every route that reads a body, through the one check in the dispatcher.
  for (const api::Route& route : api::routeTable()) {
    if (route.method == "GET") continue;
    const std::string path = std::regex_replace(std::string(route.pattern), std::regex("\\{[a-z_]+\\}"), "1");
    Reply refused =
        route.method == "POST" ? h.post(path, deep) : toReply(h.client().Delete(path, {}, deep, "application/json"));
    CHECK_MESSAGE(refused.status == 400, route.method, " ", path);
    CHECK_MESSAGE(mentions(refused, "deeper than the limit of 64 levels (limits.max_json_depth)"), path);
    CHECK(refused.detailNames("body"));
  }
  // YAML's flow style nests the same way, and a declared type does not matter; its block
  // style is held to 64 levels by the YAML reader.
  CHECK(h.post("/v1/manifests", deep, "application/yaml").status == 400);
  std::string block;
  for (int i = 0; i < 400'000; ++i) block += "- ";
  Reply deep_block = h.post("/v1/manifests", block + "1", "application/yaml");
  CHECK(deep_block.status == 400);
  CHECK(mentions(deep_block, "nesting deeper than 64 levels"));
  CHECK(h.post("/v1/policies/evaluate", deep, "text/plain").status == 400);
  std::string objects;
  for (int i = 0; i < 65; ++i) objects += "{\"a\":";
  objects += "1" + std::string(65, '}');
  CHECK(h.post("/v1/capabilities", objects).status == 400);

  // As deep as the limit is fine.
  std::string within = R"({"name":"gpu","type":"GPU","pad":)" + std::string(63, '[') + std::string(63, ']') + "}";
  Reply accepted = h.post("/v1/capabilities", within);
  CHECK_FALSE(mentions(accepted, "max_json_depth"));

  CHECK(h.get("/healthz", "").status == 200);
  CHECK(h.everything() == before);
}

TEST_CASE("transport: checkNestingDepth counts brackets outside strings only") {
  CHECK(api::checkNestingDepth(R"({"a":[1,{"b":[]}]})", 4).isOk());
  CHECK(api::checkNestingDepth(R"({"a":[1,{"b":[]}]})", 3).code() == Code::kInvalidArgument);
  CHECK(api::checkNestingDepth(R"({"a":"[[[[[[ {{{{ \" [[[["})", 1).isOk());
  CHECK(api::checkNestingDepth("]]]]}}}} [", 1).isOk());
  CHECK(api::checkNestingDepth("", 1).isOk());
}

TEST_CASE("transport: a client drip-feeding its request is cut off at the read deadline while others are served") {
  api::ServerOptions options = testServerOptions();
  options.limits.request_read_deadline = 1s;
  options.limits.max_connections = 8;
  ApiHarness h(options);
  // Headers that never end, and a body that never ends: a byte every 100 ms keeps any
  // per-read timeout (5 s) from firing, so only the whole-request deadline can end them.
  const std::string slow_headers = "GET /healthz HTTP/1.1\r\nHost: tide\r\nX-Slow: ";
  const std::string slow_body = "POST /v1/capabilities HTTP/1.1\r\nHost: tide\r\nAuthorization: Bearer " + kAdminToken +
                                "\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"name\":\"";
  StderrCapture captured;
  for (const std::string& prefix : {slow_headers, slow_body}) {
    SlowClientRun run = runSlowClient(h, prefix);
    CHECK(run.drip.cut_off);
    CHECK(run.drip.answer.empty());  // a client this slow gets no answer
    CHECK(run.drip.lasted >= options.limits.request_read_deadline);
    CHECK_FALSE(run.health_meanwhile.empty());
    CHECK(std::ranges::all_of(run.health_meanwhile, [](int status) { return status == 200; }));
  }
  CHECK(h.get("/v1/capabilities").json()["items"].empty());
  // The request whose body never came is logged as cut off, not as a bad request.
  const std::regex cut_off(
      R"((^|\n)tide api: POST /v1/capabilities 408 \d+\.\dms( actor=\S+)? \(cut off: the request was not read in time; no answer sent\)\n)");
  std::string text;
  CHECK_MESSAGE(eventually([&] { return std::regex_search(text = captured.text(), cut_off); }), text);
  CHECK(text.find("POST /v1/capabilities 400") == std::string::npos);
}

TEST_CASE("transport: a client slow to send its headers holds no serving thread and is cut off at the read deadline") {
  api::ServerOptions options = testServerOptions();
  options.limits.request_read_deadline = 2s;
  options.limits.max_connections = 1;
  ApiHarness h(options);
  SlowClientRun run = runSlowClient(h, "GET /healthz HTTP/1.1\r\nX-Slow: ");
  CHECK(run.drip.cut_off);
  CHECK(run.drip.answer.empty());
  CHECK(run.drip.lasted >= options.limits.request_read_deadline);
  CHECK_FALSE(run.health_meanwhile.empty());
  CHECK(std::ranges::all_of(run.health_meanwhile, [](int status) { return status == 200; }));
}

TEST_CASE("transport: connections beyond max_connections are answered 503 and closed") {
  api::ServerOptions options = testServerOptions();
  options.limits.max_connections = 2;
  ApiHarness h(options);
  const std::string wait = "/v1/events?after=" + std::to_string(h.lastEventSeq()) + "&wait=60";
  auto first = std::async(std::launch::async, [&] { return h.get(wait); });
  auto second = std::async(std::launch::async, [&] { return h.get(wait); });
  REQUIRE(eventually([&] { return h.server->waitingRequests() == 2; }));

  Reply refused = h.get("/healthz", "");
  CHECK(refused.status == 503);
  CHECK(refused.errorCode() == "unavailable");
  CHECK(mentions(refused, "limit of 2 connections (limits.max_connections)"));
  CHECK(refused.header("Retry-After") == "1");
  CHECK(refused.header("Connection") == "close");
  Reply refused_post = h.post("/v1/capabilities", R"({"name":"gpu","type":"GPU"})");
  CHECK(refused_post.status == 503);

  REQUIRE(h.ledger->audit().appendEvent("test.wake", "transport", Json::object(), "test").isOk());
  CHECK(first.get().status == 200);
  CHECK(second.get().status == 200);
  CHECK(eventually([&] { return h.get("/healthz", "").status == 200; }));
  CHECK(h.get("/v1/capabilities").json()["items"].empty());
  // Both refusals counted (and any of the retries above).
  std::smatch refusals;
  const std::string metrics = h.get("/metrics", "").body;
  REQUIRE(std::regex_search(metrics, refusals, std::regex("\ntide_http_connections_refused_total (\\d+)\n")));
  CHECK(std::stoi(refusals[1]) >= 2);
}

TEST_CASE("transport: beyond max_waiting_connections a new connection is closed at once, unanswered, and counted") {
  api::ServerOptions options = testServerOptions();
  options.limits.max_waiting_connections = 2;
  ApiHarness h(options);
  const int port = h.server->port();
  // Two connections wait for the rest of their headers; the next has nowhere to wait.
  const int slow_1 = connectTo(port);
  const int slow_2 = connectTo(port);
  sendText(slow_1, "GET /healthz HTTP/1.1\r\nX-Slow: ");
  sendText(slow_2, "GET /healthz HTTP/1.1\r\nX-Slow: ");
  const int flood = connectTo(port);
  sendText(flood, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(receiveUntil(flood, "HTTP/1.1").empty());  // closed, no answer
  ::close(flood);
  ::close(slow_1);
  ::close(slow_2);

  // Counted (with any try below made before the lobby saw the slow ones go).
  Reply metrics;
  CHECK(eventually([&] { return (metrics = h.get("/metrics", "")).status == 200; }));
  std::smatch dropped;
  REQUIRE(std::regex_search(metrics.body, dropped, std::regex("\ntide_http_connections_dropped_total (\\d+)\n")));
  CHECK(std::stoi(dropped[1]) >= 1);
}

// How many connections a test may open to its own server (it holds both ends of each), up to
// `wanted`: the soft limit on open files is raised as far as the hard one allows.
size_t connectionsWithinFileLimit(size_t wanted) {
  rlimit files{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &files) == 0);
  const rlim_t needed = static_cast<rlim_t>(2 * wanted + 256);
  if (files.rlim_cur < needed) {
    files.rlim_cur = std::min(needed, files.rlim_max);
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &files) == 0);
  }
  return std::min<size_t>(wanted, (files.rlim_cur - 256) / 2);
}

// Connections that send the start of a request and never finish its headers.
std::vector<int> openSlowConnections(int port, size_t count) {
  std::vector<int> slow;
  for (size_t i = 0; i < count; ++i) {
    slow.push_back(connectTo(port));
    sendText(slow.back(), "GET /v1/capabilities HTTP/1.1\r\nHost: x\r\nX-Slow: ");
  }
  return slow;
}

TEST_CASE("transport: a client is answered at once while 1,000 connections never finish their headers") {
  const size_t count = connectionsWithinFileLimit(1000);
  if (count < 1000) MESSAGE("the open-file limit allows only ", count, " slow connections");
  ApiHarness h;  // limits.max_connections: 128
  const int port = h.server->port();
  // Accepted in the order they connected, so all of these reach the server before the
  // client's connections below.
  std::vector<int> slow = openSlowConnections(port, count);
  // Generous for a loaded 2-core machine; served, each takes milliseconds. Before the
  // slow connections held the serving threads and the two threads answering 503 waited on
  // each of them in turn, the first request was not answered for minutes.
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  std::vector<int> statuses;
  for (int i = 0; i < 20 && std::chrono::steady_clock::now() < deadline; ++i) {
    // A new client, so a new connection each time, behind the slow ones. (Not Client::stop():
    // Debian's httplib unlocks a mutex there that ThreadSanitizer did not see it lock.)
    httplib::Client client = h.client();
    client.set_connection_timeout(10, 0);
    client.set_read_timeout(10, 0);
    statuses.push_back(toReply(client.Get("/v1/capabilities")).status);
  }
  CHECK(statuses.size() == 20);
  CHECK(std::ranges::all_of(statuses, [](int status) { return status == 200; }));
  CHECK(std::chrono::steady_clock::now() < deadline);
  // The slow ones were neither answered nor closed: each waits for the rest of its headers.
  pollfd first{slow.front(), POLLIN, 0};
  CHECK(::poll(&first, 1, 0) == 0);
  for (int fd : slow) ::close(fd);
}

TEST_CASE("transport: a kept-alive connection between requests holds no thread a new client needs") {
  api::ServerOptions options = testServerOptions();
  options.limits.max_connections = 1;
  ApiHarness h(options);
  httplib::Client kept = h.client();
  kept.set_keep_alive(true);
  CHECK(toReply(kept.Get("/healthz")).status == 200);
  // `kept` stays connected, idle, for longer than the lobby's grace (a few milliseconds) and
  // shorter than the 2 s keep-alive; each new client is served meanwhile, not refused.
  // Nor is a client that sends its next request the moment it has its answer (before, it
  // could find the thread that answered still counted as serving, and got 503).
  for (int i = 0; i < 50; ++i) CHECK(h.get("/healthz", "").status == 200);
  CHECK(toReply(kept.Get("/healthz")).status == 200);
}

TEST_CASE("transport: over max_connections a client is answered 503 at once while slow connections wait") {
  api::ServerOptions options = testServerOptions();
  options.limits.max_connections = 2;
  ApiHarness h(options);
  const int port = h.server->port();
  const std::string wait = "/v1/events?after=" + std::to_string(h.lastEventSeq()) + "&wait=60";
  auto first = std::async(std::launch::async, [&] { return h.get(wait); });
  auto second = std::async(std::launch::async, [&] { return h.get(wait); });
  REQUIRE(eventually([&] { return h.server->waitingRequests() == 2; }));
  std::vector<int> slow = openSlowConnections(port, connectionsWithinFileLimit(200));
  httplib::Client client = h.client();
  client.set_read_timeout(10, 0);
  const auto start = std::chrono::steady_clock::now();
  Reply refused = toReply(client.Get("/healthz"));
  CHECK(refused.status == 503);
  CHECK(refused.header("Retry-After") == "1");
  CHECK(std::chrono::steady_clock::now() - start < 10s);  // before: 2 s for each slow one ahead of it
  for (int fd : slow) ::close(fd);
  REQUIRE(h.ledger->audit().appendEvent("test.wake", "transport", Json::object(), "test").isOk());
  CHECK(first.get().status == 200);
  CHECK(second.get().status == 200);
  CHECK(eventually([&] { return h.get("/healthz", "").status == 200; }));
}

TEST_CASE("transport: a client that waits for 100 Continue gets it before it sends the body") {
  ApiHarness h;
  const int fd = connectTo(h.server->port());
  const std::string body = R"({"name":"gpu","type":"GPU"})";
  sendText(fd, "POST /v1/capabilities HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + kAdminToken +
                   "\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: " +
                   std::to_string(body.size()) + "\r\n\r\n");
  const std::string interim = receiveUntil(fd, "\r\n\r\n");
  CHECK(interim.starts_with("HTTP/1.1 100 Continue\r\n"));
  sendText(fd, body);
  CHECK(receiveUntil(fd, R"("name":"gpu")").starts_with("HTTP/1.1 201 "));
  ::close(fd);
  CHECK(h.get("/v1/capabilities/gpu").status == 200);
}

TEST_CASE("transport: an event stream's headers reach the client before its first event, each event as it comes") {
  ApiHarness h;
  const int fd = connectTo(h.server->port());
  sendText(fd, "GET /v1/events/stream?after=" + std::to_string(h.lastEventSeq()) +
                   " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + kViewerToken + "\r\n\r\n");
  // The stream has nothing to send for a heartbeat's time (15 s): what arrives first is
  // the headers alone, not the headers held back until the stream's first piece.
  const std::string headers = receiveUntil(fd, "\r\n\r\n");
  CHECK(headers.starts_with("HTTP/1.1 200 "));
  CHECK(headers.find("text/event-stream") != std::string::npos);
  CHECK(headers.ends_with("\r\n\r\n"));
  for (const char* kind : {"test.first", "test.second"}) {
    REQUIRE(h.ledger->audit().appendEvent(kind, "transport", Json::object(), "test").isOk());
    CHECK(receiveUntil(fd, std::string("event: ") + kind + "\n").find(kind) != std::string::npos);
  }
  ::close(fd);
}

TEST_CASE("transport: request lines and headers beyond the limits are refused with 400") {
  ApiHarness h;
  httplib::Headers many;
  for (int i = 0; i < 150; ++i) many.emplace("X-Many-" + std::to_string(i), "v");
  Reply too_many = toReply(h.client().Get("/healthz", many));
  CHECK(too_many.status == 400);
  CHECK(mentions(too_many, "more than the limit of 100 header fields (limits.max_headers)"));
  CHECK(too_many.detailNames("headers"));

  Reply too_big = toReply(h.client().Get("/healthz", {{"X-Big", std::string(20'000, 'b')}}));
  CHECK(too_big.status == 400);
  CHECK(mentions(too_big, "larger than the limit of 16384 bytes (limits.max_header_bytes)"));

  Reply long_line = h.get("/healthz?pad=" + std::string(20'000, 'p'), "");
  CHECK(long_line.status == 400);
  CHECK(mentions(long_line, "limits.max_header_bytes"));
  Reply long_target = h.get("/healthz?pad=" + std::string(10'000, 'p'), "");
  CHECK(long_target.status == 400);

  httplib::Headers within;
  for (int i = 0; i < 90; ++i) within.emplace("X-Ok-" + std::to_string(i), std::string(100, 'v'));
  CHECK(toReply(h.client().Get("/healthz", within)).status == 200);
}

// Sends `request` on a fresh connection and returns all the server sends until it closes.
std::string exchangeUntilClosed(int port, const std::string& request) {
  const int fd = connectTo(port);
  sendText(fd, request);
  std::string answer = receiveUntil(fd, "\x01never\x01");
  ::close(fd);
  return answer;
}

size_t responsesIn(const std::string& answer) {
  size_t count = 0;
  for (size_t at = answer.find("HTTP/1.1 "); at != std::string::npos; at = answer.find("HTTP/1.1 ", at + 1)) ++count;
  return count;
}

TEST_CASE("transport: framing a proxy could read differently is refused with 400 and the connection closed") {
  ApiHarness h;
  const int port = h.server->port();
  const std::string smuggled = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  struct Case {
    std::string name;
    std::string request;
    const char* says;
  };
  const std::vector<Case> cases = {
      {"Transfer-Encoding and Content-Length",
       "POST /v1/plans HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" +
           smuggled,
       "both Transfer-Encoding and Content-Length"},
      {"two different Content-Lengths",
       "POST /v1/plans HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n{}" + smuggled,
       "Content-Length is given twice"},
      {"a Content-Length that is not a number", "POST /v1/plans HTTP/1.1\r\nHost: x\r\nContent-Length: 2x\r\n\r\n{}",
       "not a number"},
      {"a malformed request line", "GARBAGE\r\n\r\n" + smuggled, "malformed request line"},
      {"a target with a space", "GET /healthz extra HTTP/1.1\r\nHost: x\r\n\r\n" + smuggled, "malformed request line"},
      {"a header line without a colon", "GET /healthz HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n" + smuggled,
       "has no field name and colon"},
      {"white space before the colon", "GET /healthz HTTP/1.1\r\nHost : x\r\n\r\n" + smuggled,
       "white space between the field name and the colon"},
      {"a folded header line", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  continued\r\n\r\n" + smuggled,
       "folded"},
      // httplib skips a header line that ends in a bare LF (and does not end the headers at
      // a bare blank line), where a proxy may honour it.
      {"a header line ending in a bare LF",
       "POST /v1/plans HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\n\r\n5\r\n" + smuggled, "bare LF"},
      {"headers ended by a bare LF",
       "GET /healthz HTTP/1.1\r\nHost: x\r\n\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n" + smuggled,
       "bare LF"},
      {"a bare CR inside a header line",
       "POST /v1/plans HTTP/1.1\r\nHost: x\r\nX-A: 1\rTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n{}" +
           smuggled,
       "control character"},
      {"a field name that is not a token", "GET /healthz HTTP/1.1\r\nHost: x\r\nX(A): 1\r\n\r\n" + smuggled,
       "field name"},
      // httplib reads a body as chunked only when the first Transfer-Encoding says exactly
      // "chunked" (after percent-decoding it); anything else it would read as no body at all.
      {"a transfer coding other than chunked",
       "POST /v1/plans HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n" + smuggled,
       "Transfer-Encoding"},
      {"Transfer-Encoding twice",
       "POST /v1/plans HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\nTransfer-Encoding: "
       "chunked\r\n\r\n0\r\n\r\n" +
           smuggled,
       "Transfer-Encoding"},
      {"a percent-encoded transfer coding",
       "POST /v1/plans HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: %63hunked\r\n\r\n0\r\n\r\n" + smuggled,
       "Transfer-Encoding"},
      {"Transfer-Encoding in HTTP/1.0",
       "POST /v1/plans HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled, "HTTP/1.0"},
      {"a control character in the target", "GET /healthz\x01 HTTP/1.1\r\nHost: x\r\n\r\n" + smuggled,
       "malformed request line"},
      // A method httplib does not know fails its parser, not tide's: still one answer.
      {"an unknown method", "BREW /healthz HTTP/1.1\r\nHost: x\r\n\r\n" + smuggled, "400"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const std::string answer = exchangeUntilClosed(port, c.request);
    CHECK(answer.starts_with("HTTP/1.1 400"));
    CHECK(answer.find(c.says) != std::string::npos);
    CHECK(answer.find("Connection: close") != std::string::npos);
    CHECK(responsesIn(answer) == 1);  // what followed was never read as a second request
  }
  // The same Content-Length twice is the same framing, and is served.
  const std::string twice = exchangeUntilClosed(
      port, "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  CHECK(twice.starts_with("HTTP/1.1 200"));
  // A chunked body alone is fine.
  const std::string chunked = exchangeUntilClosed(
      port, "POST /v1/capabilities HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + kAdminToken +
                "\r\nContent-Type: application/json\r\nTransfer-Encoding: Chunked\r\nConnection: close\r\n\r\n"
                "1b\r\n{\"name\":\"gpu\",\"type\":\"GPU\"}\r\n0\r\n\r\n");
  CHECK_MESSAGE(chunked.starts_with("HTTP/1.1 201"), chunked);
}

TEST_CASE("transport: a method a path does not serve is 405 with Allow, whichever method it is") {
  ApiHarness h;
  const int port = h.server->port();
  for (const std::string method : {"PATCH", "PUT", "TRACE", "CONNECT", "OPTIONS"}) {
    CAPTURE(method);
    const std::string answer =
        exchangeUntilClosed(port, method + " /v1/plans HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + kAdminToken +
                                      "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    CHECK(answer.starts_with("HTTP/1.1 405"));
    const size_t allow = answer.find("\r\nAllow: ");
    REQUIRE(allow != std::string::npos);
    const std::string allowed = answer.substr(allow + 9, answer.find("\r\n", allow + 2) - allow - 9);
    CHECK(allowed.find("GET") != std::string::npos);
    CHECK(allowed.find("POST") != std::string::npos);
    CHECK(answer.find("method_not_allowed") != std::string::npos);
  }
  const std::string head = exchangeUntilClosed(port, "HEAD /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  CHECK(head.starts_with("HTTP/1.1 200"));
  const std::string unknown =
      exchangeUntilClosed(port, "TRACE /v1/nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  CHECK(unknown.starts_with("HTTP/1.1 404"));
}

TEST_CASE("transport: with tls.cert and tls.key the API speaks HTTPS only") {
  SelfSignedCertificate certificate;
  api::ServerOptions options = testServerOptions();
  options.tls = {certificate.cert, certificate.key};
  ApiHarness h(options);

  httplib::SSLClient tls("127.0.0.1", h.server->port());
  tls.set_ca_cert_path(certificate.cert);
  tls.enable_server_certificate_verification(true);
  tls.set_bearer_token_auth(kAdminToken.c_str());
  tls.set_keep_alive(true);
  Reply health = toReply(tls.Get("/healthz"));
  CHECK(health.status == 200);
  CHECK(health.json() == Json{{"status", "ok"}});
  CHECK(toReply(tls.Post("/v1/capabilities", R"({"name":"gpu","type":"GPU"})", "application/json")).status == 201);
  CHECK(toReply(tls.Get("/v1/capabilities/gpu")).json()["name"] == "gpu");
  // The limits hold under TLS too.
  const std::string deep = std::string(1000, '[') + std::string(1000, ']');
  CHECK(toReply(tls.Post("/v1/capabilities", deep, "application/json")).status == 400);

  CHECK(h.get("/healthz", "").status == 0);  // plain HTTP gets no answer
  httplib::SSLClient untrusting("127.0.0.1", h.server->port());
  untrusting.enable_server_certificate_verification(true);
  auto refused = untrusting.Get("/healthz");
  CHECK_FALSE(refused);
  CHECK(refused.error() == httplib::Error::SSLServerVerification);
  CHECK(toReply(tls.Get("/healthz")).status == 200);
}

TEST_CASE("transport: TLS files that cannot be used stop start() naming them") {
  SelfSignedCertificate certificate, other;
  auto startWith = [](const api::TlsFiles& tls) {
    api::ServerOptions options = testServerOptions();
    options.tls = tls;
    SystemClock clock;
    auto opened = ledger::Ledger::open("sqlite://:memory:", clock);
    REQUIRE(opened.isOk());
    api::ApiServer server(options, *opened.value(), clock);
    return server.start();
  };
  Status missing = startWith({"/nonexistent/cert.pem", certificate.key});
  CHECK(missing.code() == Code::kInvalidArgument);
  CHECK(missing.message().find("tls.cert: cannot load a PEM certificate from /nonexistent/cert.pem") == 0);
  Status mismatched = startWith({certificate.cert, other.key});
  CHECK(mismatched.code() == Code::kInvalidArgument);
  CHECK(mismatched.message().find("is not the key of the certificate") != std::string::npos);
  CHECK(startWith({certificate.cert, ""}).code() == Code::kInvalidArgument);
}

TEST_CASE("transport: exposureWarnings names auth off and a listener beyond loopback without TLS") {
  api::ServerOptions options;
  CHECK(api::exposureWarnings(options).empty());
  options.host = "0.0.0.0";
  REQUIRE(api::exposureWarnings(options).size() == 1);
  CHECK(api::exposureWarnings(options)[0].find("without TLS") != std::string::npos);
  options.tls = {"cert.pem", "key.pem"};
  CHECK(api::exposureWarnings(options).empty());
  options.auth_enabled = false;
  REQUIRE(api::exposureWarnings(options).size() == 1);
  CHECK(api::exposureWarnings(options)[0].find("auth is off") == 0);
  for (const char* loopback : {"127.0.0.1", "127.0.1.1", "localhost", "::1"}) {
    api::ServerOptions local;
    local.host = loopback;
    CHECK_MESSAGE(api::exposureWarnings(local).empty(), loopback);
  }
}
