#pragma once
// Element types, their sizes and names, promotion, and visit_dtype.
#include <cstdint>
#include <ostream>
#include <string_view>
#include <type_traits>

#include <strata/tensor/errors.h>
#include <strata/tensor/half.h>

namespace strata {

// No file format stores these values (the .npy and safetensors tables map names), so the order
// follows API.md and may grow.
enum class ScalarType : int8_t { Bool, UInt8, Int8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64 };
inline constexpr int kNumScalarTypes = 10;

inline constexpr ScalarType kBool = ScalarType::Bool;
inline constexpr ScalarType kUInt8 = ScalarType::UInt8;
inline constexpr ScalarType kInt8 = ScalarType::Int8;
inline constexpr ScalarType kInt16 = ScalarType::Int16;
inline constexpr ScalarType kInt32 = ScalarType::Int32;
inline constexpr ScalarType kInt64 = ScalarType::Int64;
inline constexpr ScalarType kFloat16 = ScalarType::Float16;
inline constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
inline constexpr ScalarType kFloat32 = ScalarType::Float32;
inline constexpr ScalarType kFloat64 = ScalarType::Float64;
// PyTorch's aliases.
inline constexpr ScalarType kByte = kUInt8, kChar = kInt8, kShort = kInt16, kInt = kInt32, kLong = kInt64, kHalf = kFloat16,
                            kFloat = kFloat32, kDouble = kFloat64;

namespace detail { inline constexpr int64_t kElementSizes[kNumScalarTypes] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8}; }
inline constexpr int64_t element_size(ScalarType type) {  // one load: a local table was rebuilt on the stack per call
  return detail::kElementSizes[static_cast<int>(type)];
}

// "Float32" style names (as in strata's printing and errors).
std::string_view scalar_type_name(ScalarType type);
std::ostream& operator<<(std::ostream& out, ScalarType type);

inline constexpr bool is_floating_point(ScalarType type) {
  return type == kFloat16 || type == kBFloat16 || type == kFloat32 || type == kFloat64;
}
inline constexpr bool is_integral(ScalarType type, bool include_bool = false) {
  return type == kUInt8 || type == kInt8 || type == kInt16 || type == kInt32 || type == kInt64 ||
         (include_bool && type == kBool);
}

// The dtype of floating tensors made without one (literals, empty, rand...): kFloat32 unless
// set_default_dtype chose another floating dtype (process-wide, as torch.set_default_dtype).
ScalarType get_default_dtype();
// Throws TypeError for a dtype that is not floating point.
void set_default_dtype(ScalarType dtype);

// torch.promote_types for two dtypes.
ScalarType promote_types(ScalarType a, ScalarType b);

template <class T>
struct CppTypeToScalarType;
template <> struct CppTypeToScalarType<bool> { static constexpr ScalarType value = kBool; };
template <> struct CppTypeToScalarType<uint8_t> { static constexpr ScalarType value = kUInt8; };
template <> struct CppTypeToScalarType<int8_t> { static constexpr ScalarType value = kInt8; };
template <> struct CppTypeToScalarType<int16_t> { static constexpr ScalarType value = kInt16; };
template <> struct CppTypeToScalarType<int32_t> { static constexpr ScalarType value = kInt32; };
template <> struct CppTypeToScalarType<int64_t> { static constexpr ScalarType value = kInt64; };
template <> struct CppTypeToScalarType<Half> { static constexpr ScalarType value = kFloat16; };
template <> struct CppTypeToScalarType<BFloat16> { static constexpr ScalarType value = kBFloat16; };
template <> struct CppTypeToScalarType<float> { static constexpr ScalarType value = kFloat32; };
template <> struct CppTypeToScalarType<double> { static constexpr ScalarType value = kFloat64; };

template <class T>
inline constexpr ScalarType scalar_type_of = CppTypeToScalarType<std::remove_cv_t<T>>::value;

// Calls fn.template operator()<T>() with T the C++ type of `type`:
//   visit_dtype(t.dtype(), [&]<class T>() { ... });
template <class Fn>
decltype(auto) visit_dtype(ScalarType type, Fn&& fn) {
  switch (type) {
    case kBool: return fn.template operator()<bool>();
    case kUInt8: return fn.template operator()<uint8_t>();
    case kInt8: return fn.template operator()<int8_t>();
    case kInt16: return fn.template operator()<int16_t>();
    case kInt32: return fn.template operator()<int32_t>();
    case kInt64: return fn.template operator()<int64_t>();
    case kFloat16: return fn.template operator()<Half>();
    case kBFloat16: return fn.template operator()<BFloat16>();
    case kFloat32: return fn.template operator()<float>();
    case kFloat64: return fn.template operator()<double>();
  }
  detail::throw_error<TypeError>("[visit_dtype] unknown dtype ", static_cast<int>(type));
}

// The type arithmetic runs in: float for the 16-bit floats, the type itself otherwise.
template <class T>
using compute_type_t = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

}  // namespace strata
