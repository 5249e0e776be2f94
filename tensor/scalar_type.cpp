// ScalarType names and torch.promote_types.
#include <strata/tensor/scalar_type.h>

#include <atomic>

namespace strata {

std::string_view scalar_type_name(ScalarType type) {
  switch (type) {
    case kBool: return "Bool";
    case kUInt8: return "UInt8";
    case kInt8: return "Int8";
    case kInt16: return "Int16";
    case kInt32: return "Int32";
    case kInt64: return "Int64";
    case kFloat16: return "Float16";
    case kBFloat16: return "BFloat16";
    case kFloat32: return "Float32";
    case kFloat64: return "Float64";
  }
  return "UnknownScalarType";
}

std::ostream& operator<<(std::ostream& out, ScalarType type) { return out << scalar_type_name(type); }

namespace {
std::atomic<ScalarType> default_dtype{kFloat32};
}  // namespace

ScalarType get_default_dtype() { return default_dtype.load(std::memory_order_relaxed); }

void set_default_dtype(ScalarType dtype) {
  STRATA_CHECK_TYPE(is_floating_point(dtype), "[set_default_dtype] only floating point dtypes can be the default, got ",
                    dtype);
  default_dtype.store(dtype, std::memory_order_relaxed);
}

namespace {
// Note [Promotion lattice]
// torch.promote_types for strata's dtypes. Among signed integers and floats it is a chain
//   bool < int8 < int16 < int32 < int64 < {float16, bfloat16} < float32 < float64
// where the larger rank wins, with two exceptions, both from PyTorch's table:
//  - float16 and bfloat16 share a rank and meet at float32 (neither holds the other's values);
//  - uint8 with int8 gives int16, the smallest type holding both ranges; uint8 with any wider
//    signed integer gives that integer, and uint8 with bool gives uint8.
int promotion_rank(ScalarType type) {
  switch (type) {
    case kBool: return 0;
    case kUInt8:
    case kInt8: return 1;
    case kInt16: return 2;
    case kInt32: return 3;
    case kInt64: return 4;
    case kFloat16:
    case kBFloat16: return 5;
    case kFloat32: return 6;
    case kFloat64: return 7;
  }
  detail::throw_error<TypeError>("[promote_types] unknown dtype ", static_cast<int>(type));
}
}  // namespace

// See Note [Promotion lattice].
ScalarType promote_types(ScalarType a, ScalarType b) {
  if (a == b) return a;
  int rank_a = promotion_rank(a);
  int rank_b = promotion_rank(b);
  if (rank_a == rank_b) return rank_a == promotion_rank(kUInt8) ? kInt16 : kFloat32;  // u8+i8, f16+bf16
  return rank_a > rank_b ? a : b;
}

}  // namespace strata
