#pragma once
// dist/'s MPI state, for its own .cpp files only (not installed: MPI stays out of the public
// headers). See Note [Waiting with a deadline] in dist/process_group.cpp.
#include <functional>
#include <mutex>
#include <mpi.h>

#include <strata/dist/dist.h>

namespace strata::dist::detail {

// Throws strata::Error "[op] not initialized..." unless init() ran.
void check_initialized(const char* op);
// Throws strata::Error "[op] MPI error: <MPI's text>" for a code other than MPI_SUCCESS.
void check_mpi(int code, const char* op);
MPI_Comm communicator();
// Serialises MPI calls: hooks, waits and user threads may all reach MPI.
std::unique_lock<std::mutex> lock_mpi();

// Argument checks shared by the CPU (MPI) and CUDA (NCCL) kernels, throwing "[name] ...".
ReduceOp checked_reduce_op(int64_t op, ScalarType dtype, const char* name);
// `list` (called `what`) holds world_size() tensors of `like`'s shape, dtype and device.
void check_per_rank_list(const tensor_list& list, const Tensor& like, const char* what, const char* name);
void check_root(int64_t root, const char* name);

MPI_Datatype mpi_datatype(ScalarType dtype, const char* op);
MPI_Op mpi_reduce_op(ReduceOp reduce, ScalarType dtype, const char* op);

// Polls `request` until it completes; throws after timeout() (see Note [Waiting with a deadline]).
void wait_request(MPI_Request& request, const char* op);

// A started collective: its request, the tensors MPI reads or writes (kept alive until it is
// done) and what to do once it completes (copy a staging buffer back, divide for Mean).
struct PendingWork {
  MPI_Request request = MPI_REQUEST_NULL;
  tensor_list keep_alive;
  std::function<void()> on_complete;
  const char* op = "";
};
// Waits for `work` now (returns 0), or files it and returns the id a Work handle waits on.
int64_t finish_or_enqueue(PendingWork work, bool async_op);

}  // namespace strata::dist::detail
