// Tests for dist/nccl.cpp: collectives on CUDA tensors over NCCL, run by every rank of the job.
// They need one GPU per rank (NCCL refuses two ranks on one device) and skip themselves
// otherwise, saying so; `mpirun -np 1` runs them on a single GPU.
#include <doctest/doctest.h>

#include "../test_util.h"

using namespace strata;

namespace {

bool enough_gpus() { return cuda::is_available() && cuda::device_count() >= dist::world_size(); }
const bool skip_nccl = !enough_gpus();

Device my_gpu() { return Device(kCUDA, dist::local_rank() % std::max(1, cuda::device_count())); }

std::vector<double> values(const Tensor& t) {
  Tensor d = t.to(kFloat64).cpu().contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

}  // namespace

TEST_CASE("nccl: all_reduce on CUDA tensors, every op and NCCL dtype" * doctest::skip(skip_nccl)) {
  const int r = dist::rank(), w = dist::world_size();
  for (ScalarType dtype : {kUInt8, kInt8, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64}) {
    CAPTURE(dtype);
    Tensor t = full({5}, r + 1, dtype).to(my_gpu());
    dist::all_reduce(t, dist::ReduceOp::Sum);
    CHECK(values(t) == std::vector<double>(5, w * (w + 1) / 2));
    t = full({2, 3}, r + 1, dtype).to(my_gpu());
    dist::all_reduce(t, dist::ReduceOp::Min);
    CHECK(values(t) == std::vector<double>(6, 1));
  }
  Tensor mean = full({4}, 2.0 * (dist::rank() + 1)).to(my_gpu());
  dist::all_reduce(mean, dist::ReduceOp::Mean, /*async_op=*/true).wait();
  CHECK(values(mean) == std::vector<double>(4, w + 1));
}

TEST_CASE("nccl: broadcast, all_gather and reduce_scatter on CUDA tensors" * doctest::skip(skip_nccl)) {
  const int r = dist::rank(), w = dist::world_size();
  Tensor b = full({3}, r == 0 ? 7.0 : -1.0).to(my_gpu());
  dist::broadcast(b, 0);
  CHECK(values(b) == std::vector<double>(3, 7));
  tensor_list gathered;
  for (int i = 0; i < w; ++i) gathered.push_back(empty({2}, TensorOptions().device(my_gpu())));
  dist::all_gather(gathered, full({2}, static_cast<double>(r)).to(my_gpu()));
  for (int i = 0; i < w; ++i) CHECK(values(gathered[i]) == std::vector<double>(2, i));
  tensor_list inputs;
  for (int i = 0; i < w; ++i) inputs.push_back(full({2}, static_cast<double>(i + r)).to(my_gpu()));
  Tensor out = empty({2}, TensorOptions().device(my_gpu()));
  dist::reduce_scatter(out, inputs, dist::ReduceOp::Sum);
  double expected = 0;
  for (int i = 0; i < w; ++i) expected += r + i;
  CHECK(values(out) == std::vector<double>(2, expected));
}

TEST_CASE("nccl: an Int16 tensor, which NCCL has no type for, is a clear error" * doctest::skip(skip_nccl)) {
  Tensor t = zeros({2}, kInt16).to(my_gpu());
  strata::testing::expect_error<TypeError>([&] { dist::all_reduce(t); }, "[dist::all_reduce]", {"NCCL has no", "Int16"});
}
