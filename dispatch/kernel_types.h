#pragma once
// The C++ types of schema types: which parameter and return types a kernel may use, the
// canonical form each reaches the unboxed thunk in, and the IValue conversions of the boxed
// thunk. See Note [Canonical C++ types].
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <strata/dispatch/ivalue.h>
#include <strata/dispatch/schema.h>

namespace strata::detail {

// Note [Canonical C++ types]
// Each schema type has exactly one canonical C++ type, used by the unboxed thunks:
//   Tensor -> const Tensor&         Tensor? -> const std::optional<Tensor>&
//   Tensor[] -> const tensor_list&  Tensor?[] -> const optional_tensor_list& (std::vector<std::optional<Tensor>>)
//   int -> int64_t                  float -> double              bool -> bool
//   str -> std::string_view         int[] -> IntArrayRef         float[] -> ArrayRef<double>
//   bool[] -> const std::vector<bool>& (std::vector<bool> has no contiguous bools to view)
//   Scalar -> const Scalar&         ScalarType -> ScalarType     Device -> Device
//   Layout -> Layout                MemoryFormat -> MemoryFormat (both box as ints)
//   T? -> std::optional<canonical T> (const& when T's canonical type is)
// A kernel may take a canonical type, its by-value form, or an owning form the thunk builds
// from it: std::string / const std::string& for str, std::vector<int64_t> for int[],
// std::vector<double> for float[] (and their optionals). Since both a kernel and a typed<Sig>()
// handle are checked against the same schema, both reach the same canonical function type.
// Returns are values: str -> std::string, int[] -> std::vector<int64_t>, float[] ->
// std::vector<double>, bool[] -> std::vector<bool>, T? -> std::optional<T>, several returns ->
// std::tuple of those (any mix, e.g. std::tuple<Tensor, Tensor, int64_t>), none -> void.
// Generator has no C++ type in strata.

template <class T>
struct ArgTraits {
  static constexpr bool supported = false;
  using canonical = const T&;
};

// `value` is the canonical type without const&; `by_ref` says whether it is passed as const&.
template <class Value, bool ByRef, BaseType Base, bool IsList, bool ElementOptional = false>
struct BaseArgTraits {
  static constexpr bool supported = true;
  static constexpr bool by_ref = ByRef;
  using value = Value;
  using canonical = std::conditional_t<ByRef, const Value&, Value>;
  static SchemaType type() { return SchemaType{Base, ElementOptional, IsList, {}, false}; }
};

template <> struct ArgTraits<Tensor> : BaseArgTraits<Tensor, true, BaseType::Tensor, false> {};
template <> struct ArgTraits<tensor_list> : BaseArgTraits<tensor_list, true, BaseType::Tensor, true> {};
template <> struct ArgTraits<optional_tensor_list> : BaseArgTraits<optional_tensor_list, true, BaseType::Tensor, true, true> {};
template <> struct ArgTraits<int64_t> : BaseArgTraits<int64_t, false, BaseType::Int, false> {};
template <> struct ArgTraits<double> : BaseArgTraits<double, false, BaseType::Float, false> {};
template <> struct ArgTraits<bool> : BaseArgTraits<bool, false, BaseType::Bool, false> {};
template <> struct ArgTraits<std::string_view> : BaseArgTraits<std::string_view, false, BaseType::Str, false> {};
template <> struct ArgTraits<std::string> : ArgTraits<std::string_view> {};
template <> struct ArgTraits<IntArrayRef> : BaseArgTraits<IntArrayRef, false, BaseType::Int, true> {};
template <> struct ArgTraits<std::vector<int64_t>> : ArgTraits<IntArrayRef> {};
template <> struct ArgTraits<ArrayRef<double>> : BaseArgTraits<ArrayRef<double>, false, BaseType::Float, true> {};
template <> struct ArgTraits<std::vector<double>> : ArgTraits<ArrayRef<double>> {};
template <> struct ArgTraits<std::vector<bool>> : BaseArgTraits<std::vector<bool>, true, BaseType::Bool, true> {};
template <> struct ArgTraits<Scalar> : BaseArgTraits<Scalar, true, BaseType::Scalar, false> {};
template <> struct ArgTraits<ScalarType> : BaseArgTraits<ScalarType, false, BaseType::ScalarType, false> {};
template <> struct ArgTraits<Device> : BaseArgTraits<Device, false, BaseType::Device, false> {};
template <> struct ArgTraits<Layout> : BaseArgTraits<Layout, false, BaseType::Layout, false> {};
template <> struct ArgTraits<MemoryFormat> : BaseArgTraits<MemoryFormat, false, BaseType::MemoryFormat, false> {};

template <class T>
  requires(ArgTraits<T>::supported)
struct ArgTraits<std::optional<T>> {
  static constexpr bool supported = true;
  static constexpr bool by_ref = ArgTraits<T>::by_ref;
  using value = std::optional<typename ArgTraits<T>::value>;
  using canonical = std::conditional_t<by_ref, const value&, value>;
  static SchemaType type() {
    SchemaType type = ArgTraits<T>::type();
    type.optional = true;
    return type;
  }
};

// A parameter type is usable when its decayed form is known and it is not a mutable reference
// (the thunk hands a kernel canonical values or temporaries built from them).
template <class P>
inline constexpr bool arg_supported =
    ArgTraits<std::remove_cvref_t<P>>::supported &&
    (!std::is_reference_v<P> || std::is_const_v<std::remove_reference_t<P>>);
template <class P>
using canonical_arg_t = typename ArgTraits<std::remove_cvref_t<P>>::canonical;

template <class T>
inline constexpr bool is_optional_v = false;
template <class T>
inline constexpr bool is_optional_v<std::optional<T>> = true;

// Canonical argument -> the kernel's parameter type P: as is, or an owning copy
// (std::string from std::string_view, std::vector from an ArrayRef).
template <class P, class C>
decltype(auto) to_param(C&& canonical) {
  using D = std::remove_cvref_t<P>;
  if constexpr (std::is_convertible_v<C&&, P>) {
    return std::forward<C>(canonical);
  } else if constexpr (is_optional_v<D>) {
    if (!canonical) return D();
    return D(to_param<typename D::value_type>(*canonical));
  } else {
    return D(canonical.begin(), canonical.end());
  }
}

template <class R>
struct ReturnTraits {
  static constexpr bool supported = false;
};
template <>
struct ReturnTraits<void> {
  static constexpr bool supported = true;
  static std::vector<SchemaType> types() { return {}; }
};
// Single return types are the by-value forms of argument types (owning where those are views).
template <class R>
  requires(ArgTraits<R>::supported && std::is_same_v<typename ArgTraits<R>::value, R> &&
           !std::is_same_v<R, IntArrayRef> && !std::is_same_v<R, ArrayRef<double>> &&
           !std::is_same_v<R, std::string_view>)
struct ReturnTraits<R> {
  static constexpr bool supported = true;
  static std::vector<SchemaType> types() { return {ArgTraits<R>::type()}; }
};
template <> struct ReturnTraits<std::string> : ReturnTraits<Tensor> {
  static std::vector<SchemaType> types() { return {ArgTraits<std::string>::type()}; }
};
template <> struct ReturnTraits<std::vector<int64_t>> : ReturnTraits<Tensor> {
  static std::vector<SchemaType> types() { return {ArgTraits<IntArrayRef>::type()}; }
};
template <> struct ReturnTraits<std::vector<double>> : ReturnTraits<Tensor> {
  static std::vector<SchemaType> types() { return {ArgTraits<ArrayRef<double>>::type()}; }
};
template <class T>
  requires(ReturnTraits<T>::supported && !std::is_void_v<T>)
struct ReturnTraits<std::optional<T>> {
  static constexpr bool supported = !is_optional_v<T>;
  static std::vector<SchemaType> types() {
    SchemaType type = ReturnTraits<T>::types()[0];
    type.optional = true;
    return {type};
  }
};
template <class... Ts>
  requires((ReturnTraits<Ts>::supported && ...) && (!std::is_void_v<Ts> && ...))
struct ReturnTraits<std::tuple<Ts...>> {
  static constexpr bool supported = true;
  static std::vector<SchemaType> types() {
    std::vector<SchemaType> types;
    (types.push_back(ReturnTraits<Ts>::types()[0]), ...);
    return types;
  }
};
// Kernels return their canonical return type itself: every supported return is a value.
template <class R>
using canonical_return_t = std::remove_cvref_t<R>;
template <class R>
inline constexpr bool return_supported = ReturnTraits<std::remove_cvref_t<R>>::supported;

// IValue -> canonical argument (or return value, for typed calls served by a boxed kernel).
template <class C>
decltype(auto) from_ivalue(const IValue& value) {
  using D = std::remove_cvref_t<C>;
  if constexpr (std::is_same_v<D, Tensor>) return (value.to_tensor());
  else if constexpr (std::is_same_v<D, tensor_list>) return (value.to_tensor_list());
  else if constexpr (std::is_same_v<D, optional_tensor_list>) return (value.to_optional_tensor_list());
  else if constexpr (std::is_same_v<D, int64_t>) return value.to_int();
  else if constexpr (std::is_same_v<D, double>) return value.to_double();
  else if constexpr (std::is_same_v<D, bool>) return value.to_bool();
  else if constexpr (std::is_same_v<D, std::string_view>) return std::string_view(value.to_string());
  else if constexpr (std::is_same_v<D, std::string>) return (value.to_string());
  else if constexpr (std::is_same_v<D, IntArrayRef>) return IntArrayRef(value.to_int_list());
  else if constexpr (std::is_same_v<D, std::vector<int64_t>>) return (value.to_int_list());
  else if constexpr (std::is_same_v<D, ArrayRef<double>>) return ArrayRef<double>(value.to_double_list());
  else if constexpr (std::is_same_v<D, std::vector<double>>) return (value.to_double_list());
  else if constexpr (std::is_same_v<D, std::vector<bool>>) return (value.to_bool_list());
  else if constexpr (std::is_same_v<D, Scalar>) return value.to_scalar();
  else if constexpr (std::is_same_v<D, ScalarType>) return value.to_scalar_type();
  else if constexpr (std::is_same_v<D, Device>) return value.to_device();
  else if constexpr (std::is_same_v<D, Layout>) return value.to_layout();
  else if constexpr (std::is_same_v<D, MemoryFormat>) return value.to_memory_format();
  else {  // std::optional<X>
    using Inner = typename D::value_type;
    if (value.is_none()) return D();
    return D(from_ivalue<Inner>(value));
  }
}

// Canonical results -> the stack, one IValue per schema return.
template <class R>
void push_results(Stack& stack, R&& result) {
  using D = std::remove_cvref_t<R>;
  if constexpr (requires { std::tuple_size<D>::value; }) {
    std::apply([&](auto&&... parts) { (stack.emplace_back(std::forward<decltype(parts)>(parts)), ...); },
               std::forward<R>(result));
  } else {
    stack.emplace_back(std::forward<R>(result));
  }
}

}  // namespace strata::detail
