#include <strata/dispatch/ivalue.h>

namespace strata {

std::string_view IValue::kind_name() const {
  switch (kind()) {
    case Kind::None: return "None";
    case Kind::Tensor: return "Tensor";
    case Kind::Double: return "float";
    case Kind::Int: return "int";
    case Kind::Bool: return "bool";
    case Kind::String: return "str";
    case Kind::Scalar: return "Scalar";
    case Kind::ScalarType: return "ScalarType";
    case Kind::Device: return "Device";
    case Kind::TensorList: return "Tensor[]";
    case Kind::IntList: return "int[]";
    case Kind::DoubleList: return "float[]";
    case Kind::BoolList: return "bool[]";
    case Kind::OptionalTensorList: return "Tensor?[]";
    case Kind::Tuple: return "tuple";
  }
  return "unknown";
}

void IValue::throw_kind(std::string_view wanted) const {
  detail::throw_error<TypeError>("[IValue] expected ", wanted, " but the value is ", kind_name());
}

const Tensor& IValue::to_tensor() const {
  if (!is_tensor()) throw_kind("Tensor");
  return std::get<Tensor>(value_);
}
double IValue::to_double() const {
  if (is_double()) return std::get<double>(value_);
  if (is_int()) return static_cast<double>(std::get<int64_t>(value_));
  if (is_scalar()) return std::get<Scalar>(value_).to_double();
  throw_kind("float");
}
int64_t IValue::to_int() const {
  if (is_int()) return std::get<int64_t>(value_);
  if (is_scalar() && std::get<Scalar>(value_).is_integral()) return std::get<Scalar>(value_).to_long();
  throw_kind("int");
}
bool IValue::to_bool() const {
  if (is_bool()) return std::get<bool>(value_);
  if (is_scalar() && std::get<Scalar>(value_).is_bool()) return std::get<Scalar>(value_).to_bool();
  throw_kind("bool");
}
const std::string& IValue::to_string() const {
  if (!is_string()) throw_kind("str");
  return std::get<std::string>(value_);
}
Scalar IValue::to_scalar() const {
  switch (kind()) {
    case Kind::Scalar: return std::get<Scalar>(value_);
    case Kind::Double: return Scalar(std::get<double>(value_));
    case Kind::Int: return Scalar(std::get<int64_t>(value_));
    case Kind::Bool: return Scalar(std::get<bool>(value_));
    default: throw_kind("Scalar");
  }
}
ScalarType IValue::to_scalar_type() const {
  if (!is_scalar_type()) throw_kind("ScalarType");
  return std::get<ScalarType>(value_);
}
Device IValue::to_device() const {
  if (!is_device()) throw_kind("Device");
  return std::get<Device>(value_);
}
Layout IValue::to_layout() const {
  if (!is_int()) throw_kind("Layout");
  const int64_t value = std::get<int64_t>(value_);
  STRATA_CHECK_VALUE(value >= 0 && value < kNumLayouts, "expected a Layout, got ", value);
  return static_cast<Layout>(value);
}
MemoryFormat IValue::to_memory_format() const {
  if (!is_int()) throw_kind("MemoryFormat");
  const int64_t value = std::get<int64_t>(value_);
  STRATA_CHECK_VALUE(value >= 0 && value < kNumMemoryFormats, "expected a MemoryFormat, got ", value);
  return static_cast<MemoryFormat>(value);
}
const tensor_list& IValue::to_tensor_list() const {
  if (!is_tensor_list()) throw_kind("Tensor[]");
  return std::get<tensor_list>(value_);
}
const std::vector<int64_t>& IValue::to_int_list() const {
  if (!is_int_list()) throw_kind("int[]");
  return std::get<std::vector<int64_t>>(value_);
}

const std::vector<double>& IValue::to_double_list() const {
  if (!is_double_list()) throw_kind("float[]");
  return std::get<std::vector<double>>(value_);
}
const std::vector<bool>& IValue::to_bool_list() const {
  if (!is_bool_list()) throw_kind("bool[]");
  return std::get<std::vector<bool>>(value_);
}
const optional_tensor_list& IValue::to_optional_tensor_list() const {
  if (!is_optional_tensor_list()) throw_kind("Tensor?[]");
  return std::get<optional_tensor_list>(value_);
}
const std::vector<IValue>& IValue::to_tuple() const {
  if (!is_tuple()) throw_kind("tuple");
  return *std::get<std::shared_ptr<const std::vector<IValue>>>(value_);
}
IValue IValue::tuple(std::vector<IValue> elements) {
  IValue result;
  result.value_ = std::make_shared<const std::vector<IValue>>(std::move(elements));
  return result;
}

namespace {
bool same_optional_tensors(const optional_tensor_list& a, const optional_tensor_list& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].has_value() != b[i].has_value()) return false;
    if (a[i] && !a[i]->is_same(*b[i])) return false;
  }
  return true;
}
}  // namespace

