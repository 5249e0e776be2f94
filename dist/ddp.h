#pragma once
// DistributedDataParallel: trains one module replica per rank on that rank's share of each
// batch, averaging gradients across ranks during backward (see Note [Gradient buckets] in
// dist/ddp.cpp).
//
//   auto ddp = dist::DistributedDataParallel(net);   // broadcasts rank 0's parameters
//   Tensor loss = cross_entropy(ddp.forward(x), y);
//   loss.backward();                                 // .grad = the mean over the ranks
//   { auto guard = ddp.no_sync(); ddp.forward(x2)...backward(); }   // accumulate locally
#include <cstddef>
#include <memory>
#include <utility>

#include <strata/nn/module.h>

namespace strata::dist {

struct DistributedDataParallelOptions {
  // Gradients travel in buckets of about this many megabytes (PyTorch's default, 25).
  DistributedDataParallelOptions& bucket_cap_mb(double megabytes) { bucket_cap_mb_ = megabytes; return *this; }
  // Look, after each forward, for parameters the output does not depend on, and count them
  // as ready (their gradient is what they hold). Without it such a parameter makes the next
  // forward throw, as in PyTorch.
  DistributedDataParallelOptions& find_unused_parameters(bool on) { find_unused_parameters_ = on; return *this; }
  // Copy rank 0's buffers to every rank before each forward (PyTorch's default).
  DistributedDataParallelOptions& broadcast_buffers(bool on) { broadcast_buffers_ = on; return *this; }

  double bucket_cap_mb_ = 25.0;
  bool find_unused_parameters_ = false;
  bool broadcast_buffers_ = true;
};

namespace detail {

// The gradient side of DDP: buckets, the hooks on each parameter and the collectives.
class Reducer {
 public:
  Reducer(nn::Module& module, const DistributedDataParallelOptions& options);
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Before the module's forward: checks the previous step finished, syncs buffers.
  void before_forward();
  // After it: arms the hooks for the backward of `output` (unless no_sync or no grad mode).
  void after_forward(const Tensor& output);
  void set_sync(bool on) { sync_ = on; }
  bool sync() const { return sync_; }
  size_t bucket_count() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
  bool sync_ = true;
};

}  // namespace detail

// While alive, backward through the DDP module accumulates gradients locally; the first
// synced backward after it averages the accumulated gradients.
class NoSyncGuard {
 public:
  explicit NoSyncGuard(std::shared_ptr<detail::Reducer> reducer);
  ~NoSyncGuard();
  NoSyncGuard(NoSyncGuard&& other) noexcept = default;
  NoSyncGuard(const NoSyncGuard&) = delete;
  NoSyncGuard& operator=(const NoSyncGuard&) = delete;

 private:
  std::shared_ptr<detail::Reducer> reducer_;
  bool previous_ = true;
};

// ModuleType: a module handle (nn::Sequential, nn::Linear, a STRATA_MODULE) or a
// std::shared_ptr to a Module with a forward method. Copies share the module and the reducer.
template <class ModuleType>
class DistributedDataParallel {
 public:
  explicit DistributedDataParallel(ModuleType module, DistributedDataParallelOptions options = {})
      : module_(std::move(module)), reducer_(std::make_shared<detail::Reducer>(*module_, options)) {}

  template <class... Args>
  decltype(auto) forward(Args&&... args) const {
    reducer_->before_forward();
    auto output = module_->forward(std::forward<Args>(args)...);
    reducer_->after_forward(output);
    return output;
  }
  template <class... Args>
  decltype(auto) operator()(Args&&... args) const {
    return forward(std::forward<Args>(args)...);
  }

  [[nodiscard]] NoSyncGuard no_sync() const { return NoSyncGuard(reducer_); }

  const ModuleType& module() const { return module_; }
  tensor_list parameters() const { return module_->parameters(); }
  void train(bool on = true) const { module_->train(on); }
  void eval() const { module_->eval(); }
  void zero_grad(bool set_to_none = true) const { module_->zero_grad(set_to_none); }
  size_t bucket_count() const { return reducer_->bucket_count(); }

 private:
  ModuleType module_;
  std::shared_ptr<detail::Reducer> reducer_;
};

}  // namespace strata::dist
