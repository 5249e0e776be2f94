// Tests for tensor/stream.cpp: streams as values, the current stream, StreamGuard.
#include <doctest/doctest.h>

#include <strata/tensor/cuda.h>
#include <strata/tensor/errors.h>
#include <strata/tensor/stream.h>

#include <sstream>

#include "fake_cuda.h"

using namespace strata;
using strata::testing::FakeCudaBackend;

TEST_CASE("Stream: CPU streams are names whose work is always done") {
  const Stream stream = Stream::create(Device(kCPU));
  CHECK(stream == Stream::default_stream(Device(kCPU)));
  CHECK(stream == Stream::current_stream(Device(kCPU)));
  CHECK(stream.is_default());
  CHECK(stream.query());
  stream.synchronize();
  StreamGuard guard(stream);
  CHECK(guard.original_stream() == stream);
}

TEST_CASE("Stream: created streams are distinct, non-default, and on the requested device") {
  FakeCudaBackend backend;
  const Stream first = Stream::create(Device(kCUDA, 1));
  const Stream second = Stream::create(Device(kCUDA, 1));
  CHECK(first != second);
  CHECK(first.device() == Device(kCUDA, 1));
  CHECK_FALSE(first.is_default());
  CHECK(Stream::default_stream(Device(kCUDA, 0)) == Stream(Device(kCUDA, 0), 0));
  std::ostringstream text;
  text << Stream(Device(kCUDA, 1), 3);
  CHECK(text.str() == "stream 3 on cuda:1");
}

TEST_CASE("Stream: query and synchronize go to the backend") {
  FakeCudaBackend backend;
  const Stream stream = Stream::create(Device(kCUDA, 0));
  CHECK(stream.query());
  backend.hooks.mark_busy(stream);
  CHECK_FALSE(stream.query());
  stream.synchronize();
  CHECK(stream.query());
  CHECK(backend.hooks.stream_synchronizations == 1);
}

TEST_CASE("StreamGuard: makes the stream and its device current, then restores both") {
  FakeCudaBackend backend;
  const Stream stream = Stream::create(Device(kCUDA, 1));
  CHECK(Stream::current_stream(Device(kCUDA, 1)).is_default());
  {
    StreamGuard guard(stream);
    CHECK(cuda::current_device() == 1);
    CHECK(Stream::current_stream(Device(kCUDA, 1)) == stream);
    CHECK(Stream::current_stream(Device(kCUDA, 0)).is_default());  // other devices keep theirs
    CHECK(guard.original_stream() == Stream::default_stream(Device(kCUDA, 1)));
    {
      const Stream inner_stream = Stream::create(Device(kCUDA, 1));
      StreamGuard inner(inner_stream);
      CHECK(Stream::current_stream(Device(kCUDA, 1)) == inner_stream);
    }
    CHECK(Stream::current_stream(Device(kCUDA, 1)) == stream);
  }
  CHECK(cuda::current_device() == 0);
  CHECK(Stream::current_stream(Device(kCUDA, 1)).is_default());
}

TEST_CASE("Stream: CUDA streams need the backend") {
  strata::testing::NoCudaBackend no_backend;  // as in a build without CUDA
  CHECK_THROWS_WITH_AS(Stream::create(Device(kCUDA)), "[cuda] no CUDA backend is loaded (Stream.create needs one)",
                       Error);
  CHECK_THROWS_AS(Stream(Device(kCUDA), 0).query(), Error);
  CHECK_THROWS_AS(Stream(Device(kCUDA), 0).synchronize(), Error);
  CHECK_THROWS_AS(StreamGuard(Stream(Device(kCUDA), 0)), Error);
  FakeCudaBackend backend;
  CHECK_THROWS_AS(Stream::create(Device(kCUDA, 3)), IndexError);
}

TEST_CASE("cuda::Stream: create, guard and synchronize as in the API") {
  FakeCudaBackend backend;
  cuda::Stream s = cuda::Stream::create();
  CHECK(s.device() == Device(kCUDA, 0));
  {
    cuda::StreamGuard sg(s);
    CHECK(cuda::current_stream() == s);
  }
  CHECK(cuda::current_stream() == cuda::default_stream());
  s.synchronize();
  CHECK(backend.hooks.stream_synchronizations == 1);
  CHECK(cuda::Stream::create(1).device() == Device(kCUDA, 1));
  CHECK_THROWS_AS(cuda::Stream(Stream(Device(kCPU), 0)), ValueError);
}
