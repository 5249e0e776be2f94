// The main of strata_dist_tests: every rank of the MPI job joins the process group, then runs
// every test case (they call collectives, so all ranks must run the same cases in the same
// order). Run: mpirun -np 2 --oversubscribe build/tests/strata_dist_tests
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <strata/strata.h>

int main(int argc, char** argv) {
  strata::dist::init();
  doctest::Context context(argc, argv);
  return context.run();
}
