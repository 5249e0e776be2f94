// The CUDA kernels of the dist ops: collectives on CUDA tensors over NCCL. Built when the CUDA
// backend is built and NCCL is found (cmake/StrataDist.cmake).
#include <nccl.h>

#include <array>
#include <mutex>

#include <strata/cuda/runtime.h>
#include <strata/dispatch/library.h>
#include <strata/dist/mpi_runtime.h>
#include <strata/ops/ops.h>
#include <strata/tensor/device_guard.h>
#include <strata/tensor/stream.h>

namespace strata::dist {
namespace {

// Note [NCCL collectives]
// On CUDA tensors the dist ops run over NCCL, one communicator per device, made on the first
// collective on that device: rank 0 draws NCCL's unique id and broadcasts it over MPI, then every
// rank joins with ncclCommInitRank (so `mpirun` launches NCCL jobs too, and every rank must
// reach its first CUDA collective, as for any collective). A collective is queued on the
// caller's current stream like a kernel, so whatever that stream runs next sees its result and
// the op returns 0 ("complete"): Work::wait() has nothing to wait for from the host. Mean is
// NCCL's ncclAvg. Each rank must use its own GPU (NCCL refuses two ranks on one device): with
// `mpirun -np N`, use device local_rank().

void check_nccl(ncclResult_t result, const char* op) {
  STRATA_CHECK(result == ncclSuccess, "[", op, "] NCCL error: ", ncclGetErrorString(result),
               result == ncclInvalidUsage ? " (is every rank on its own GPU?)" : "");
}

struct Communicators {
  std::mutex mutex;
  std::array<ncclComm_t, cuda::detail::kMaxDevices> by_device{};
};
Communicators& communicators() {
  static Communicators* instance = new Communicators();  // never destroyed: NCCL may outlive statics
  return *instance;
}

ncclComm_t communicator_for(const Tensor& tensor, const char* op) {
  detail::check_initialized(op);
  const int device = tensor.device().index();
  STRATA_CHECK_VALUE(device >= 0 && device < cuda::detail::kMaxDevices, "[", op, "] bad device ", tensor.device());
  Communicators& all = communicators();
  std::lock_guard lock(all.mutex);
  if (all.by_device[device] != nullptr) return all.by_device[device];
  ncclUniqueId id{};
  if (rank() == 0) check_nccl(ncclGetUniqueId(&id), op);
  {
    auto mpi = detail::lock_mpi();
    detail::check_mpi(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, detail::communicator()), op);
  }
  DeviceGuard on_device(tensor.device());
  ncclComm_t comm = nullptr;
  check_nccl(ncclCommInitRank(&comm, world_size(), id, rank()), op);
  all.by_device[device] = comm;
  return comm;
}

ncclDataType_t nccl_datatype(ScalarType dtype, const char* op) {
  switch (dtype) {
    case ScalarType::Bool:
    case ScalarType::UInt8: return ncclUint8;
    case ScalarType::Int8: return ncclInt8;
    case ScalarType::Int32: return ncclInt32;
    case ScalarType::Int64: return ncclInt64;
    case ScalarType::Float16: return ncclFloat16;
    case ScalarType::BFloat16: return ncclBfloat16;
    case ScalarType::Float32: return ncclFloat32;
    case ScalarType::Float64: return ncclFloat64;
    default: break;
  }
  strata::detail::throw_error<TypeError>("[", op, "] NCCL has no ", dtype, " type; convert the tensor first (e.g. to Int32)");
}

ncclRedOp_t nccl_reduce_op(int64_t op, ScalarType dtype, const char* name) {
  const ReduceOp reduce = detail::checked_reduce_op(op, dtype, name);
  if (dtype == ScalarType::Bool && reduce == ReduceOp::Sum) return ncclMax;  // logical or, as a bool sum
  switch (reduce) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Mean: return ncclAvg;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Min: return ncclMin;
  }
  return ncclSum;
}

cudaStream_t current_stream_of(const Tensor& tensor) {
  const Stream stream = Stream::current_stream(tensor.device());
  return cuda::detail::native_stream(tensor.device().index(), stream.id());
}

