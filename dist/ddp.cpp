// DistributedDataParallel's reducer: gradient buckets, the hooks that fill them and the
// all-reduces that average them.
#include <algorithm>
#include <sstream>
#include <unordered_set>

#include <strata/autograd/grad_mode.h>
#include <strata/autograd/variable.h>
#include <strata/dist/dist.h>
#include <strata/ops/ops.h>

namespace strata::dist {
namespace detail {

// Note [Gradient buckets]
// As PyTorch's DDP does, parameters are grouped into buckets of about bucket_cap_mb (one dtype
// each) in reverse registration order, roughly the order backward produces their gradients.
// Each bucket owns one flat tensor. A hook on every parameter (a leaf hook, run by its
// AccumulateGrad with this backward's gradient) copies the parameter's full local gradient
// (what .grad holds, from no_sync steps, plus the new one) into its slot. When a bucket's last
// slot is filled, the bucket is all-reduced asynchronously (MPI_Iallreduce, Mean) while
// backward goes on computing the gradients of earlier layers. Buckets start in index order on
// every rank, whatever order the hooks run in, so the ranks' collectives match.
//
// The hook of the step's last gradient finishes the step: it waits for every bucket and
// writes the averaged slices into each parameter's .grad. Its own parameter's AccumulateGrad
// has not run yet, so that hook zeroes the .grad it adds to (or leaves it undefined) and
// returns the averaged slice as the gradient to accumulate: after backward every .grad holds
// exactly the mean over the ranks. Parameters the output does not depend on never see a
// hook; with find_unused_parameters they are found by walking the graph after forward and
// count as ready from the start, contributing what their .grad holds (zero when undefined).
struct Reducer::State {
  struct Bucket {
    std::vector<size_t> params;    // indices into State::params
    std::vector<int64_t> offsets;  // each one's first element in flat
    Tensor flat;
    size_t pending = 0;  // slots not filled yet this step
    Work work;
    bool launched = false;
  };

  tensor_list params;
  std::vector<std::string> names;
  std::vector<unsigned> hooks;
  std::vector<size_t> bucket_of;  // param -> bucket
  std::vector<size_t> slot_of;    // param -> position in its bucket
  std::vector<Bucket> buckets;
  std::vector<bool> ready;
  size_t ready_count = 0;
  size_t next_launch = 0;
  bool armed = false;
  DistributedDataParallelOptions options;
  nn::Module* module = nullptr;

