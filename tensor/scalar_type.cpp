// ScalarType names and torch.promote_types.
#include <strata/tensor/scalar_type.h>

namespace strata {

std::string_view scalar_type_name(ScalarType type) {
  switch (type) {
    case kBool: return "Bool";
    case kUInt8: return "UInt8";
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
// Note [Promotion lattice]
// For the eight dtypes strata has, torch.promote_types is a chain
//   bool < uint8 < int32 < int64 < {float16, bfloat16} < float32 < float64
// where the larger rank wins, except that float16 and bfloat16 share a rank and meet at
// float32 (neither holds the other's values). Integer ranks never meet a wider unsigned type,
// since uint8 is the only unsigned one and every signed type here holds it.
int promotion_rank(ScalarType type) {
  switch (type) {
    case kBool: return 0;
    case kUInt8: return 1;
    case kInt32: return 2;
    case kInt64: return 3;
    case kFloat16:
    case kBFloat16: return 4;
    case kFloat32: return 5;
    case kFloat64: return 6;
  }
  detail::throw_error<TypeError>("[promote_types] unknown dtype ", static_cast<int>(type));
}
}  // namespace

// See Note [Promotion lattice].
ScalarType promote_types(ScalarType a, ScalarType b) {
  if (a == b) return a;
  int rank_a = promotion_rank(a);
  int rank_b = promotion_rank(b);
  if (rank_a == rank_b) return kFloat32;  // float16 with bfloat16
  return rank_a > rank_b ? a : b;
}

}  // namespace strata
