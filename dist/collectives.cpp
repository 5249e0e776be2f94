// Collectives on tensors: the `dist` op library (schemas, argument checks, CPU kernels over
// MPI, Meta kernels) and the dist:: functions that call it.
#include <string>

#include <strata/autograd/grad_mode.h>
#include <strata/dispatch/dispatcher.h>
#include <strata/dispatch/library.h>
#include <strata/dist/mpi_runtime.h>
#include <strata/ops/ops.h>

namespace strata::dist::detail {

// The argument checks every backend's kernels share (declared in mpi_runtime.h).
ReduceOp checked_reduce_op(int64_t op, ScalarType dtype, const char* name) {
  STRATA_CHECK_VALUE(op >= 0 && op <= 3, "[", name, "] op must be a dist::ReduceOp (0 to 3), got ", op);
  auto reduce = static_cast<ReduceOp>(op);
  STRATA_CHECK_TYPE(reduce != ReduceOp::Mean || is_floating_point(dtype), "[", name,
                    "] ReduceOp::Mean needs a floating-point tensor, got ", dtype);
  return reduce;
}

void check_per_rank_list(const tensor_list& list, const Tensor& like, const char* what, const char* name) {
  const auto ranks = static_cast<size_t>(world_size());
  STRATA_CHECK_VALUE(list.size() == ranks, "[", name, "] ", what, " must hold one tensor per rank (", ranks,
                     "), got ", list.size());
  for (size_t r = 0; r < list.size(); ++r) {
    STRATA_CHECK_VALUE(list[r].defined(), "[", name, "] ", what, "[", r, "] is undefined");
    STRATA_CHECK_VALUE(list[r].sizes() == like.sizes() && list[r].dtype() == like.dtype(), "[", name, "] ", what, "[",
                       r, "] has shape ", list[r].sizes(), " and dtype ", list[r].dtype(), " but the tensor has shape ",
                       like.sizes(), " and dtype ", like.dtype());
    STRATA_CHECK_VALUE(list[r].device() == like.device(), "[", name, "] ", what, "[", r, "] is on ", list[r].device(),
                       " but the tensor is on ", like.device());
  }
}

void check_root(int64_t root, const char* name) {
  check_initialized(name);
  STRATA_CHECK_VALUE(root >= 0 && root < world_size(), "[", name, "] root must be a rank in [0, ", world_size(),
                     "), got ", root);
}

}  // namespace strata::dist::detail