  Tensor slot(size_t param) const {
    const Bucket& bucket = buckets[bucket_of[param]];
    const size_t slot = slot_of[param];
    return bucket.flat.narrow(0, bucket.offsets[slot], params[param].numel()).view(params[param].sizes());
  }
  void build_buckets();
  void reset_step();
  void mark_ready(size_t param, const Tensor& local_gradient);
  void launch_ready_buckets();
  Tensor finish_step(size_t current);
  Tensor on_gradient(size_t param, const Tensor& gradient);
  void mark_unused(const Tensor& output);
};

void Reducer::State::build_buckets() {
  const auto cap = static_cast<int64_t>(options.bucket_cap_mb_ * 1024 * 1024);
  bucket_of.assign(params.size(), 0);
  slot_of.assign(params.size(), 0);
  std::vector<int64_t> sizes;  // elements per bucket
  std::vector<ScalarType> dtypes;
  std::vector<Device> devices;
  for (size_t i = params.size(); i-- > 0;) {
    const Tensor& p = params[i];
    const auto element = static_cast<int64_t>(element_size(p.dtype()));
    const bool fits = !buckets.empty() && dtypes.back() == p.dtype() && devices.back() == p.device() &&
                      (sizes.back() + p.numel()) * element <= cap;
    if (!fits) {
      buckets.emplace_back();
      sizes.push_back(0);
      dtypes.push_back(p.dtype());
      devices.push_back(p.device());
    }
    Bucket& bucket = buckets.back();
    bucket_of[i] = buckets.size() - 1;
    slot_of[i] = bucket.params.size();
    bucket.params.push_back(i);
    bucket.offsets.push_back(sizes.back());
    sizes.back() += p.numel();
  }
  for (size_t b = 0; b < buckets.size(); ++b)
    buckets[b].flat = zeros({sizes[b]}, TensorOptions().dtype(dtypes[b]).device(devices[b]));
}

void Reducer::State::reset_step() {
  ready.assign(params.size(), false);
  ready_count = 0;
  next_launch = 0;
  for (Bucket& bucket : buckets) {
    bucket.pending = bucket.params.size();
    bucket.launched = false;
    bucket.work = Work();
  }
}

void Reducer::State::mark_ready(size_t param, const Tensor& local_gradient) {
  if (ready[param]) return;  // a second gradient in one step (a reused graph): the first counts
  ready[param] = true;
  ++ready_count;
  Tensor destination = slot(param);
  if (local_gradient.defined()) destination.copy_(local_gradient);
  else destination.zero_();
  if (--buckets[bucket_of[param]].pending == 0) launch_ready_buckets();
}

void Reducer::State::launch_ready_buckets() {
  while (next_launch < buckets.size() && buckets[next_launch].pending == 0) {
    Bucket& bucket = buckets[next_launch++];
    bucket.work = all_reduce(bucket.flat, ReduceOp::Mean, /*async_op=*/true);
    bucket.launched = true;
  }
  // MPI progresses non-blocking collectives only inside MPI calls: poke the ones in flight.
  for (size_t b = 0; b < next_launch; ++b) buckets[b].work.is_completed();
}

Tensor Reducer::State::finish_step(size_t current) {
  armed = false;
  for (Bucket& bucket : buckets) bucket.work.wait();
  Tensor returned;
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor averaged = slot(i);
    Tensor grad = params[i].grad();
    if (i == current) {
      if (grad.defined()) grad.zero_();  // AccumulateGrad adds the returned gradient to it
      returned = averaged.clone();
    } else if (grad.defined()) {
      grad.copy_(averaged);
    } else {
      params[i].set_grad(averaged.clone());
    }
  }
  return returned;
}

// The hook on params[param]; see Note [Gradient buckets].
Tensor Reducer::State::on_gradient(size_t param, const Tensor& gradient) {
  if (!armed) return {};  // no_sync, or a backward DDP did not prepare: accumulate locally
  NoGradGuard no_grad;
  Tensor held = params[param].grad();
  mark_ready(param, held.defined() ? held + gradient : gradient);
  if (ready_count == params.size()) return finish_step(param);
  return {};
}

// Counts the parameters `output` does not depend on as ready (find_unused_parameters).
void Reducer::State::mark_unused(const Tensor& output) {
  std::unordered_set<const TensorImpl*> used;
  std::unordered_set<const autograd::Node*> seen;
  std::vector<std::shared_ptr<autograd::Node>> stack;
  if (output.grad_fn()) stack.push_back(output.grad_fn());
  else if (output.requires_grad()) used.insert(output.impl());
  while (!stack.empty()) {
    std::shared_ptr<autograd::Node> node = std::move(stack.back());
    stack.pop_back();
    if (!seen.insert(node.get()).second) continue;
    if (node->is_accumulator())
      used.insert(static_cast<const autograd::AccumulateGrad&>(*node).variable().impl());
    for (const autograd::Edge& edge : node->next_edges())
      if (edge.valid()) stack.push_back(edge.function);
  }
  NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i)
    if (!used.count(params[i].impl())) mark_ready(i, params[i].grad());
  if (ready_count == params.size()) finish_step(params.size());
}

