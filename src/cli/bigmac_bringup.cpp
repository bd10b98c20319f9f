#include "cli/cli_app.h"

int main(int argc, char** argv) { return bigmac::cli::run_cli(argc, argv); }
