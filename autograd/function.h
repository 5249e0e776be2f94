#pragma once
// Custom autograd Functions (CRTP, as in LibTorch) and autograd::kernel<F>(), which makes a
// Function the Autograd kernel of an operator. Built-in derivatives use the same path.
#include <array>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include <strata/autograd/grad_mode.h>
#include <strata/autograd/keepalive.h>
#include <strata/autograd/variable.h>
#include <strata/dispatch/ivalue.h>
#include <strata/dispatch/kernel.h>
#include <strata/tensor/small_vector.h>

namespace strata::autograd {

// A tensor saved for backward, with the version it had then. An output of the recording node
// is kept as its storage and geometry, not as a TensorImpl: the output's own impl would hold
// the node (a cycle), and an alias of it would be one more allocation per recorded op.
class SavedVariable {
 public:
  SavedVariable() = default;
  // An output of `node` is kept without its grad_fn (a strong reference would be a cycle).
  SavedVariable(const Tensor& tensor, bool is_output, const std::shared_ptr<Node>& node);
  // Throws when the tensor was modified in place since it was saved, or was released.
  Tensor unpack(const std::shared_ptr<Node>& owner) const;
  void reset();

 private:
  Tensor data_;                       // for saved inputs
  intrusive_ptr<StorageImpl> storage_;  // for saved outputs: their storage and geometry
  DimVector sizes_, strides_;
  int64_t storage_offset_ = 0;
  ScalarType dtype_ = kFloat32;
  std::weak_ptr<Node> grad_fn_;   // for saved outputs
  uint32_t output_nr_ = 0;
  uint32_t saved_version_ = 0;
  bool is_output_ = false;
  bool was_defined_ = false;
  bool released_ = false;
  bool had_producer_ = false;
  std::weak_ptr<Node> producer_;  // for saved inputs: the node that made it, named in error messages
  std::string producer_name(const std::shared_ptr<Node>& owner) const;
};

// Values a Function keeps for backward: ctx->saved_data["beta"] = beta.
class SavedData {
 public:
  IValue& operator[](std::string_view key);
  const IValue& at(std::string_view key) const;  // throws ValueError for an unknown key
  bool contains(std::string_view key) const;
  void clear() { entries_.clear(); }

 private:
  SmallVector<std::pair<std::string, IValue>, 1> entries_;  // Note [Recording allocations]
};

class AutogradContext;
namespace detail {
struct ForwardInput;
using ForwardInputs = SmallVector<ForwardInput, 3>;
void wire_outputs(const std::shared_ptr<Node>& node, AutogradContext& ctx, std::span<Tensor> outputs,
                  const ForwardInputs& inputs, bool custom);
SmallVector<Tensor, 2> saved_tensors(const AutogradContext& ctx);
}

class AutogradContext {
 public:
  void save_for_backward(const tensor_list& tensors);
  void save_for_backward(std::initializer_list<Tensor> tensors);  // ctx->save_for_backward({x, y})
  tensor_list get_saved_variables() const;
  void mark_dirty(const tensor_list& tensors);
  void mark_non_differentiable(const tensor_list& tensors);
  // Whether gradient slot i (Note [Function inputs]) needs a gradient in the backward call
  // running now: false for non-tensor arguments, for tensors that do not require grad, and for
  // inputs this call does not reach (autograd::grad for other inputs).
  bool needs_input_grad(size_t index) const;
  // The shape forward argument `index` had (Note [Function inputs]), in forward and backward:
  // what a backward that expands or reshapes a gradient needs, without saving it. Empty for a
  // non-tensor argument.
  IntArrayRef input_sizes(size_t index) const;
  void set_materialize_grads(bool value) { materialize_grads_ = value; }

  SavedData saved_data;

 private:
  template <class T>
  friend class CppNode;
  template <class T>
  friend struct Function;
  friend void detail::wire_outputs(const std::shared_ptr<Node>& node, AutogradContext& ctx, std::span<Tensor> outputs,
                                   const detail::ForwardInputs& inputs, bool custom);
  friend SmallVector<Tensor, 2> detail::saved_tensors(const AutogradContext& ctx);

  void save_variables(std::span<const Tensor> outputs, const std::shared_ptr<Node>& node);
  void release();