// Every rank must hold the same model: else the buckets' collectives would not match.
void check_same_model_everywhere(const tensor_list& params) {
  int64_t elements = 0;
  for (const Tensor& p : params) elements += p.numel();
  tensor_list all;
  all_gather(all, tensor(std::vector<int64_t>{static_cast<int64_t>(params.size()), elements}));
  const int64_t* first = all[0].data_ptr<int64_t>();
  for (size_t r = 1; r < all.size(); ++r) {
    const int64_t* other = all[r].data_ptr<int64_t>();
    STRATA_CHECK_VALUE(other[0] == first[0] && other[1] == first[1], "[DistributedDataParallel] rank ", r, " has ",
                       other[0], " parameters (", other[1], " elements) but rank 0 has ", first[0], " (", first[1],
                       " elements): every rank must wrap the same model");
  }
}

Reducer::Reducer(nn::Module& module, const DistributedDataParallelOptions& options) : state_(std::make_unique<State>()) {
  STRATA_CHECK_VALUE(options.bucket_cap_mb_ > 0, "[DistributedDataParallel] bucket_cap_mb must be positive, got ",
                     options.bucket_cap_mb_);
  State& state = *state_;
  state.options = options;
  state.module = &module;
  for (auto& [name, param] : module.named_parameters()) {
    if (!param.requires_grad()) continue;
#ifdef STRATA_DIST_WITH_NCCL
    STRATA_CHECK_VALUE(param.device().type() == kCPU || param.device().type() == kCUDA,
                       "[DistributedDataParallel] parameter '", name, "' is on ", param.device(),
                       "; CPU (MPI) and CUDA (NCCL) parameters are supported");
#else
    STRATA_CHECK_VALUE(param.device().type() == kCPU, "[DistributedDataParallel] parameter '", name, "' is on ",
                       param.device(), "; only CPU parameters are supported (this strata has no NCCL)");
#endif
    state.params.push_back(param);
    state.names.push_back(name);
  }
  check_same_model_everywhere(state.params);
  {  // Every rank starts from rank 0's parameters and buffers.
    NoGradGuard no_grad;
    for (const Tensor& p : state.params) broadcast(p.detach(), 0);
    for (const Tensor& b : module.buffers()) broadcast(b, 0);
  }
  state.build_buckets();
  state.reset_step();
  for (size_t i = 0; i < state.params.size(); ++i) {
    State* raw = state_.get();
    state.hooks.push_back(state.params[i].register_hook([raw, i](const Tensor& g) { return raw->on_gradient(i, g); }));
  }
}

Reducer::~Reducer() {
  for (size_t i = 0; i < state_->params.size(); ++i) state_->params[i].remove_hook(state_->hooks[i]);
}

size_t Reducer::bucket_count() const { return state_->buckets.size(); }

void Reducer::before_forward() {
  State& state = *state_;
  if (state.armed && state.ready_count > 0) {  // backward ran but left parameters out
    std::ostringstream missing;
    for (size_t i = 0, listed = 0; i < state.params.size() && listed < 8; ++i)
      if (!state.ready[i]) missing << (listed++ ? ", " : "") << state.names[i];
    state.armed = false;
    for (auto& bucket : state.buckets) bucket.work.wait();
    state.reset_step();
    strata::detail::throw_error<Error>("[DistributedDataParallel] the previous backward gave no gradient to "
                                       "parameters ", missing.str(), "; construct DistributedDataParallel with "
                                       "DistributedDataParallelOptions().find_unused_parameters(true)");
  }
  if (state.options.broadcast_buffers_) {
    NoGradGuard no_grad;
    for (const Tensor& b : state.module->buffers()) broadcast(b, 0);
  }
}

void Reducer::after_forward(const Tensor& output) {
  State& state = *state_;
  state.reset_step();
  state.armed = sync_ && is_grad_enabled() && !state.params.empty();
  if (state.armed && state.options.find_unused_parameters_) state.mark_unused(output);
}

}  // namespace detail

NoSyncGuard::NoSyncGuard(std::shared_ptr<detail::Reducer> reducer) : reducer_(std::move(reducer)) {
  previous_ = reducer_->sync();
  reducer_->set_sync(false);
}

NoSyncGuard::~NoSyncGuard() {
  if (reducer_) reducer_->set_sync(previous_);
}

}  // namespace strata::dist