namespace strata::dist {
namespace {

// Note [Collectives as ops]
// Each collective is an in-place op of the `dist` namespace, registered per key like any
// strata op: dist::all_reduce_(Tensor(a!) self, int op, bool async_op) -> int. The CPU kernel
// starts the MPI collective; the Meta kernel checks the arguments and communicates nothing;
// the Autograd kernel runs the backend kernel (collectives have no derivative here, and the
// dispatcher refuses in-place changes to leaves that require grad, as for every in-place op).
// CUDA kernels (NCCL, dist/nccl.cpp) register under the CUDA key. The op returns the id of the work
// in flight (0 once complete), which dist::Work waits on: the dispatcher passes only schema
// types, so the handle travels as an int.

int checked_count(const Tensor& t, const char* name) {
  STRATA_CHECK_VALUE(t.numel() <= INT32_MAX, "[", name, "] tensors of more than 2^31 - 1 elements are not supported, got ",
                     t.numel());
  return static_cast<int>(t.numel());
}

// A contiguous tensor MPI can use in place of `t`, and the completion that copies it back.
Tensor contiguous_buffer(const Tensor& t) { return t.is_contiguous() ? t : t.contiguous(); }

std::function<void()> finish_in_place(const Tensor& self, const Tensor& buffer, ReduceOp reduce) {
  const bool copy_back = buffer.data_ptr() != self.data_ptr() || !self.is_contiguous();
  if (reduce != ReduceOp::Mean && !copy_back) return {};
  return [self, buffer, reduce, copy_back] {
    if (reduce == ReduceOp::Mean) buffer.div_(world_size());
    if (copy_back) self.copy_(buffer);
  };
}

int64_t start(detail::PendingWork work, int code, bool async_op) {
  detail::check_mpi(code, work.op);
  return detail::finish_or_enqueue(std::move(work), async_op);
}

// ---- all_reduce ----------------------------------------------------------------------------

int64_t all_reduce_cpu(const Tensor& self, int64_t op, bool async_op) {
  const char* name = "dist::all_reduce";
  detail::check_initialized(name);
  ReduceOp reduce = detail::checked_reduce_op(op, self.dtype(), name);
  Tensor buffer = contiguous_buffer(self);
  detail::PendingWork work{MPI_REQUEST_NULL, {self, buffer}, finish_in_place(self, buffer, reduce), name};
  auto lock = detail::lock_mpi();
  int code = MPI_Iallreduce(MPI_IN_PLACE, buffer.data_ptr(), checked_count(buffer, name),
                            detail::mpi_datatype(self.dtype(), name), detail::mpi_reduce_op(reduce, self.dtype(), name),
                            detail::communicator(), &work.request);
  lock.unlock();
  return start(std::move(work), code, async_op);
}

int64_t all_reduce_meta(const Tensor& self, int64_t op, bool /*async_op*/) {
  detail::checked_reduce_op(op, self.dtype(), "dist::all_reduce");
  return 0;
}

// ---- broadcast -----------------------------------------------------------------------------

int64_t broadcast_cpu(const Tensor& self, int64_t root, bool async_op) {
  const char* name = "dist::broadcast";
  detail::check_root(root, name);
  Tensor buffer = contiguous_buffer(self);
  detail::PendingWork work{MPI_REQUEST_NULL, {self, buffer}, finish_in_place(self, buffer, ReduceOp::Sum), name};
  auto lock = detail::lock_mpi();
  int code = MPI_Ibcast(buffer.data_ptr(), checked_count(buffer, name), detail::mpi_datatype(self.dtype(), name),
                        static_cast<int>(root), detail::communicator(), &work.request);
  lock.unlock();
  return start(std::move(work), code, async_op);
}

int64_t broadcast_meta(const Tensor& /*self*/, int64_t root, bool /*async_op*/) {
  detail::check_root(root, "dist::broadcast");
  return 0;
}

// ---- all_gather ----------------------------------------------------------------------------

int64_t all_gather_cpu(const tensor_list& outputs, const Tensor& self, bool async_op) {
  const char* name = "dist::all_gather";
  detail::check_initialized(name);
  detail::check_per_rank_list(outputs, self, "outputs", name);
  Tensor input = self.contiguous();
  Tensor gathered = empty({world_size() * self.numel()}, self.dtype());
  auto copy_out = [outputs, gathered, numel = self.numel()] {
    for (size_t r = 0; r < outputs.size(); ++r)
      outputs[r].copy_(gathered.narrow(0, static_cast<int64_t>(r) * numel, numel).view(outputs[r].sizes()));
  };
  tensor_list keep = outputs;
  keep.insert(keep.end(), {input, gathered});
  detail::PendingWork work{MPI_REQUEST_NULL, std::move(keep), copy_out, name};
  const MPI_Datatype type = detail::mpi_datatype(self.dtype(), name);
  const int count = checked_count(gathered, name) / world_size();
  auto lock = detail::lock_mpi();
  int code = MPI_Iallgather(input.data_ptr(), count, type, gathered.data_ptr(), count, type, detail::communicator(),
                            &work.request);
  lock.unlock();
  return start(std::move(work), code, async_op);
}

int64_t all_gather_meta(const tensor_list& outputs, const Tensor& self, bool /*async_op*/) {
  detail::check_initialized("dist::all_gather");
  detail::check_per_rank_list(outputs, self, "outputs", "dist::all_gather");
  return 0;
}

// ---- reduce_scatter ------------------------------------------------------------------------

int64_t reduce_scatter_cpu(const Tensor& output, const tensor_list& inputs, int64_t op, bool async_op) {
  const char* name = "dist::reduce_scatter";
  detail::check_initialized(name);
  ReduceOp reduce = detail::checked_reduce_op(op, output.dtype(), name);
  detail::check_per_rank_list(inputs, output, "inputs", name);
  tensor_list flat;
  for (const Tensor& input : inputs) flat.push_back(input.reshape({-1}));
  Tensor packed = cat(flat, 0);
  Tensor buffer = output.is_contiguous() ? output : empty(output.sizes(), output.dtype());
  detail::PendingWork work{MPI_REQUEST_NULL, {output, packed, buffer}, finish_in_place(output, buffer, reduce), name};
  const int count = checked_count(packed, name) / world_size();
  auto lock = detail::lock_mpi();
  int code = MPI_Ireduce_scatter_block(packed.data_ptr(), buffer.data_ptr(), count,
                                       detail::mpi_datatype(output.dtype(), name),
                                       detail::mpi_reduce_op(reduce, output.dtype(), name), detail::communicator(),
                                       &work.request);
  lock.unlock();
  return start(std::move(work), code, async_op);
}

int64_t reduce_scatter_meta(const Tensor& output, const tensor_list& inputs, int64_t op, bool /*async_op*/) {
  detail::checked_reduce_op(op, output.dtype(), "dist::reduce_scatter");
  detail::check_initialized("dist::reduce_scatter");
  detail::check_per_rank_list(inputs, output, "inputs", "dist::reduce_scatter");
  return 0;
}

// ---- Autograd: run the backend kernel (see Note [Collectives as ops]) ------------------------

template <auto Call, class... Args>
int64_t without_autograd(Args... args) {
  ExcludeDispatchKeyGuard guard(DispatchKey::Autograd);
  return Call(args...);
}

int64_t call_all_reduce(const Tensor& self, int64_t op, bool async_op);
int64_t call_broadcast(const Tensor& self, int64_t root, bool async_op);
int64_t call_all_gather(const tensor_list& outputs, const Tensor& self, bool async_op);
int64_t call_reduce_scatter(const Tensor& output, const tensor_list& inputs, int64_t op, bool async_op);

}  // namespace
}  // namespace strata::dist