  SmallVector<Tensor, 2> to_save_;
  SmallVector<SavedVariable, 2> saved_;
  std::unordered_set<const TensorImpl*> dirty_;
  std::unordered_set<const TensorImpl*> non_differentiable_;
  const detail::ForwardInputs* inputs_ = nullptr;  // the owning node's
  const edge_list* edges_ = nullptr;                // the owning node's
  // The CppNode this context is a member of (so it lives exactly as long): a raw pointer, as a
  // weak_ptr cost two atomic count changes per recorded op.
  Node* node_ = nullptr;
  bool materialize_grads_ = true;
  bool released_ = false;
};

namespace detail {

// One gradient slot of a Function (Note [Function inputs]), as backward needs to know it.
// Non-tensor arguments have an undefined metadata and no impl.
struct ForwardInput {
  TensorMetadata metadata;
  const TensorImpl* impl = nullptr;
  bool needs_grad = false;
  uint32_t version = 0;  // before forward ran (See Note [Mark dirty])
};

inline bool collect_tensor(ForwardInputs& inputs, edge_list& edges, const Tensor& t) {
  const bool needs = requires_grad(t);
  edges.push_back(needs ? gradient_edge(t) : Edge{});
  inputs.push_back({TensorMetadata::of(t), t.impl(), needs, t.defined() ? t.version() : 0});
  return needs;
}

// Note [Function inputs]
// As in LibTorch, a Function's gradient slots are its forward arguments with tensor lists
// flattened: a Tensor or a std::optional<Tensor> (None or undefined: no edge) takes one slot, a
// tensor_list of n tensors takes n slots, any other argument one slot. backward returns one
// gradient per slot and needs_input_grad(i) indexes them.
template <class A>
bool collect_input(ForwardInputs& inputs, edge_list& edges, const A& argument) {
  using Plain = std::remove_cvref_t<A>;
  if constexpr (std::is_same_v<Plain, Tensor>) {
    return collect_tensor(inputs, edges, argument);
  } else if constexpr (std::is_same_v<Plain, std::optional<Tensor>>) {
    return collect_tensor(inputs, edges, argument ? *argument : Tensor());
  } else if constexpr (std::is_same_v<Plain, tensor_list>) {
    bool any = false;
    for (const Tensor& t : argument) any |= collect_tensor(inputs, edges, t);
    return any;
  } else {
    edges.emplace_back();
    inputs.emplace_back();
    return false;
  }
}

// A backward's result with each gradient moved in, written into `storage`: the gradient list
// the backward received, which the engine handed it (Note [Recycled gradient lists]) and gets
// back this way, so a backward that takes its gradients by value allocates no list. A braced
// list returned as a tensor_list would allocate one and copy every tensor twice. Built-in
// backward functions return through this. The arguments may refer to elements of storage;
// they are moved out before it is refilled.
template <class... Ts>
tensor_list gradients_in(tensor_list&& storage, Ts&&... grads) {
  std::array<Tensor, sizeof...(Ts)> values{Tensor(std::forward<Ts>(grads))...};
  storage.clear();
  storage.reserve(sizeof...(Ts));
  for (Tensor& value : values) storage.push_back(std::move(value));
  return std::move(storage);
}

// The saved tensors, as get_saved_variables() returns them, without a heap-allocated list: for
// the built-in backwards, which run once per recorded op.
SmallVector<Tensor, 2> saved_tensors(const AutogradContext& ctx);

// Wires a Function's outputs into the tape after its forward ran. `custom`: a user's Function
// called directly, whose view outputs are marked (Note [Views returned by custom Functions]).
void wire_outputs(const std::shared_ptr<Node>& node, AutogradContext& ctx, std::span<Tensor> outputs,
                  const ForwardInputs& inputs, bool custom);
// The checks and shape fixes every backward result goes through.
// `node` is named only in an error message (a Function's name may take a demangling to build).
tensor_list validate_gradients(const Node& node, tensor_list&& grads, const ForwardInputs& inputs,
                               const edge_list& edges);
void materialize(tensor_list& grads, const Node& node);
std::string function_name(const char* mangled);

template <class T>
concept HasName = requires { T::name(); };
template <class T>
std::string function_display_name() {
  if constexpr (HasName<T>) return std::string(T::name());
  else return function_name(typeid(T).name());
}

// Note [Tracing bare Functions]
// jit::trace captures ops at the dispatcher, but a Function::apply called by user code (not as
// an op's Autograd kernel) is not an op: the tracer installs a FunctionTracer, and apply hands
// it the call as a replayable closure, so the graph holds one node for the whole Function
// (its ops are not traced one by one, and replay records the same custom backward). Inside an
// op (Tracer excluded) apply is an op's Autograd kernel and is not reported.
class FunctionTracer {
 public:
  virtual ~FunctionTracer() = default;
  // Runs `replay(inputs)` and records it as one node; returns its outputs.
  virtual tensor_list record_function(std::string name, const tensor_list& inputs,
                                      std::function<tensor_list(const tensor_list&)> replay) = 0;
};
// The thread's tracer when apply must report to it (tracing, and not inside an op), else null.
FunctionTracer* active_function_tracer();
// Installs `tracer` for this thread (null to remove); returns the previous one.
FunctionTracer* set_function_tracer(FunctionTracer* tracer);

template <class T, class... Args>
using forward_result_t = decltype(T::forward(std::declval<AutogradContext*>(), std::declval<Args>()...));

template <class T>
T pick_traced_argument(const T& captured, const tensor_list& tensors, size_t& next) {
  if constexpr (std::is_same_v<T, Tensor>) return tensors.at(next++);
  else return captured;
}

}  // namespace detail

template <class T>
class CppNode final : public Node {
 public:
  // User-provided, so that make_function_node's value-initialisation runs only the member
  // initialisers instead of first zeroing the whole node (over a KiB).
  CppNode() {}  // NOLINT(modernize-use-equals-default)
  std::string name() const override { return detail::function_display_name<T>(); }

