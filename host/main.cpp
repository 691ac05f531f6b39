#include "host/cli/cli.h"

int main(int argc, char** argv) { return tide::cli::run(argc, argv); }
