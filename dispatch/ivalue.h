#pragma once
// IValue: one boxed value on the dispatcher's Stack (arguments in, results out).
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include <strata/tensor/tensor.h>

namespace strata {

// The C++ type of "Tensor?[]": a list whose entries may be None (e.g. index's indices).
using optional_tensor_list = std::vector<std::optional<Tensor>>;

class IValue {
 public:
  // The order matches value_'s alternatives.
  enum class Kind : uint8_t {
    None, Tensor, Double, Int, Bool, String, Scalar, ScalarType, Device, TensorList, IntList,
    DoubleList, BoolList, OptionalTensorList, Tuple
  };

  IValue() = default;
  IValue(std::nullopt_t) {}                                         // NOLINT
  IValue(Tensor value) : value_(std::move(value)) {}                // NOLINT
  IValue(double value) : value_(value) {}                           // NOLINT
  IValue(float value) : value_(static_cast<double>(value)) {}       // NOLINT
  template <class T>
    requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
  IValue(T value) : value_(static_cast<int64_t>(value)) {}          // NOLINT
  template <class T>
    requires std::is_same_v<T, bool>
  IValue(T value) : value_(value) {}                                // NOLINT: only from bool itself
  IValue(std::string value) : value_(std::move(value)) {}           // NOLINT
  IValue(std::string_view value) : value_(std::string(value)) {}    // NOLINT
  IValue(const char* value) : value_(std::string(value)) {}         // NOLINT
  IValue(Scalar value) : value_(value) {}                           // NOLINT
  IValue(ScalarType value) : value_(value) {}                       // NOLINT
  IValue(Device value) : value_(value) {}                           // NOLINT
  IValue(DeviceType value) : value_(Device(value)) {}               // NOLINT
  // Layout and MemoryFormat box as ints, with PyTorch's numbering (kStrided is 0).
  IValue(Layout value) : value_(static_cast<int64_t>(value)) {}       // NOLINT
  IValue(MemoryFormat value) : value_(static_cast<int64_t>(value)) {} // NOLINT
  IValue(tensor_list value) : value_(std::move(value)) {}           // NOLINT
  IValue(std::vector<int64_t> value) : value_(std::move(value)) {}  // NOLINT
  IValue(IntArrayRef value) : value_(value.vec()) {}                // NOLINT
  // The list kinds below take exactly their type (no braced lists: {1, 2} stays an int list).
  template <class T>
    requires std::is_same_v<T, std::vector<double>>
  IValue(T value) : value_(std::move(value)) {}                     // NOLINT
  template <class T>
    requires std::is_same_v<T, ArrayRef<double>>
  IValue(T value) : value_(value.vec()) {}                          // NOLINT
  template <class T>
    requires std::is_same_v<T, std::vector<bool>>
  IValue(T value) : value_(std::move(value)) {}                     // NOLINT
  template <class T>
    requires std::is_same_v<T, optional_tensor_list>
  IValue(T value) : value_(std::move(value)) {}                     // NOLINT
  // A tuple of results of mixed kinds, e.g. (Tensor, Tensor, int); see call().
  static IValue tuple(std::vector<IValue> elements);
  template <class T>
  IValue(const std::optional<T>& value) {                           // NOLINT
    if (value) *this = IValue(*value);
  }

  Kind kind() const { return static_cast<Kind>(value_.index()); }
  std::string_view kind_name() const;
  bool is_none() const { return kind() == Kind::None; }
  bool is_tensor() const { return kind() == Kind::Tensor; }
  bool is_double() const { return kind() == Kind::Double; }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_string() const { return kind() == Kind::String; }
  bool is_scalar() const { return kind() == Kind::Scalar; }
  bool is_scalar_type() const { return kind() == Kind::ScalarType; }
  bool is_device() const { return kind() == Kind::Device; }
  bool is_tensor_list() const { return kind() == Kind::TensorList; }
  bool is_int_list() const { return kind() == Kind::IntList; }
  bool is_double_list() const { return kind() == Kind::DoubleList; }
  bool is_bool_list() const { return kind() == Kind::BoolList; }
  bool is_optional_tensor_list() const { return kind() == Kind::OptionalTensorList; }
  bool is_tuple() const { return kind() == Kind::Tuple; }
  // A number of any kind: double, int, bool or Scalar.
  bool is_number() const { return is_double() || is_int() || is_bool() || is_scalar(); }

  // Each throws TypeError when the value is of another kind. Numbers convert between
  // themselves where no information is lost in kind (int -> double, bool -> Scalar).
  const Tensor& to_tensor() const;
  double to_double() const;
  int64_t to_int() const;
  bool to_bool() const;
  const std::string& to_string() const;
  Scalar to_scalar() const;
  ScalarType to_scalar_type() const;
  Device to_device() const;
  Layout to_layout() const;              // an int naming a Layout; ValueError when out of range
  MemoryFormat to_memory_format() const;  // an int naming a MemoryFormat; likewise
  const tensor_list& to_tensor_list() const;
  const std::vector<int64_t>& to_int_list() const;
  const std::vector<double>& to_double_list() const;
  const std::vector<bool>& to_bool_list() const;
  const optional_tensor_list& to_optional_tensor_list() const;
  const std::vector<IValue>& to_tuple() const;

  bool operator==(const IValue& other) const;

 private:
  [[noreturn]] void throw_kind(std::string_view wanted) const;

  std::variant<std::monostate, Tensor, double, int64_t, bool, std::string, Scalar, ScalarType, Device, tensor_list,
               std::vector<int64_t>, std::vector<double>, std::vector<bool>, optional_tensor_list,
               std::shared_ptr<const std::vector<IValue>>>
      value_;
};

using Stack = std::vector<IValue>;

std::ostream& operator<<(std::ostream& out, const IValue& value);

}  // namespace strata