  tensor_list apply(tensor_list&& grads) override {
    check_not_released();
    if (ctx_.materialize_grads_) detail::materialize(grads, *this);
    ctx_.edges_ = &next_edges_;
    tensor_list results = T::backward(&ctx_, std::move(grads));
    return detail::validate_gradients(*this, std::move(results), inputs_, next_edges_);
  }
  void release_variables() override { ctx_.release(); }

  AutogradContext ctx_;
  detail::ForwardInputs inputs_;
};

// Note [Recording allocations]
// Recording an op on the tape makes three objects: the CppNode, which keeps its edges,
// forward-input metadata, output metadata, saved tensors and saved values inline
// (SmallVector) for ops of up to three arguments, two saved tensors and one saved value; the
// output's TensorImpl and Storage (one block, Note [One allocation per tensor]); and its
// AutogradMeta. Outputs are wired through a span (no tensor_list for a single output), names
// are computed only for error messages, and a leaf's AccumulateGrad is made once and kept by
// the leaf (Note [Kept accumulators] in variable.cpp). All three come from per-thread pools (Note [Pooled
// small objects] in tensor/storage.cpp), so a recorded op makes no heap allocation once the
// pools are warm; tests/alloc/ counts them.
template <class T>
struct Function {
  // Runs T::forward with the Autograd key excluded and, when grad mode is on and an input
  // requires grad, records a CppNode<T> whose backward is T::backward.
  template <class... Args>
  static auto apply(Args&&... args) {
    return run<true>(std::forward<Args>(args)...);
  }
  // apply for the Autograd kernel of an op (kernel<F>(), and strata's own ops): a view among
  // the outputs is the op's own, which autograd's view rules handle (Note [Views returned by
  // custom Functions] in autograd/function.cpp).
  template <class... Args>
  static auto apply_op(Args&&... args) {
    return run<false>(std::forward<Args>(args)...);
  }