// A contiguous tensor NCCL can use for `t`, copied back into `t` after the collective.
Tensor contiguous_buffer(const Tensor& t) { return t.is_contiguous() ? t : t.contiguous(); }
void copy_back(const Tensor& self, const Tensor& buffer) {
  if (buffer.data_ptr() != self.data_ptr()) self.copy_(buffer);
}

int64_t all_reduce_cuda(const Tensor& self, int64_t op, bool /*async_op*/) {
  const char* name = "dist::all_reduce";
  const ncclRedOp_t reduce = nccl_reduce_op(op, self.dtype(), name);
  ncclComm_t comm = communicator_for(self, name);
  Tensor buffer = contiguous_buffer(self);
  DeviceGuard on_device(self.device());
  check_nccl(ncclAllReduce(buffer.data_ptr(), buffer.data_ptr(), static_cast<size_t>(buffer.numel()),
                           nccl_datatype(self.dtype(), name), reduce, comm, current_stream_of(self)),
             name);
  copy_back(self, buffer);
  return 0;
}

int64_t broadcast_cuda(const Tensor& self, int64_t root, bool /*async_op*/) {
  const char* name = "dist::broadcast";
  detail::check_root(root, name);
  ncclComm_t comm = communicator_for(self, name);
  Tensor buffer = contiguous_buffer(self);
  DeviceGuard on_device(self.device());
  check_nccl(ncclBroadcast(buffer.data_ptr(), buffer.data_ptr(), static_cast<size_t>(buffer.numel()),
                           nccl_datatype(self.dtype(), name), static_cast<int>(root), comm, current_stream_of(self)),
             name);
  copy_back(self, buffer);
  return 0;
}

int64_t all_gather_cuda(const tensor_list& outputs, const Tensor& self, bool /*async_op*/) {
  const char* name = "dist::all_gather";
  detail::check_initialized(name);
  detail::check_per_rank_list(outputs, self, "outputs", name);
  ncclComm_t comm = communicator_for(self, name);
  Tensor input = self.contiguous();
  Tensor gathered = empty({world_size() * self.numel()}, TensorOptions().dtype(self.dtype()).device(self.device()));
  DeviceGuard on_device(self.device());
  check_nccl(ncclAllGather(input.data_ptr(), gathered.data_ptr(), static_cast<size_t>(self.numel()),
                           nccl_datatype(self.dtype(), name), comm, current_stream_of(self)),
             name);
  for (size_t r = 0; r < outputs.size(); ++r)
    outputs[r].copy_(gathered.narrow(0, static_cast<int64_t>(r) * self.numel(), self.numel()).view(outputs[r].sizes()));
  return 0;
}

int64_t reduce_scatter_cuda(const Tensor& output, const tensor_list& inputs, int64_t op, bool /*async_op*/) {
  const char* name = "dist::reduce_scatter";
  const ncclRedOp_t reduce = nccl_reduce_op(op, output.dtype(), name);
  detail::check_initialized(name);
  detail::check_per_rank_list(inputs, output, "inputs", name);
  ncclComm_t comm = communicator_for(output, name);
  tensor_list flat;
  for (const Tensor& input : inputs) flat.push_back(input.reshape({-1}));
  Tensor packed = cat(flat, 0);
  Tensor buffer = contiguous_buffer(output);
  DeviceGuard on_device(output.device());
  check_nccl(ncclReduceScatter(packed.data_ptr(), buffer.data_ptr(), static_cast<size_t>(output.numel()),
                               nccl_datatype(output.dtype(), name), reduce, comm, current_stream_of(output)),
             name);
  copy_back(output, buffer);
  return 0;
}

}  // namespace
}  // namespace strata::dist

STRATA_LIBRARY_IMPL(dist, CUDA, m) {
  m.impl("all_reduce_", &strata::dist::all_reduce_cuda);
  m.impl("broadcast_", &strata::dist::broadcast_cuda);
  m.impl("all_gather_", &strata::dist::all_gather_cuda);
  m.impl("reduce_scatter_", &strata::dist::reduce_scatter_cuda);
}
