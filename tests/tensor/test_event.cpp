// Tests for tensor/event.cpp: record, block, query, synchronize and time events on the fake
// CUDA backend.
#include <doctest/doctest.h>

#include <strata/tensor/cuda.h>
#include <strata/tensor/errors.h>
#include <strata/tensor/event.h>

#include <utility>

#include "fake_cuda.h"

using namespace strata;
using strata::testing::FakeCudaBackend;

TEST_CASE("Event: an event never recorded is complete and has no device") {
  Event event;
  CHECK_FALSE(event.is_recorded());
  CHECK(event.query());
  event.synchronize();
  CHECK_THROWS_AS(event.device(), Error);
}

TEST_CASE("Event: record on a stream, then query and synchronize") {
  FakeCudaBackend backend;
  const Stream stream = Stream::create(Device(kCUDA, 1));
  {
    Event event;
    backend.hooks.mark_busy(stream);
    event.record(stream);
    CHECK(event.is_recorded());
    CHECK(event.device() == Device(kCUDA, 1));
    CHECK_FALSE(event.query());
    event.synchronize();
    CHECK(event.query());
    CHECK(backend.hooks.event_synchronizations == 1);
    CHECK(backend.hooks.live_events == 1);
  }
  CHECK(backend.hooks.live_events == 0);  // destroyed with the object
}

TEST_CASE("Event: record() uses the current stream of the current device") {
  FakeCudaBackend backend;
  const Stream stream = Stream::create(Device(kCUDA, 1));
  Event event;
  {
    StreamGuard guard(stream);
    event.record();
  }
  CHECK(event.device() == Device(kCUDA, 1));
  const Stream other = Stream::create(Device(kCUDA, 1));
  event.block(other);
  REQUIRE(backend.hooks.blocks.size() == 1);
  CHECK(backend.hooks.blocks[0] == std::pair<int64_t, int64_t>(stream.id(), other.id()));
}

TEST_CASE("Event: an event stays on the device of its first record") {
  FakeCudaBackend backend;
  Event event;
  event.record(Stream::default_stream(Device(kCUDA, 0)));
  CHECK_THROWS_AS(event.record(Stream::default_stream(Device(kCUDA, 1))), ValueError);
  CHECK_THROWS_AS(event.record(Stream(Device(kCPU), 0)), ValueError);
}

TEST_CASE("Event: elapsed_time between two timed events") {
  FakeCudaBackend backend;
  const Stream stream = Stream::default_stream(Device(kCUDA, 0));
  Event start(kCUDA, /*enable_timing=*/true), end(kCUDA, /*enable_timing=*/true);
  start.record(stream);
  end.record(stream);
  CHECK(start.elapsed_time(end) == doctest::Approx(1.5));
  Event untimed;
  untimed.record(stream);
  CHECK_THROWS_AS(start.elapsed_time(untimed), Error);
  Event never(kCUDA, true);
  CHECK_THROWS_AS(start.elapsed_time(never), Error);
}

TEST_CASE("Event: moving hands over the backend's event") {
  FakeCudaBackend backend;
  Event first;
  first.record(Stream::default_stream(Device(kCUDA, 0)));
  Event second(std::move(first));
  CHECK(second.is_recorded());
  CHECK_FALSE(first.is_recorded());  // NOLINT(bugprone-use-after-move): moved-from is documented empty
  Event third;
  third.record(Stream::default_stream(Device(kCUDA, 1)));
  CHECK(backend.hooks.live_events == 2);
  third = std::move(second);  // third's own event is destroyed
  CHECK(backend.hooks.live_events == 1);
  CHECK(third.device() == Device(kCUDA, 0));
}

TEST_CASE("Event: CUDA events need the backend; CPU events do not exist") {
  strata::testing::NoCudaBackend no_backend;  // as in a build without CUDA
  Event event;
  CHECK_THROWS_WITH_AS(event.record(Stream(Device(kCUDA), 0)),
                       "[cuda] no CUDA backend is loaded (Event.record needs one)", Error);
  Event cpu_event(kCPU);
  CHECK_THROWS_AS(cpu_event.record(Stream(Device(kCPU), 0)), ValueError);
}
