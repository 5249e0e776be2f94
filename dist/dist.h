#pragma once
// Data-parallel training over MPI: the process group (one process per rank, started by
// mpirun), collectives on tensors, DistributedDataParallel and DistributedSampler.
//
//   dist::init();                                   // in every rank, before anything else of dist::
//   dist::all_reduce(t, dist::ReduceOp::Sum);       // t now holds the sum over the ranks
//   dist::Work work = dist::broadcast(t, 0, /*async_op=*/true);  ... work.wait();
//
// Collectives are ops of the `dist` library (dist::all_reduce_, dist::broadcast_,
// dist::all_gather_, dist::reduce_scatter_; see Note [Collectives as ops] in
// dist/collectives.cpp), so they dispatch like any op: CPU tensors go over MPI. Every wait
// polls with a deadline (set_timeout, STRATA_DIST_TIMEOUT seconds in the environment): a rank
// that died or never joins makes the others throw strata::Error instead of hanging.
#include <chrono>
#include <cstdint>

#include <strata/tensor/tensor.h>

namespace strata::dist {

enum class ReduceOp : int64_t { Sum = 0, Mean = 1, Max = 2, Min = 3 };

// Joins the job the launcher (mpirun) started: reads rank, world size and local rank. Calling
// it again does nothing. MPI is finalized at exit.
void init();
bool is_initialized();
int rank();
int world_size();
int local_rank();  // this process's index among the ranks on its machine
void barrier();

// How long any wait for the other ranks may take before it throws (default 300 s, or
// STRATA_DIST_TIMEOUT seconds from the environment).
void set_timeout(std::chrono::milliseconds timeout);
std::chrono::milliseconds timeout();

// A collective in flight (async_op = true) or done (otherwise). wait() blocks until it is
// complete on this rank, after which the output tensors hold their results; it throws on a
// timeout or an MPI error. A Work that is never waited for keeps its tensors alive.
class Work {
 public:
  Work() = default;
  explicit Work(int64_t id) : id_(id) {}  // the id a dist:: op returns; 0 is "complete"
  void wait();
  bool is_completed();
  int64_t id() const { return id_; }

 private:
  int64_t id_ = 0;
};

// In place: every rank's tensor becomes the reduction of all ranks' tensors (same shape and
// dtype everywhere). Mean needs a floating-point tensor.
Work all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::Sum, bool async_op = false);
// In place: every rank's tensor becomes rank `root`'s.
Work broadcast(const Tensor& tensor, int64_t root = 0, bool async_op = false);
// outputs[r] becomes rank r's `tensor`. An empty `outputs` is filled with world_size() new
// tensors; otherwise it must hold world_size() tensors of tensor's shape and dtype.
Work all_gather(tensor_list& outputs, const Tensor& tensor, bool async_op = false);
// output becomes the reduction over the ranks of their inputs[rank()]; inputs holds
// world_size() tensors of output's shape and dtype.
Work reduce_scatter(const Tensor& output, const tensor_list& inputs, ReduceOp op = ReduceOp::Sum,
                    bool async_op = false);
// The sum, with async_op given: `dist::reduce_scatter(out, in_list, true).wait()`.
inline Work reduce_scatter(const Tensor& output, const tensor_list& inputs, bool async_op) {
  return reduce_scatter(output, inputs, ReduceOp::Sum, async_op);
}

}  // namespace strata::dist

#include <strata/dist/ddp.h>
#include <strata/dist/sampler.h>