 private:
  template <bool Custom, class... Args>
  static auto run(Args&&... args) {
    if (detail::FunctionTracer* tracer = detail::active_function_tracer()) [[unlikely]] {
      if constexpr ((std::is_copy_constructible_v<std::decay_t<Args>> && ...))
        return apply_traced(*tracer, args...);
    }
    auto node = detail::make_function_node<T, CppNode<T>>();  // See Note [Code of unloaded libraries]
    detail::ForwardInputs& inputs = node->inputs_;
    edge_list& edges = node->mutable_next_edges();
    inputs.reserve(sizeof...(Args));
    edges.reserve(sizeof...(Args));
    // See Note [Function inputs]
    const bool any_requires_grad = (false | ... | detail::collect_input(inputs, edges, args));
    const bool record = any_requires_grad && is_grad_enabled();
    node->ctx_.inputs_ = &inputs;
    node->ctx_.node_ = node.get();

    using Result = decltype(T::forward(&node->ctx_, std::forward<Args>(args)...));
    static_assert(std::is_same_v<Result, Tensor> || std::is_same_v<Result, tensor_list>,
                  "strata: Function::forward returns Tensor or tensor_list");
    auto result = [&] {
      NoGradGuard no_grad;
      return T::forward(&node->ctx_, std::forward<Args>(args)...);
    }();
    if (!record) return result;
    if constexpr (std::is_same_v<Result, Tensor>) {
      detail::wire_outputs(node, node->ctx_, std::span<Tensor>(&result, 1), inputs, Custom);
      return result;
    } else {
      detail::wire_outputs(node, node->ctx_, result, inputs, Custom);
      return result;
    }
  }

  // See Note [Tracing bare Functions]: the tensors are the node's inputs; every other argument
  // is captured by value.
  // U makes the return type depend on the call, so T may be incomplete where Function<T> is.
  template <class... Args, class U = T>
  static detail::forward_result_t<U, const Args&...> apply_traced(detail::FunctionTracer& tracer, const Args&... args) {
    using Captured = std::tuple<std::decay_t<Args>...>;
    using Result = detail::forward_result_t<U, const Args&...>;
    tensor_list tensors;
    auto collect = [&](const auto& arg) {
      if constexpr (std::is_same_v<std::decay_t<decltype(arg)>, Tensor>) tensors.push_back(arg);
    };
    (collect(args), ...);
    auto replay = [captured = Captured(args...)](const tensor_list& inputs) -> tensor_list {
      STRATA_CHECK(inputs.size() == (size_t{0} + ... + std::is_same_v<std::decay_t<Args>, Tensor>),
                   "[", detail::function_display_name<T>(), "] replay got ", inputs.size(), " tensors");
      size_t next = 0;
      Captured rebuilt = std::apply([&](const auto&... parts) {
        return Captured{detail::pick_traced_argument(parts, inputs, next)...};
      }, captured);
      Result out = std::apply([](auto&... parts) { return apply(parts...); }, rebuilt);
      if constexpr (std::is_same_v<Result, Tensor>) return tensor_list{std::move(out)};
      else return out;
    };
    tensor_list outputs = tracer.record_function(detail::function_display_name<T>(), tensors, std::move(replay));
    if constexpr (std::is_same_v<Result, Tensor>) return outputs.at(0);
    else return outputs;
  }
};

namespace detail {
template <class T>
struct IsTensorTuple : std::false_type {};
template <class... Ts>
struct IsTensorTuple<std::tuple<Ts...>> : std::bool_constant<(std::is_same_v<Ts, Tensor> && ...)> {};

template <class Tuple, size_t... I>
Tuple list_to_tuple(tensor_list&& list, std::index_sequence<I...>) {
  STRATA_CHECK(list.size() == sizeof...(I), "[autograd::kernel] forward returned ", list.size(),
               " tensors for an op with ", sizeof...(I), " returns");
  return Tuple(std::move(list[I])...);
}

// R is the op's C++ return: F::forward's own, or a tuple of Tensors filled from its tensor_list.
template <class F, class R, class... Args>
struct FunctionKernel {
  R operator()(Args... args) const {
    if constexpr (IsTensorTuple<R>::value)
      return list_to_tuple<R>(F::apply_op(args...), std::make_index_sequence<std::tuple_size_v<R>>{});
    else
      return F::apply_op(args...);
  }
};
template <class F, class Return, class R, class... Args>
strata::detail::KernelBundle make_function_kernel(R (*)(AutogradContext*, Args...)) {
  using Result = std::conditional_t<std::is_void_v<Return>, R, Return>;
  return strata::detail::make_kernel(FunctionKernel<F, Result, Args...>{});
}
}  // namespace detail

// The Autograd kernel of an operator whose schema matches F::forward's arguments after ctx.
// For an op with several returns (`-> (Tensor, Tensor)`), name the tuple as Return:
// kernel<F, std::tuple<Tensor, Tensor>>() converts forward's tensor_list.
template <class F, class Return = void>
strata::detail::KernelBundle kernel() {
  return detail::make_function_kernel<F, Return>(&F::forward);
}

}  // namespace strata::autograd