bool IValue::operator==(const IValue& other) const {
  if (kind() != other.kind()) return false;
  switch (kind()) {
    case Kind::Tensor: return to_tensor().is_same(other.to_tensor());
    case Kind::TensorList: {
      const auto& a = to_tensor_list();
      const auto& b = other.to_tensor_list();
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i)
        if (!a[i].is_same(b[i])) return false;
      return true;
    }
    case Kind::OptionalTensorList: return same_optional_tensors(to_optional_tensor_list(), other.to_optional_tensor_list());
    case Kind::Tuple: return to_tuple() == other.to_tuple();
    default:
      return std::visit(
          [&](const auto& mine) -> bool {
            using A = std::decay_t<decltype(mine)>;
            if constexpr (std::is_same_v<A, Tensor> || std::is_same_v<A, tensor_list> ||
                          std::is_same_v<A, optional_tensor_list> ||
                          std::is_same_v<A, std::shared_ptr<const std::vector<IValue>>>)
              return false;
            else return mine == std::get<A>(other.value_);
          },
          value_);
  }
}

namespace {
template <class List, class Print>
std::ostream& print_list(std::ostream& out, const List& list, Print print) {
  out << "[";
  for (size_t i = 0; i < list.size(); ++i) {
    if (i) out << ", ";
    print(list[i]);
  }
  return out << "]";
}
}  // namespace

std::ostream& operator<<(std::ostream& out, const IValue& value) {
  switch (value.kind()) {
    case IValue::Kind::None: return out << "None";
    case IValue::Kind::Tensor: return out << value.to_tensor();
    case IValue::Kind::Double: return out << value.to_double();
    case IValue::Kind::Int: return out << value.to_int();
    case IValue::Kind::Bool: return out << (value.to_bool() ? "True" : "False");
    case IValue::Kind::String: return out << '\'' << value.to_string() << '\'';
    case IValue::Kind::Scalar: return out << value.to_scalar();
    case IValue::Kind::ScalarType: return out << value.to_scalar_type();
    case IValue::Kind::Device: return out << value.to_device();
    case IValue::Kind::TensorList: return out << "[" << value.to_tensor_list().size() << " tensors]";
    case IValue::Kind::IntList: return out << IntArrayRef(value.to_int_list());
    case IValue::Kind::DoubleList: return print_list(out, value.to_double_list(), [&](double v) { out << v; });
    case IValue::Kind::BoolList:
      return print_list(out, value.to_bool_list(), [&](bool v) { out << (v ? "True" : "False"); });
    case IValue::Kind::OptionalTensorList:
      return print_list(out, value.to_optional_tensor_list(), [&](const std::optional<Tensor>& t) {
        if (t) out << "Tensor" << IntArrayRef(t->sizes());
        else out << "None";
      });
    case IValue::Kind::Tuple: {
      out << "(";
      const auto& elements = value.to_tuple();
      for (size_t i = 0; i < elements.size(); ++i) out << (i ? ", " : "") << elements[i];
      return out << (elements.size() == 1 ? ",)" : ")");
    }
  }
  return out;
}

}  // namespace strata
