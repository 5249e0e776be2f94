// Tests for dist/process_group.cpp, run by every rank of a two-rank job.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "../test_util.h"

using namespace strata;

TEST_CASE("process_group: rank, world size and local rank come from the launcher") {
  CHECK(dist::is_initialized());
  CHECK(dist::world_size() >= 1);
  CHECK(dist::rank() >= 0);
  CHECK(dist::rank() < dist::world_size());
  CHECK(dist::local_rank() >= 0);
  dist::init();  // a second init does nothing
  dist::barrier();
  Tensor ranks = tensor(std::vector<int64_t>{dist::rank()});
  tensor_list all;
  dist::all_gather(all, ranks);
  for (int r = 0; r < dist::world_size(); ++r) CHECK(all[r].item<int64_t>() == r);
}

TEST_CASE("process_group: a rank that does not join makes the others time out with an error, not hang") {
  if (dist::world_size() < 2) return;
  const auto saved = dist::timeout();
  Tensor t = ones({4});
  dist::barrier();  // both ranks start together, so rank 1's lateness is its sleep
  if (dist::rank() == 0) {
    dist::set_timeout(std::chrono::milliseconds(300));
    const auto start = std::chrono::steady_clock::now();
    strata::testing::expect_error<Error>([&] { dist::all_reduce(t); }, "[dist::all_reduce]",
                                         {"rank 0 timed out after 300 ms", "a rank died"});
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
    dist::set_timeout(saved);
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(2000));  // late: rank 0 has given up
    dist::all_reduce(t);  // completes rank 0's abandoned request
  }
  dist::barrier();
  strata::testing::expect_error<ValueError>([] { dist::set_timeout(std::chrono::milliseconds(0)); },
                                            "[dist::set_timeout]", {"positive"});
}
