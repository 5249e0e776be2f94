#pragma once
// Internal to ops/ and backends (not public API): the structured registration form.
//
// Note [Structured ops]
// An op's shape function (ops/shapes/<family>.h) is the one place that checks its arguments
// and says what its outputs are: `TensorMeta shape(Args...)`, or `std::array<TensorMeta, N>`
// for N outputs, taking exactly the op's schema arguments. A backend then writes only the
// compute, an "out" kernel `void compute(const Tensor& out..., Args...)` that fills outputs
// already allocated with the right sizes, dtype and device. From those two functions the
// templates below make every kernel the dispatcher needs:
//   structured<Shape, Compute>()                 the functional op: shape, allocate, compute;
//   structured_in_place<Shape, Compute, "op_">() an in-place variant `op_(Tensor(a!) self, ...)`:
//                                                the result must fit self (sizes, castable dtype,
//                                                no internal overlap, no partial overlap with
//                                                an input); computed into self directly when the
//                                                dtypes agree, else into a temporary then copied;
//   structured_out<Shape, Compute, "op.out">()   an out= variant `op.out(..., *, Tensor(a!) out)`:
//                                                an empty `out` is resized, otherwise its sizes
//                                                must match; dtype as for in-place.
// The Meta kernels are the same templates without a compute (`def_structured*` register them
// with the schema), so Meta results are what the shape function says, by construction. The
// dispatcher bumps the version of `(a!)` arguments after these kernels, as for any op.
// A compute function may be handed a non-contiguous `out` (in-place on a view, a strided out=)
// and an `out` that is one of its inputs (in-place): it must handle both. Shape functions come
// from PyTorch's meta functions (TORCH_META_FUNC), smaller: no TensorIterator, no codegen.
#include <array>
#include <cstddef>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include <strata/dispatch/library.h>
#include <strata/ops/elementwise.h>
#include <strata/tensor/shape_checks.h>
#include <strata/tensor/tensor_meta.h>