STRATA_LIBRARY(dist, m) {
  m.def("all_reduce_(Tensor(a!) self, int op=0, bool async_op=False) -> int");
  m.def("broadcast_(Tensor(a!) self, int root=0, bool async_op=False) -> int");
  m.def("all_gather_(Tensor(a!)[] outputs, Tensor self, bool async_op=False) -> int");
  m.def("reduce_scatter_(Tensor(a!) output, Tensor[] inputs, int op=0, bool async_op=False) -> int");
}

STRATA_LIBRARY_IMPL(dist, CPU, m) {
  m.impl("all_reduce_", &strata::dist::all_reduce_cpu);
  m.impl("broadcast_", &strata::dist::broadcast_cpu);
  m.impl("all_gather_", &strata::dist::all_gather_cpu);
  m.impl("reduce_scatter_", &strata::dist::reduce_scatter_cpu);
}

STRATA_LIBRARY_IMPL(dist, Meta, m) {
  m.impl("all_reduce_", &strata::dist::all_reduce_meta);
  m.impl("broadcast_", &strata::dist::broadcast_meta);
  m.impl("all_gather_", &strata::dist::all_gather_meta);
  m.impl("reduce_scatter_", &strata::dist::reduce_scatter_meta);
}

STRATA_LIBRARY_IMPL(dist, Autograd, m) {
  using namespace strata;
  using namespace strata::dist;
  m.impl("all_reduce_", &without_autograd<&call_all_reduce, const Tensor&, int64_t, bool>);
  m.impl("broadcast_", &without_autograd<&call_broadcast, const Tensor&, int64_t, bool>);
  m.impl("all_gather_", &without_autograd<&call_all_gather, const tensor_list&, const Tensor&, bool>);
  m.impl("reduce_scatter_", &without_autograd<&call_reduce_scatter, const Tensor&, const tensor_list&, int64_t, bool>);
}

namespace strata::dist {
namespace {

int64_t call_all_reduce(const Tensor& self, int64_t op, bool async_op) {
  static const auto handle = find_op("dist::all_reduce_").typed<int64_t(const Tensor&, int64_t, bool)>();
  return handle.call(self, op, async_op);
}

int64_t call_broadcast(const Tensor& self, int64_t root, bool async_op) {
  static const auto handle = find_op("dist::broadcast_").typed<int64_t(const Tensor&, int64_t, bool)>();
  return handle.call(self, root, async_op);
}

int64_t call_all_gather(const tensor_list& outputs, const Tensor& self, bool async_op) {
  static const auto handle = find_op("dist::all_gather_").typed<int64_t(const tensor_list&, const Tensor&, bool)>();
  return handle.call(outputs, self, async_op);
}

int64_t call_reduce_scatter(const Tensor& output, const tensor_list& inputs, int64_t op, bool async_op) {
  static const auto handle =
      find_op("dist::reduce_scatter_").typed<int64_t(const Tensor&, const tensor_list&, int64_t, bool)>();
  return handle.call(output, inputs, op, async_op);
}

}  // namespace

Work all_reduce(const Tensor& tensor, ReduceOp op, bool async_op) {
  STRATA_CHECK_VALUE(tensor.defined(), "[dist::all_reduce] the tensor is undefined");
  return Work(call_all_reduce(tensor, static_cast<int64_t>(op), async_op));
}

Work broadcast(const Tensor& tensor, int64_t root, bool async_op) {
  STRATA_CHECK_VALUE(tensor.defined(), "[dist::broadcast] the tensor is undefined");
  return Work(call_broadcast(tensor, root, async_op));
}

Work all_gather(tensor_list& outputs, const Tensor& tensor, bool async_op) {
  STRATA_CHECK_VALUE(tensor.defined(), "[dist::all_gather] the tensor is undefined");
  if (outputs.empty())
    for (int r = 0; r < world_size(); ++r) outputs.push_back(empty_like(tensor));
  return Work(call_all_gather(outputs, tensor, async_op));
}

Work reduce_scatter(const Tensor& output, const tensor_list& inputs, ReduceOp op, bool async_op) {
  STRATA_CHECK_VALUE(output.defined(), "[dist::reduce_scatter] the output is undefined");
  return Work(call_reduce_scatter(output, inputs, static_cast<int64_t>(op), async_op));
}

}  // namespace strata::dist
