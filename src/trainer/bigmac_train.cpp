#include "trainer/trainer_main.h"

int main(int argc, char** argv) { return bigmac::trainer::run_main(argc, argv); }