namespace strata::detail {

// A string literal as a template argument: the op name in error messages.
template <size_t N>
struct OpName {
  char text[N];
  constexpr OpName(const char (&name)[N]) {  // NOLINT: implicit on purpose
    for (size_t i = 0; i < N; ++i) text[i] = name[i];
  }
  constexpr const char* c_str() const { return text; }
};

// Same-device copy with dtype conversion used when a result must be cast into its destination.
using CopyKernel = void (*)(const Tensor& dst, const Tensor& src);

template <class T>
inline constexpr bool is_tensor_meta_array = false;
template <size_t N>
inline constexpr bool is_tensor_meta_array<std::array<TensorMeta, N>> = true;

// The checks every written tensor of an in-place or out= variant gets, for each tensor input.
template <class Arg>
void check_input_overlap(const char* op, const Tensor& written, const Arg& arg) {
  using A = std::remove_cvref_t<Arg>;
  if constexpr (std::is_same_v<A, Tensor>) {
    check_no_partial_overlap(op, written, arg);
  } else if constexpr (std::is_same_v<A, std::optional<Tensor>>) {
    if (arg) check_no_partial_overlap(op, written, *arg);
  } else if constexpr (std::is_same_v<A, tensor_list>) {
    for (const Tensor& t : arg) check_no_partial_overlap(op, written, t);
  }
}

// Note [Idempotent in-place ops]
// fill_ and zero_ write one value to every element, so, as in PyTorch, their self may refer
// to one memory location from several elements (an expanded tensor): however often a location
// is written, it ends up holding the value, and their kernels write each location once
// (distinct_locations in elementwise.h). Every other in-place op refuses such a self, since
// the result would depend on the order of the writes.
enum class SelfOverlap { refuse, allow };

// self must hold the result as it is: same sizes and device, a dtype the result casts to, and
// (unless allowed) no two elements at one memory location.
void check_in_place_result(const char* op, const Tensor& self, const TensorMeta& meta,
                           SelfOverlap overlap = SelfOverlap::refuse);
// out gets the result's sizes (resized when it has no elements), on the result's device, in a
// dtype the result casts to. See Note [Resizing out=].
void prepare_out(const char* op, const Tensor& out, const TensorMeta& meta);

// Runs compute into `dest`, or into a temporary of the computed dtype that is then copied.
template <auto Compute, auto Copy, class... Args>
void compute_into(const Tensor& dest, const TensorMeta& meta, const Args&... args) {
  if (dest.dtype() == meta.dtype) {
    Compute(dest, args...);
  } else {
    Tensor result = empty_from_meta(meta);
    Compute(result, args...);
    Copy(dest, result);
  }
}

// The outputs of a multi-output shape function, allocated (a plain function: nvcc's front end
// loses the pack of a templated lambda here).
template <size_t N, size_t... I>
auto empty_outputs(const std::array<TensorMeta, N>& metas, std::index_sequence<I...>) {
  return std::make_tuple(empty_from_meta(metas[I])...);
}

template <auto Shape, auto Compute, class Sig = decltype(Shape)>
struct Structured;

template <auto Shape, auto Compute, class R, class... Args>
struct Structured<Shape, Compute, R (*)(Args...)> {
  static auto functional(Args... args) {
    if constexpr (std::is_same_v<R, TensorMeta>) {
      Tensor out = empty_from_meta(Shape(args...));
      if constexpr (!std::is_null_pointer_v<decltype(Compute)>) Compute(out, args...);
      return out;
    } else {
      static_assert(is_tensor_meta_array<R>, "a shape function returns TensorMeta or std::array<TensorMeta, N>");
      const R metas = Shape(args...);
      auto outs = empty_outputs(metas, std::make_index_sequence<std::tuple_size_v<R>>());
      if constexpr (!std::is_null_pointer_v<decltype(Compute)>)
        std::apply([&](const auto&... out) { Compute(out..., args...); }, outs);
      return outs;
    }
  }
};

// The in-place and out= kernels are function templates picked by the shape function's type
// (nvcc's front end does not match partial specialisations on the OpName parameter).
template <auto Shape, auto Compute, OpName Name, auto Copy, SelfOverlap Overlap, class... Rest>
Tensor structured_in_place_kernel(const Tensor& self, Rest... rest) {
  const TensorMeta meta = Shape(self, rest...);
  check_in_place_result(Name.c_str(), self, meta, Overlap);
  (check_input_overlap(Name.c_str(), self, rest), ...);
  if constexpr (!std::is_null_pointer_v<decltype(Compute)>) compute_into<Compute, Copy>(self, meta, self, rest...);
  return self;
}
template <auto Shape, auto Compute, OpName Name, auto Copy, SelfOverlap Overlap, class... Rest>
constexpr auto in_place_kernel_for(TensorMeta (*)(const Tensor&, Rest...)) {
  return &structured_in_place_kernel<Shape, Compute, Name, Copy, Overlap, Rest...>;
}

template <auto Shape, auto Compute, OpName Name, auto Copy, class... Args>
Tensor structured_out_kernel(Args... args, const Tensor& out) {
  const TensorMeta meta = Shape(args...);
  prepare_out(Name.c_str(), out, meta);
  (check_input_overlap(Name.c_str(), out, args), ...);
  if constexpr (!std::is_null_pointer_v<decltype(Compute)>) compute_into<Compute, Copy>(out, meta, args...);
  return out;
}
template <auto Shape, auto Compute, OpName Name, auto Copy, class... Args>
constexpr auto out_kernel_for(TensorMeta (*)(Args...)) {
  return &structured_out_kernel<Shape, Compute, Name, Copy, Args...>;
}

// ---------------------------------------------------------------------------------------
// What a backend registers (with Copy = its same-device converting copy; the CPU's default).

template <auto Shape, auto Compute>
constexpr auto structured() {
  return &Structured<Shape, Compute>::functional;
}
template <auto Shape, auto Compute, OpName Name, auto Copy = &copy_kernel, SelfOverlap Overlap = SelfOverlap::refuse>
constexpr auto structured_in_place() {
  return in_place_kernel_for<Shape, Compute, Name, Copy, Overlap>(Shape);
}
template <auto Shape, auto Compute, OpName Name, auto Copy = &copy_kernel>
constexpr auto structured_out() {
  return out_kernel_for<Shape, Compute, Name, Copy>(Shape);
}

// Note [Out variants and autograd]
// As in PyTorch, an out= call is not differentiable: with grad mode on, one of its tensors
// requiring grad is an error naming the op; otherwise the call goes on below autograd.
void out_variant_autograd(const OperatorHandle& op, DispatchKeySet keys, Stack& stack);

// Note [Optional outputs]
// _conv2d_backward computes only the gradients asked for and returns the others undefined,
// which std::array<TensorMeta, N> cannot say: its shape function returns
// std::array<std::optional<TensorMeta>, N> (nullopt: undefined). This adapter does what
// structured does for it: runs the shape function, allocates the outputs it describes, and
// hands the compute every output (undefined ones included); with no compute it is the Meta
// kernel (def_optional_outputs below registers it, derived and recorded).
inline Tensor output_for(const std::optional<TensorMeta>& meta) { return meta ? empty_from_meta(*meta) : Tensor(); }

template <auto Shape, auto Compute, class Sig = decltype(Shape)>
struct OptionalOutputs;

template <auto Shape, auto Compute, size_t N, class... Args>
struct OptionalOutputs<Shape, Compute, std::array<std::optional<TensorMeta>, N> (*)(Args...)> {
  template <size_t... I>
  static auto run(const std::array<std::optional<TensorMeta>, N>& metas, std::index_sequence<I...>, Args... args) {
    auto outs = std::make_tuple(output_for(metas[I])...);
    if constexpr (!std::is_null_pointer_v<decltype(Compute)>) Compute(std::get<I>(outs)..., args...);
    return outs;
  }
  static auto kernel(Args... args) { return run(Shape(args...), std::make_index_sequence<N>(), args...); }
};

template <auto Shape, auto Compute>
constexpr auto optional_outputs() {
  return &OptionalOutputs<Shape, Compute>::kernel;
}

// Note [Checked updates]
// _fused_sgd_ and _fused_adam_ write param and their state tensors in place and return
// nothing, so neither structured nor structured_in_place (one written self, returned) fits
// them. Their shape functions (shapes/optim.h) only check the arguments, and this adapter makes
// their kernels: check, then compute; with no compute it is the Meta kernel (the checks alone),
// registered by def_checked_update below. The written tensors' version counters are bumped by
// the dispatcher, as for any (a!) argument.
template <auto Check, auto Compute, class Sig = decltype(Check)>
struct CheckedUpdate;

template <auto Check, auto Compute, class... Args>
struct CheckedUpdate<Check, Compute, void (*)(Args...)> {
  static void kernel(Args... args) {
    Check(args...);
    if constexpr (!std::is_null_pointer_v<decltype(Compute)>) Compute(args...);
  }
};

template <auto Check, auto Compute>
constexpr auto checked_update() {
  return &CheckedUpdate<Check, Compute>::kernel;
}

// ---------------------------------------------------------------------------------------
// What the op's family file registers with its schema: the Meta kernel, derived.

inline std::string_view schema_name(std::string_view schema) { return schema.substr(0, schema.find('(')); }
// Remembers that "ns::name.overload" has a Meta kernel derived from its shape function (the
// registry test checks that every built-in op with a Meta kernel has one of these).
void record_derived_meta(const std::string& qualified_name);
bool has_derived_meta(const std::string& qualified_name);

// Defines `schema` with `meta_kernel` (one of the templates above without a compute, or a
// family's own adapter built the same way) as its Meta kernel, recorded as derived.
template <class MetaKernel>
void def_with_derived_meta(Library& m, std::string_view schema, MetaKernel meta_kernel, std::source_location where) {
  m.def(schema, AliasAnalysis::FromSchema, where);
  m.impl(schema_name(schema), meta_kernel, DispatchKey::Meta, where);
  record_derived_meta(m.ns() + "::" + std::string(schema_name(schema)));
}

template <auto Shape>
void def_structured(Library& m, std::string_view schema,
                    std::source_location where = std::source_location::current()) {
  def_with_derived_meta(m, schema, structured<Shape, nullptr>(), where);
}
template <auto Shape, OpName Name, SelfOverlap Overlap = SelfOverlap::refuse>
void def_structured_in_place(Library& m, std::string_view schema,
                             std::source_location where = std::source_location::current()) {
  def_with_derived_meta(m, schema, structured_in_place<Shape, nullptr, Name, nullptr, Overlap>(), where);
}
// Also registers the Autograd kernel of Note [Out variants and autograd].
template <auto Shape, OpName Name>
void def_structured_out(Library& m, std::string_view schema,
                        std::source_location where = std::source_location::current()) {
  def_with_derived_meta(m, schema, structured_out<Shape, nullptr, Name, nullptr>(), where);
  m.impl(schema_name(schema), BoxedKernelWithKeys(&out_variant_autograd), DispatchKey::Autograd, where);
}

template <auto Shape>
void def_optional_outputs(Library& m, std::string_view schema,
                          std::source_location where = std::source_location::current()) {
  def_with_derived_meta(m, schema, optional_outputs<Shape, nullptr>(), where);
}
template <auto Check>
void def_checked_update(Library& m, std::string_view schema,
                        std::source_location where = std::source_location::current()) {
  def_with_derived_meta(m, schema, checked_update<Check, nullptr>(), where);
}

}  // namespace strata::detail
