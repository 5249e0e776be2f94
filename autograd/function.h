#pragma once
// Custom autograd Functions (CRTP, as in LibTorch) and autograd::kernel<F>(), which makes a
// Function the Autograd kernel of an operator. Built-in derivatives use the same path.
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
  std::weak_ptr<Node> producer_;  // the node that made the tensor, named in error messages
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
                  const ForwardInputs& inputs);
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
                                   const detail::ForwardInputs& inputs);

  void save_variables(std::span<const Tensor> outputs, const std::shared_ptr<Node>& node);
  void release();

  SmallVector<Tensor, 2> to_save_;
  SmallVector<SavedVariable, 2> saved_;
  std::unordered_set<const TensorImpl*> dirty_;
  std::unordered_set<const TensorImpl*> non_differentiable_;
  const detail::ForwardInputs* inputs_ = nullptr;  // the owning node's
  const edge_list* edges_ = nullptr;                // the owning node's
  std::weak_ptr<Node> node_;
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

// Wires a Function's outputs into the tape after its forward ran.
void wire_outputs(const std::shared_ptr<Node>& node, AutogradContext& ctx, std::span<Tensor> outputs,
                  const ForwardInputs& inputs);
// The checks and shape fixes every backward result goes through.
tensor_list validate_gradients(std::string_view name, tensor_list&& grads, const ForwardInputs& inputs,
                               const edge_list& edges);
void materialize(tensor_list& grads, const Node& node);
std::string function_name(const char* mangled);

template <class T>
concept HasName = requires { T::name(); };

}  // namespace detail

template <class T>
class CppNode final : public Node {
 public:
  std::string name() const override {
    if constexpr (detail::HasName<T>) return std::string(T::name());
    else return detail::function_name(typeid(T).name());
  }

  tensor_list apply(tensor_list&& grads) override {
    check_not_released();
    if (ctx_.materialize_grads_) detail::materialize(grads, *this);
    ctx_.edges_ = &next_edges_;
    tensor_list results = T::backward(&ctx_, std::move(grads));
    return detail::validate_gradients(name(), std::move(results), inputs_, next_edges_);
  }
  void release_variables() override { ctx_.release(); }

  AutogradContext ctx_;
  detail::ForwardInputs inputs_;
};

// Note [Recording allocations]
// Recording an op on the tape costs one heap allocation: the CppNode, which keeps its edges,
// forward-input metadata, output metadata, saved tensors and saved values inline
// (SmallVector) for ops of up to three arguments, two saved tensors and one saved value.
// Outputs are wired through a span (no tensor_list for a single output), names are computed
// only for error messages, and a leaf's AccumulateGrad is shared by every op that uses the leaf
// while one of them is alive. With the output's TensorImpl and Storage (one allocation, Note
// [One allocation per tensor]) and its AutogradMeta, a recorded op makes three allocations;
// tests/alloc/ counts them.
template <class T>
struct Function {
  // Runs T::forward with the Autograd key excluded and, when grad mode is on and an input
  // requires grad, records a CppNode<T> whose backward is T::backward.
  template <class... Args>
  static auto apply(Args&&... args) {
    auto node = detail::make_function_node<T, CppNode<T>>();  // See Note [Code of unloaded libraries]
    detail::ForwardInputs& inputs = node->inputs_;
    edge_list& edges = node->mutable_next_edges();
    inputs.reserve(sizeof...(Args));
    edges.reserve(sizeof...(Args));
    // See Note [Function inputs]
    const bool any_requires_grad = (false | ... | detail::collect_input(inputs, edges, args));
    const bool record = any_requires_grad && is_grad_enabled();
    node->ctx_.inputs_ = &inputs;
    node->ctx_.node_ = node;

    using Result = decltype(T::forward(&node->ctx_, std::forward<Args>(args)...));
    static_assert(std::is_same_v<Result, Tensor> || std::is_same_v<Result, tensor_list>,
                  "strata: Function::forward returns Tensor or tensor_list");
    auto result = [&] {
      NoGradGuard no_grad;
      return T::forward(&node->ctx_, std::forward<Args>(args)...);
    }();
    if (!record) return result;
    if constexpr (std::is_same_v<Result, Tensor>) {
      detail::wire_outputs(node, node->ctx_, std::span<Tensor>(&result, 1), inputs);
      return result;
    } else {
      detail::wire_outputs(node, node->ctx_, result, inputs);
      return result;
    }
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
      return list_to_tuple<R>(F::apply(args...), std::make_index_sequence<std::tuple_size_v<R>>{});
    else
      return F::apply(args...);
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
