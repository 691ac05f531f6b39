#define DOCTEST_CONFIG_IMPLEMENT
#include <signal.h>

#include <doctest/doctest.h>

// As tide's own main (host/main.cpp): a peer that hangs up is an error on that write, not the
// end of the test process (a health probe test once died of SIGPIPE under load).
int main(int argc, char** argv) {
  ::signal(SIGPIPE, SIG_IGN);
  return doctest::Context(argc, argv).run();
}
