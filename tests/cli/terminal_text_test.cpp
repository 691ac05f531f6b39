// host/cli/terminal_text.cpp: server text reaches the terminal without control characters.

#include "host/cli/terminal_text.h"

#include <doctest/doctest.h>
#include <httplib.h>

#include <sstream>
#include <string>

#include "tests/cli/cli_test_support.h"

using tide::cli::stripTerminalControls;
using tide::cli::TerminalSafeBuffer;
using tide::testing::contains;
using tide::testing::LiveServer;

TEST_CASE("cli: stripTerminalControls removes escape sequences and control characters") {
  CHECK(stripTerminalControls("plain text, tabs\tand\nnewlines\n") == "plain text, tabs\tand\nnewlines\n");
  CHECK(stripTerminalControls("\x1b[31mred\x1b[0m \x1b[2J\x1b[1;1Hhome") == "red home");
  CHECK(stripTerminalControls("\x1b]0;pwned\x07title \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\") == "title link");
  CHECK(stripTerminalControls("\x1bP+q\x1b\\dcs \x1b(Bcharset \x1b"
                              "c\x1b"
                              "7done") == "dcs charset done");
  CHECK(stripTerminalControls("over\rwrite\b\x7f bell\x07 nul") == std::string("overwrite bell nul"));
  CHECK(stripTerminalControls(std::string("a\0b", 3)) == "ab");
  // C1 controls: as UTF-8 (U+009B is CSI) and as bare bytes; other UTF-8 stays.
  CHECK(stripTerminalControls("\xc2\x9b"
                              "2Jx \x9b"
                              "2Jy") == "2Jx 2Jy");
  CHECK(stripTerminalControls("h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x9a\x80 \xc2\xa0") ==
        "h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x9a\x80 \xc2\xa0");
  CHECK(stripTerminalControls("cut \xe2\x9c") == "cut ");
  CHECK(stripTerminalControls("dangling \x1b") == "dangling ");
  CHECK(stripTerminalControls("\x1b[") == "");
}

TEST_CASE("cli: TerminalSafeBuffer strips whole lines and what is flushed") {
  std::ostringstream target;
  {
    TerminalSafeBuffer buffer(target);
    std::ostream out(&buffer);
    out << "one \x1b[3"
        << "1mred\x1b[0m\n"
        << "two";
    CHECK(target.str() == "one red\n");
    out << std::flush;
    CHECK(target.str() == "one red\ntwo");
    out << " \x1b]0;x\x07three";
  }
  CHECK(target.str() == "one red\ntwo three");
}

TEST_CASE("cli: server text is printed without control characters, in tables and in errors") {
  LiveServer live;
  httplib::Client http("127.0.0.1", live.server->port());
  http.set_bearer_token_auth(live.token.c_str());
  auto created =
      http.Post("/v1/capabilities", R"({"name":"gpu","type":"GPU\u001b[2J\u001b]0;pwned\u0007!"})", "application/json");
  REQUIRE(created);
  REQUIRE(created->status == 201);

  auto listed = live.run({"capability", "list"});
  CHECK(listed.code == 0);
  CHECK(contains(listed.out, "GPU!"));
  CHECK_FALSE(contains(listed.out, "\x1b"));
  CHECK_FALSE(contains(listed.out, "\x07"));

  auto missing = live.run({"node", "show", "evil\x1b[2Jname"});
  CHECK(missing.code == 1);
  CHECK(contains(missing.err, "evil"));
  CHECK_FALSE(contains(missing.err, "\x1b"));
}
